"""The Estimator accuracy page's parts."""
