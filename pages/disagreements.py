"""Disagreement finder: where two estimators credit the same steps most differently.

Both sides are compared on the step credit A_S, which every estimator normalises per anchor, so
the two share a scale. Each ranked anchor or step is one click away from the Inspector.
"""

from __future__ import annotations

import streamlit as st

from crbc.estimators import registry as estimators
from crbc.explain import disagreements as compare
from crbc.explain.table_rows import fmt
from crbc.viz.core.html import grid_row
from crbc.viz.disagreement import disagreement_bars_html, grouped_steps
from crbc.viz.lesson import format_rows
from ui.core import report_download, state, url, widgets
from ui.core.params import values as param_values
from ui.core.widgets import short, text

SCOPES = ("this group", "all groups of the file")  # shown as they are: URL-bound
TOP = 12
SHARED_URL_KEYS = ("source", "sample", "group")  # sidebar widget keys
NUMBER_KEYS = ("beta", "depth", "sigma_min")  # the shared parameters that decide the numbers


def _inspect_link(group_id: str, label: str) -> dict[str, str]:
    """Query parameters that open ``label`` (of ``group_id``) in the Inspector: the shared view of
    the current URL (source, sample, parameters) plus the Inspector's own URL-bound choices, so the
    resulting address can be shared as it is."""
    ss = st.session_state
    qp = {k: v for k, v in st.query_params.to_dict().items() if not k.startswith(("dis_", "inspect"))}
    # the shared view can be missing from st.query_params right after a page change: take the
    # values that decide the numbers from the session (defaults are dropped from the URL again)
    qp.update({k: str(ss[k]) for k in SHARED_URL_KEYS if ss.get(k) is not None})
    numbers = param_values()
    qp.update({k: str(numbers[k]) for k in NUMBER_KEYS})
    cmp_name = st.session_state["dis_cmp"]  # the Inspector ranks by estimator pairs only
    qp.update(inspect=label, **({"inspect_sort": "disagreement", "inspect_cmp": cmp_name}
                                if cmp_name in compare.COMPARISONS else {}))
    if group_id != ctx.group.group:
        qp["group"] = group_id
    return qp


st.title("Disagreements")
st.caption("Where do two estimators disagree most about which steps deserve credit? Anchors and steps "
           "are ranked by |Δ A_S|, the difference of their step credits (each estimator normalises "
           "A_S per anchor, so both sides share a scale). **Inspect** opens the anchor's arithmetic.")

ctx = state.page_context()
grp, groups, params = ctx.group, ctx.groups, ctx.params
ss = st.session_state
# the trainer's own advantage (a recorded or imported run) is a side against every estimator
has_trainer = ctx.file_trainer_N() is not None
comparisons = compare.comparison_names(estimators.names(), has_trainer)  # "trainer vs crbc" first on a recorded run
url.check_choice("dis_cmp", comparisons,
                 "no such comparison" + ("" if has_trainer else " (this source records no trainer advantage)"))
url.check_choice("dis_scope", SCOPES, "the scope is this group or all groups of the file")
for key, options in (("dis_cmp", comparisons), ("dis_scope", SCOPES)):
    if key in ss and ss[key] not in options:
        del ss[key]

c1, c2 = st.columns([2, 2])
cmp_name = c1.selectbox("Compare", comparisons, key="dis_cmp", bind="query-params",
                        help="trainer vs NAME: the advantage your trainer gave each step against NAME's "
                             "A_final (recorded or imported runs only).")
scope = c2.segmented_control("Scope", SCOPES, key="dis_scope", required=True, default=SCOPES[0],
                             bind="query-params", disabled=len(groups) < 2)
shared = {"beta": params["beta"], "sigma_min": params["sigma_min"], "depth": params["depth"]}
if scope == SCOPES[1] and len(groups) > 1:
    dis = ctx.file_disagreement(cmp_name, shared)
    where = f"all {len(groups)} groups of {text(ctx.source.label)}"
else:
    dis = ctx.disagreement(cmp_name, shared)
    where = f"group {text(grp.group)}"
cmp_ = dis.comparison
vn = cmp_.value_name  # what is compared: A_S, or A (the trainer's advantage against an A_final)
multi = scope == SCOPES[1] and len(groups) > 1
st.markdown(f"**{cmp_.x_label}** against **{cmp_.y_label}** on {where}.")

st.html(disagreement_bars_html(dis, top=15))  # HTML: this page loads no plotly.js
report_download.group_button(ctx, "dl_report_dis")


def _row_links(rows, cols_spec, cells, bold: tuple[int, ...], limits: list[int] | int = 80) -> None:
    """Ranked rows, each with an Inspect link in its last column: the text cells of a row are one
    HTML grid (escaped text, laid out like ``cols_spec`` without its last entry), so a page of 24
    rows is 48 elements for the browser, not 200 Markdown cells."""
    split, widths = [sum(cols_spec[:-1]), cols_spec[-1]], cols_spec[:-1]
    st.columns(split)[0].html(grid_row([name for name, _ in cells], widths, header=True))
    for r in rows:
        left, link = st.columns(split, vertical_alignment="center")
        left.html(grid_row([fn(r) for _, fn in cells], widths, bold=bold, limit=limits))
        # typed rows (crbc.explain.disagreements) or the grouped steps' display dicts (grouped_steps)
        group, anchor = (r["group"], r["anchor"]) if isinstance(r, dict) else (r.group, r.anchor)
        link.page_link("pages/inspector.py", label="Inspect", icon=":material/search:",
                       query_params=_inspect_link(group, anchor),
                       help=f"Open {short(anchor, 80)} in the Inspector")


st.subheader("Anchors, most disagreement first")
xl, yl = cmp_.x_label, cmp_.y_label
anchor_cells = ([("group", lambda r: r.group)] if multi else []) + [
    ("anchor", lambda r: r.anchor),
    ("visits", lambda r: str(r.visits)),
    ("actions", lambda r: str(r.actions)),
    ("mean |Δ|", lambda r: fmt(r.disagreement, 3)),
    (f"best by {xl}", lambda r: r.best_x),
    (f"best by {yl}", lambda r: r.best_y + (" ⚠" if r.ranks_differ else "")),
]
spec = ([2] if multi else []) + [1, 1, 1, 1, 1.4, 1.4, 1.2]
_row_links(dis.anchors[:TOP], spec, anchor_cells, bold=(int(multi),))
st.caption("⚠: the two estimators prefer a different action at this anchor (or one sees a tie).")
if len(dis.anchors) > TOP:
    box, is_open = widgets.folded(f"All {len(dis.anchors)} anchors", key="dis_all_anchors")
    if is_open:
        with box:
            widgets.rows_view(format_rows(dis.anchors))

st.subheader("Steps, most disagreement first")
st.caption("Steps that share an anchor and an action are one row: `steps` counts them, `where` "
           "lists them (rollout·step, steps numbered from 0 as in the files); "
           + ("A_S is their mean under each estimator." if vn == "A_S" else
              "A is their mean: the trainer's advantage, and the estimator's A_final."))
grouped = grouped_steps(dis.steps, xl, yl, vn)
step_cells = ([("group", lambda r: r["group"])] if multi else []) + [
    ("anchor", lambda r: r["anchor"]),
    ("action", lambda r: r["action"]),
    ("steps", lambda r: str(r["steps"])),
    ("where", lambda r: r["where"]),
    (f"{vn} {xl}", lambda r: fmt(r[f"{vn} {xl}"], 3, True)),
    (f"{vn} {yl}", lambda r: fmt(r[f"{vn} {yl}"], 3, True)),
    ("max |Δ|", lambda r: fmt(r["max |Δ|"], 3)),
]
spec = ([2] if multi else []) + [1, 1, 0.6, 2, 1.2, 1.2, 1, 1.1]
_row_links(grouped[:TOP], spec, step_cells, bold=(int(multi),),
           limits=[300 if name == "where" else 80 for name, _ in step_cells])  # "where" in full

box, is_open = widgets.folded(f"Per (anchor, action): mean A_S under each estimator ({len(dis.pairs)} pairs)",
                              key="dis_all_pairs")
if is_open:
    with box:
        widgets.rows_view(format_rows(dis.pairs))
