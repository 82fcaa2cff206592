""""Download this view as a report": the file ``python -m crbc report`` writes, for what the page
shows (its group and sidebar parameters, or its run), built only when the button is clicked.

``st.download_button`` with a callable defers the work to the click (Streamlit runs it when the
file is requested), so a page that shows the button pays nothing for it on every rerun.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from ui.core.state import ROOT, PageContext

HELP = ("One self-contained HTML file (no server, nothing loaded from any host): the anchor graph, "
        "every estimator's step credits (and the truth where it exists), the backups with a K slider "
        "and where the estimators disagree, for this group and these parameters. Built when you click "
        "(a few seconds; longer when the exact truth needs the model).")


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)[:80] or "report"


def run_group_args(ctx: PageContext) -> tuple[Path, dict] | None:
    """When the page's group is an iteration of a run folder: the arguments of
    :func:`crbc.report.report` that ``crbc report RUN --group G --iteration I [--anchor REGEX]
    [--anchor-similarity TAU] [--beta ... --sigma-min ... --depth ...]`` passes it (crbc/cli/
    report.py), so the download is that file byte for byte; None for any other source."""
    from ui.core import anchor_key, run_source

    view = run_source.run_view()
    if view is None or view.folder is None or view.iter_key not in st.session_state:
        return None
    regex = str(st.session_state.get(anchor_key.KEY) or "").strip()
    params = {k: ctx.params.get(k) for k in ("beta", "sigma_min", "depth")}  # the CLI's three
    return view.folder, {"group": ctx.group.group, "iteration": int(st.session_state[view.iter_key]),
                         "estimators": None, "params": params, "truth": True, "anchor": regex or None,
                         "anchor_similarity": anchor_key.similarity()}


def group_file(ctx: PageContext) -> bytes:
    """The report of the page's group with the sidebar's parameters: the same bytes as
    ``python -m crbc report FILE --group ID`` with the same parameters (for a run folder's
    iteration, the same call: :func:`run_group_args`)."""
    from crbc.report import group_report, report

    if (run := run_group_args(ctx)) is not None:
        folder, kwargs = run
        return report(folder, **kwargs).encode("utf-8")

    def truth(group, anchors, beta):
        """The studio's cached truth (the same solve the report would make: a page that showed
        it already pays nothing more)."""
        from ui.core import exact_truth

        got, why = exact_truth.truth_of(ctx, beta)
        if got is None:
            raise ValueError(why.removeprefix("No exact truth for this group:").strip())
        return got

    from crbc.doctor import diagnose, from_groups
    from ui.core import anchor_key

    key = anchor_key.used(ctx.source, st.session_state.get(anchor_key.KEY) or "")
    return group_report(ctx.group, params=dict(ctx.params), truth=truth, policy_root=str(ROOT),
                        source=ctx.source.label.removeprefix("sample "), key=key,
                        findings=diagnose(from_groups(list(ctx.groups)))).encode("utf-8")


def group_button(ctx: PageContext, key: str, container=None) -> None:
    """The download button of the page's group (see the module docstring)."""
    (container or st).download_button(
        "Download this view as a report", lambda: group_file(ctx),
        file_name=f"{_slug(ctx.group.group)}.report.html", mime="text/html", on_click="ignore",
        key=key, icon=":material/description:", help=HELP)


def run_button(run_dir: str | Path, name: str, iteration: int | None, key: str, container=None,
               anchor: str = "") -> None:
    """The download button of a run folder's report (its audit curves and the groups worth a
    look of ``iteration``), its anchors keyed by ``anchor`` (the sidebar's key; "": the run's
    recorded key, else the exact text), as ``crbc report RUN --anchor`` keys them."""
    from crbc.report import run_report

    (container or st).download_button(
        "Download this run as a report",
        lambda: run_report(run_dir, iteration=iteration, anchor=anchor or None).encode("utf-8"),
        file_name=f"{_slug(name)}.report.html", mime="text/html", on_click="ignore", key=key,
        icon=":material/description:",
        help="One self-contained HTML file: the audit's curves over the iterations (the audit file "
             "beside the run, or a summary computed from its files) and the groups worth a look of "
             "the chosen iteration, each in its own section. Built when you click.")
