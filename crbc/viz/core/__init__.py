"""Drawing primitives every view shares: colours, scales, text, SVG and HTML writers, the chart core.

Nothing here knows a page or computes an estimate; a view module (``crbc/viz/<view>.py``)
composes these into one figure.
"""
