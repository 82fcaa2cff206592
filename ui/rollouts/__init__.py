"""The Rollouts page's parts."""
