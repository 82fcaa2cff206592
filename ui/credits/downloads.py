"""The Step credits page's downloads: this group's credits (crbc.credit/1 JSONL with intervals, one
CSV of every estimator: :func:`crbc.viz.downloads.credit_table`), its heatmap and timeline as SVG,
and the same tables over every group of the source."""

from __future__ import annotations

import streamlit as st

from crbc.estimators import registry as estimators
from crbc.viz.core.credits import FIELDS
from crbc.viz.downloads import credit_table, credits_jsonl
from crbc.viz.heatmap import credit_heatmaps_svg
from ui.core import report_download
from ui.core.context import PageContext


def render(ctx: PageContext, all_c: dict, field: str, shown: list[str], extra: dict, timeline: str) -> None:
    """The download section. ``all_c``: estimator -> Credits on the chosen group; ``field``: the
    field the heatmaps show; ``shown``: the estimators that have it; ``extra``: the trainer's row
    ({"trainer": (N,)} or {}); ``timeline``: the timeline SVG as drawn."""
    names = estimators.names()
    trainer_N = ctx.trainer_N
    slug = ctx.group.group.replace("/", "_")

    def _all_intervals() -> dict:
        return {n: ci for n in names if (ci := ctx.intervals(n)) is not None}

    st.subheader("Download")
    report_download.group_button(ctx, "dl_report_credits")
    d1, d2, d3 = st.columns(3)
    est = d1.selectbox("Estimator to export", names, index=names.index(ctx.estimator),
                       key="export_est")
    d2.download_button(f"{est} credits · crbc.credit/1 JSONL (with intervals)",
                       lambda: credits_jsonl(all_c[est], _all_intervals().get(est)),
                       file_name=f"{slug}.{est}.credits.jsonl", mime="application/jsonl",
                       on_click="ignore", key="dl_jsonl", icon=":material/download:", width="stretch")
    d3.download_button("All estimators · CSV (one row per step)",
                       lambda: credit_table(all_c, _all_intervals(),
                                                    trainer_N).to_csv(index=False),
                       file_name=f"{slug}.credits.csv", mime="text/csv", on_click="ignore", key="dl_csv",
                       icon=":material/download:", width="stretch")
    f1, f2 = st.columns(2)
    f1.download_button(f"{est} heatmap · SVG",
                       lambda: credit_heatmaps_svg({est: all_c[est]}, field, standalone=True, extra=extra),
                       file_name=f"{slug}.{est}.heatmap.svg", mime="image/svg+xml", on_click="ignore",
                       key="dl_heat", icon=":material/image:", width="stretch", disabled=est not in shown,
                       help=None if est in shown else f"{est} has no {FIELDS[field]}")
    f2.download_button("Timeline · SVG", lambda: timeline.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1),
                       file_name=f"{slug}.timeline.svg", mime="image/svg+xml", on_click="ignore",
                       key="dl_timeline", icon=":material/image:", width="stretch")
    if len(ctx.groups) > 1:
        st.markdown(f"**The whole file** ({len(ctx.groups)} groups, every step with its anchor):")
        w1, w2 = st.columns(2)
        w1.download_button(f"{est}, all groups · crbc.credit/1 JSONL (with intervals)",
                           lambda: credits_jsonl(ctx.file_credits(est), ctx.file_intervals(est)),
                           file_name=f"all-groups.{est}.credits.jsonl", mime="application/jsonl",
                           on_click="ignore", key="dl_file_jsonl", icon=":material/download:", width="stretch")
        w2.download_button("All estimators, all groups · CSV (one row per step)",
                           lambda: credit_table({n: ctx.file_credits(n) for n in names},
                                                        {n: ci for n in names if (ci := ctx.file_intervals(n)) is not None},
                                                        ctx.file_trainer_N()).to_csv(index=False),
                           file_name="all-groups.credits.csv", mime="text/csv", on_click="ignore",
                           key="dl_file_csv", icon=":material/download:", width="stretch")
    st.caption("The CSV has a row per (estimator, step): steps numbered from 0 as in the files, the "
               "interval and evidence of each credit (the page's resamples, seed 0) and the trainer's own "
               "advantage where the run recorded it; the JSONL is crbc.credit/1 with the intervals. "
               "Every figure downloads as SVG: the *Download SVG* link under each drawing saves it "
               "as shown (the heatmaps with every panel and the evidence marks), the buttons above one "
               "estimator's panel or the timeline.")
