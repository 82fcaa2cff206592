"""The Inspector's "how sure" part: each action's credit at the chosen anchor with its interval
(the calibrated interval at the closure, a resampling range at a finite depth) and evidence."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from crbc.estimators.bootstrap import DEFAULT_B, DEFAULT_LEVEL, pair_table
from crbc.viz.intervals import interval_panels_html
from crbc.viz.reliability import interval_note, load_report
from ui.core import state as app_state
from ui.core import widgets
from ui.core.context import PageContext

CALIBRATION = load_report(app_state.SHIPPED_DIR)  # the measured coverage (sample_rollouts/interval-calibration.json)
NONE_TEXT = ("none: the credit is 0 by construction (one action observed here, or no observed "
             "continuation from here reaches success).")


def render(ctx: PageContext, state: int, depth: int | None) -> None:
    """Error bars on Q and Q - V of each action at anchor ``state`` under crbc at ``depth``
    (None: the closure), with the sidebar's other parameters."""
    ci = ctx.intervals("crbc", {**ctx.estimator_params("crbc"), "depth": depth})
    pairs = pair_table(ci, state)
    kind = "calibrated intervals" if ci.method == "calibrated" else "resampling ranges, not calibrated"
    st.markdown(f"**How sure is each action's credit here** ({DEFAULT_LEVEL:.0%} {kind}, {DEFAULT_B} draws)")
    st.html(interval_panels_html(pairs, DEFAULT_LEVEL))
    widgets.table(pd.DataFrame(pairs).rename(columns={"credit": "Q − V", "lo": "Q − V lo", "hi": "Q − V hi"})
                  .round(4))
    if ci.method == "calibrated":
        st.caption("The interval reaches fitted multiples of the credit's spread to either side of it, "
                   "further on the side away from 0 (the closure tends to shrink credits toward 0): "
                   f"its spread over {DEFAULT_B} posterior draws of this group (every rollout reweighted, "
                   "plus a little mass on a continuation and an action no rollout showed) and an allowance "
                   "for the closure's own bias. " + interval_note(CALIBRATION, DEFAULT_LEVEL)
                   + " sure: the interval excludes 0; " + NONE_TEXT)
    else:
        st.caption("At a finite depth K the interval is a resampling range (this group's rollouts "
                   "drawn with replacement, the central percentile range of the recomputed credit): "
                   "it says how much the credit moves with which rollouts were drawn, not where the "
                   "truth is; its coverage was not measured. sure: the range excludes 0; " + NONE_TEXT)
