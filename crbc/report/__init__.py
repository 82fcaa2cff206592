"""Reports that need no server: one self-contained HTML file of a group or of a run.

:func:`group_report` (a group: its anchor graph, every estimator's step credits with the truth
where it exists, the backups K = 0 .. closure with a slider, the disagreements with their
arithmetic), :func:`run_report` (a ``crbc.run/1`` folder: the audit's curves over iterations
and the groups worth a look, each in its own section) and :func:`report` (either, from a path).
The same file is what the studio's "Download this view as a report" gives.
"""

from __future__ import annotations

from crbc.report.build import group_report, report, run_group_report, run_report

__all__ = ["group_report", "report", "run_group_report", "run_report"]
