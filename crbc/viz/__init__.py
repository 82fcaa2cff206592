"""Pure figure builders for the studio: SVG, tables and HTML strings (no plotting library).

They take computed results (Process, Credits, DepthSweep) and never call ``st.*`` nor compute
estimates. ``style`` fixes the colour language (one V scale everywhere, a diverging credit scale,
sampled by ``palette``), ``graph`` draws the merged process (``graph_html``: a vis-network page,
``graph_svg``: SVG),
``charts`` holds tables, timelines, scatters and the convergence plot, ``heatmap_svg`` the
Step credits heatmaps (server-built SVG).
"""
