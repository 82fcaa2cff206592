"""What every page shares: the context that owns everything kept, the sidebar and its sources, URLs, widgets."""
