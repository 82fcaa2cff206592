"""The Anchor graph page's parts."""
