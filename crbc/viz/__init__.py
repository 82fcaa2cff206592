"""Pure figure builders for the studio: plotly figures, tables and HTML strings.

They take computed results (Process, Credits, DepthSweep) and never call ``st.*`` nor compute
estimates. ``style`` fixes the colour language (one V scale everywhere, a diverging credit scale),
``board`` draws grid anchors, ``graph`` draws the merged process (pyvis offline HTML, plotly),
``charts`` holds tables, timelines, scatters and the convergence plot, ``heatmap_svg`` the
Step credits heatmaps (server-built SVG).
"""
