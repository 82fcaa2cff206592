"""What the studio's pages share: state, URL parameters, the sidebar, routing, widgets, truth.

``pages/`` holds only pages; each starts with ``ctx = state.page_context()`` and renders.
``state`` (data source, chosen group, cached results), ``url`` (shared-link parameters and their
notices, changing page), ``sidebar`` (the data-source sidebar that ``app.py`` draws), ``routing``
(deep links through ``app.py``), ``widgets`` (user strings as text, tables, monospace text), ``truth`` (the
exact truth of a toy group, cached).
"""
