"""The Training runs page's parts."""
