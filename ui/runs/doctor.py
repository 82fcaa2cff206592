"""The advantage doctor on the Training runs page: what :mod:`crbc.doctor` finds in a run, per
iteration, each finding's rows one click from the Inspector.

:func:`iterations` draws the iterations where a check warned or erred, from the counts the run
already carries (the recorder's ``crbc/doctor/<check>`` metrics, which include the trainer's
token checks; :func:`crbc.report.doctor.counts_by_iteration`). :func:`iteration` draws the
findings of one iteration (computed once per run, iteration and anchor key by
:func:`crbc.doctor.examine.diagnose_iteration`: recomputed from the rollouts and joined with what
the recorder counted for that iteration, as ``crbc doctor RUN`` and the report join them; kept in
the session for an upload) and, for the finding chosen, a row of the input (its group, rollout and
step) that opens its group and rollout in another page. :func:`curves` overlays, across the
runs a page compares, the rows each check flagged per iteration
(:mod:`crbc.run_analysis.doctor_curves`), a click on a point opening that run's iteration. Only
rendering here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd
import streamlit as st

from crbc.doctor import Finding
from crbc.io.runs import Run
from crbc.report.doctor import counts_by_iteration
from crbc.run_analysis import doctor_curves as D
from crbc.viz import run_curves as V
from ui.core import state, url, widgets
from ui.core.context import Keyed
from ui.core.run_source import RunView
from ui.core.svg_view import svg_view

ICONS = {"error": ":material/error:", "warning": ":material/warning:", "info": ":material/info:"}


def _diagnosed(view: RunView, iteration: int, regex: str, groups: tuple, metrics: tuple) -> list[Finding] | None:
    """The doctor's findings on one iteration of the run, kept by the run's context (an uploaded
    run's large iteration in the bounded worker: :func:`ui.core.bounded.findings`); None after a
    budget's notice, which is shown."""
    from ui.core import bounded

    out = bounded.findings(Keyed.of(view.key), (iteration, regex), groups, iteration, metrics, regex,
                           label=f"the advantage doctor on iteration {iteration}")
    if isinstance(out, bounded.Refused):
        st.warning(out.message, icon=":material/hourglass_disabled:")
        return None
    return out


def iterations(view: RunView) -> None:
    """The iterations where the recorder's doctor counted rows (nothing when it never did)."""
    counts = counts_by_iteration([{"iteration": i, **m} for i, m in sorted(view.metrics.items())])
    if not counts:
        return
    rows = [{"iteration": it, "checks (rows flagged)": ", ".join(f"{c} ({int(n)})" for c, n in hit.items())}
            for it, hit in sorted(counts.items())]
    st.warning(f"The advantage doctor flagged {len(rows)} of {len(view.iterations)} iterations while the "
               "run was recorded (the trainer's crbc/doctor/... metrics).", icon=":material/stethoscope:")
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="doctor_iterations",
                 height=min(38 + 35 * len(rows), 250))


def iteration(view: RunView, it: int, groups: tuple, regex: str, open_in: list[tuple[str, str, str]]) -> None:
    """The findings of iteration ``it`` and, for the one chosen, its rows one click away."""
    line = view.metrics.get(it)
    found = _diagnosed(view, it, regex, tuple(groups), () if line is None else ({"iteration": it, **line},))
    if found is None:
        return
    serious = [f for f in found if f.serious]
    st.markdown(f"**The advantage doctor on iteration {it}**")
    if not found:
        st.success("Every check is silent on this iteration.", icon=":material/check_circle:")
        return
    if not serious:
        st.caption("No warning and no error; for information:")
    table = pd.DataFrame([{"": ICONS[f.severity].split("/")[1].rstrip(":"), "check": f.check, "rows": f.rows,
                           "share": f.share, "message": f.message} for f in found])
    sel = st.dataframe(table, hide_index=True, on_select="rerun", selection_mode="single-row",
                       key=f"doctor_findings_{it}", column_config={
                           "share": st.column_config.NumberColumn(format="percent")})
    f = found[sel.selection.rows[0] if sel and sel.selection.rows else 0]
    places = {e.row: (e.group, e.rollout, e.step) for e in f.examples if e.group is not None}
    if not places:
        if not f.examples:
            st.caption(f"{f.check}: counted by the recorder while training; its rows are in the trainer's log.")
        return
    c1, *cols = st.columns([3] + [1] * len(open_in), vertical_alignment="bottom")
    row = c1.selectbox(f"Rows of {f.check} ({f.rows} in all; the first {len(places)})", list(places),
                       key=f"doctor_row_{it}_{f.check}",
                       format_func=lambda r: f"row {r}: group {places[r][0][:60]}, rollout {places[r][1]}, "
                                             f"step {places[r][2]}")
    group, rollout, _ = places[row]
    for col, (path, title, icon) in zip(cols, open_in, strict=True):
        if (Path(state.ROOT) / path).exists() and col.button(
                title, icon=icon, key=f"doctor_open_{Path(path).stem}", help=f"Open this row's group in {title}"):
            st.session_state["_crbc_open_request"] = {view.iter_key: it, "group": group, "rollout": rollout}
            url.switch_page(path)


def _check_text(check: str) -> str:
    return "all warning and error checks (summed)" if check == D.ALL else check


def curves(ctx: Keyed, runs: Sequence[Run], *, by: Callable[[Run], str] | None, name: Callable[[Run], str],
           on_pick: Callable[[str], None], key: str, band: str = "minmax", show_runs: bool = True) -> None:
    """The rows the recorder's doctor flagged per iteration in ``runs``, overlaid as the page's
    other curves are (``by`` groups runs into one curve, ``name`` names a run, ``band`` over the
    group's runs; ``ctx`` keys the figure by the runs chosen), for the check chosen; ``on_pick``
    gets a point's ``"iteration|run"``. Runs that never recorded the counts are named in a sentence."""
    missing = D.unrecorded(runs)
    if missing:
        who = ", ".join(widgets.text(name(r)) for r in missing[:8]) + (
            f" and {len(missing) - 8} more" if len(missing) > 8 else "")
        st.caption(("None of these runs" if len(missing) == len(runs) else who + (" never" if len(missing) == 1
                   else ": none of them")) + " recorded the advantage doctor's counts (no crbc/doctor/... "
                   "metrics: not recorded with RunRecorder), so there is no doctor curve of "
                   + ("it." if len(missing) == 1 else "them."))
    recorded = [r for r in runs if not any(r is m for m in missing)]
    if not recorded:
        return
    flagging, silent = ctx.kept("table", (key, "checks"), lambda: D.recorded_checks(recorded))
    checks = [D.ALL, *flagging]
    url.check_choice(f"{key}_check", checks, "no such doctor check in these runs", _check_text)
    url.drop_invalid(f"{key}_check", checks)
    check = st.selectbox("Check", checks, key=f"{key}_check", bind="query-params", format_func=_check_text,
                         help="The rows the recorder's doctor flagged in each iteration's batch "
                              "(crbc/doctor/<check> in metrics.jsonl): every warning and error check "
                              "summed, or one check that flagged rows somewhere.")
    svg = ctx.kept("figure", (key, check, band, show_runs), lambda: V.curves_chart_svg(
        D.doctor_curves(recorded, check, by=by, name=name), D.check_title(check), band=band,
        show_runs=show_runs, percent=False, height=300))
    svg_view(svg, key=f"{key}_curve", on_pick=on_pick, download=f"doctor-{check}")
    st.caption("Rows flagged per iteration while training (the trainer's log names them); click a point to "
               "open that run's iteration." + (f" Silent on every iteration: {', '.join(silent)}." if silent else ""))
