"""Figure builders: computed results in, SVG or HTML text out (no plotting library, no ``st.*``,
no estimate computed).

One axis: ``core/`` holds the primitives every figure shares; every other module is one view.

    core/palette.py      colour scales sampled as plotly sampled them
    core/style.py        the colour language: V scale, credit scale, outcomes, boards
    core/scales.py       symmetric_range (the one), padded_range, nice_ticks, step_ticks
    core/text.py         esc, cut, one_line, fmt_value, missing
    core/svg.py          the chart element, point lists, dash attributes
    core/html.py         html_table, grid_row (static tables), FONT
    core/axes.py         Axis (asked), Frame (fitted: px, py), axes_svg
    core/series.py       Series, Mark and what draws them: bands, lines, points, marks, legend
    core/chart.py        chart_svg (one plot), grid_svg (small multiples)
    core/cells.py        rollouts x steps matrices and bins of steps
    core/graph_layout.py the layered layout of a merged process
    core/credits.py      fields, estimators' labels and colours, outcomes
    anchor_graph.py      the Anchor graph page (vis-network)      graph.py        Inspector / Bellman backups graph
    lesson_graph.py      the Lesson's graph (its control panel)   lesson.py       Lesson tables, LaTeX, depth chart
    heatmap.py           Step credits heatmaps                     step_detail.py  a clicked cell's step
    rollout.py           a rollout's tables, bars and timeline     scatter.py      two estimators per step
    backups.py           convergence, coverage, truth gap          backup_tree.py  one anchor's backup
    intervals.py         an anchor's credit intervals              disagreement.py Disagreements bars and rows
    accuracy.py          estimator accuracy over G                 reliability.py  interval calibration
    run_curves.py        training runs: curves, diagnostics        audit.py        a run's audit panels
    board.py             a board anchor as a table                 downloads.py    Step credits downloads

A new chart: a module here (or a function in the view it belongs to) that builds its series and
calls :func:`crbc.viz.core.chart.chart_svg`; see docs/ARCHITECTURE.md, "Where things go".
"""
