"""The Bellman backups page's parts."""
