"""The Inspector page's parts."""
