"""The Step credits page's parts."""
