"""Estimator accuracy: every estimator scored against the policy's exact advantages as G grows.

The shipped result (``sample_rollouts/accuracy-*.json``, made by ``python -m crbc accuracy``)
opens at once; a small live run uses the sidebar's environment and checkpoint. Scores come from
:mod:`crbc.truth.accuracy`, figures from :mod:`crbc.viz.accuracy`.
"""

from __future__ import annotations

import streamlit as st

from crbc.viz import accuracy as VA
from crbc.viz import similarity as VS
from crbc.viz.reliability import calibration_rows, interval_note, load_report
from ui.accuracy import data
from ui.core import state, url, widgets
from ui.core.svg_view import svg_view

METRICS = {"spearman": "Spearman (rank agreement)", "pearson": "Pearson", "kendall": "Kendall tau-b",
           "sign": "sign agreement (· exact counts, one-sided binomial p)", "rmse": "RMSE (truth's units only)"}
TARGETS = {"step": "per-step truth A_t", "anchor": "anchor-level truth A(s, a)"}


def _show(result: dict, metric: str, target: str, key: str) -> None:
    info, cfg = result.get("info", {}), result.get("config", {})
    levels = info.get("levels", "?")
    rates = info.get("success_rate", {})
    st.caption(f"{levels} levels of `{cfg.get('env')}` (seeds {cfg.get('seeds')}), policy "
               f"`{cfg.get('model')}` at T = {cfg.get('temperature')}, success rate "
               f"{100 * max(rates.values(), default=0):.0f}%. Mean over levels with its 95% "
               "bootstrap interval over levels (the band).")
    c1, c2 = st.columns(2)
    with c1:  # server-built SVG: the page loads no plotly.js
        st.markdown("**Every estimator** (registry defaults)")
        svg_view(VA.accuracy_chart_svg(result, metric, target, "estimators"), key=f"{key}_est",
                 download=f"accuracy_{metric}_{target}")
    with c2:
        st.markdown("**crbc across depth K** (K = 0 is visit-local, inf the closure)")
        svg_view(VA.accuracy_chart_svg(result, metric, target, "depths"), key=f"{key}_depth",
                 download=f"accuracy_depth_{metric}_{target}")
    st.caption("Hover a point for its mean and interval.")
    with st.expander("The numbers (mean [95% interval])"):
        widgets.table(VA.accuracy_table(result, metric, target), hide_index=False)
    if metric != "rmse" and result.get("per_level", {}).get("crbc"):
        with st.expander("Paired against crbc, level by level (crbc − rival [95% interval] · levels crbc is ahead)"):
            widgets.table(VA.paired_difference_table(result, metric, target), hide_index=False)
            st.caption("Every estimator is scored on the same groups of the same levels, so the scores "
                       "pair up: the difference per level, its mean, a 95% bootstrap interval over "
                       "levels, and on how many levels crbc scores higher. An interval above 0: crbc "
                       "is ahead beyond the choice of levels; below 0: the rival is.")


st.title("Estimator accuracy")
st.caption(
    "On our own environments the truth is computable: the dynamics are known and the tiny "
    "policy's action probabilities can be read exactly, so every state's finite-horizon value "
    "V_t, Q_t and advantage A_t = Q_t − V_t is solved backwards over all reachable states. Each "
    f"estimator's raw step signal ({VA.signals_sentence()}) is then scored against the true A of "
    "the same step.")

url.check_choice("acc_metric", list(METRICS), "the score is one of " + ", ".join(METRICS), METRICS.get)
url.check_choice("acc_target", list(TARGETS), "the target is one of " + ", ".join(TARGETS), TARGETS.get)
m1, m2 = st.columns(2)
metric = m1.radio("Score", list(METRICS), format_func=METRICS.get, horizontal=True, key="acc_metric",
                  bind="query-params")
target = m2.radio("Against", list(TARGETS), format_func=TARGETS.get, horizontal=True,
                  key="acc_target", bind="query-params")

# the full sweep over G first; the interval experiments (a few G, B resamples each) after it
# the weak sokoban model first (the headline result), then the other settings, intervals last
files = sorted(state.SAMPLES_DIR.glob("accuracy-*.json"),
               key=lambda p: ("intervals" in p.name, p.name != "accuracy-sokoban-weak.json", p.name))
st.subheader("Shipped experiment")
if not files:
    st.info("No shipped accuracy results (`sample_rollouts/accuracy-*.json`). Make one with "
            "`python -m crbc accuracy --env sokoban-6x6-v0 --model models/sokoban-tiny-weak "
            "--seeds 1000000-1000099 -o sample_rollouts/accuracy-sokoban-weak.json`.")
else:
    names = [p.name for p in files]
    chosen = st.selectbox("Results file", names, key="acc_file") if len(names) > 1 else names[0]
    path = files[names.index(chosen)]
    _show(data.shipped_result(path), metric, target, "shipped")

st.subheader("Approximate anchors: the TAU axis")
_sim = data.similarity_table(state.ROOT / "experiments" / "results" / "similarity-table.json")
if _sim is None:
    st.info("No shipped similarity table (`experiments/results/similarity-table.json`). Make one with "
            "`python -m experiments.similarity_table`.")
else:
    st.markdown(
        "Observations merged as verl-agent's GiGPO does (`--anchor-similarity TAU`: each text joins the "
        "first cluster whose first text has difflib ratio ≥ TAU; docs/MATH.md section 14). Every step is "
        "still scored against the truth of its own state, so a merge of two different states shows as "
        "error. `exact`: no merging.")
    s1, s2 = st.columns(2)
    world = s1.selectbox("World", VS.world_names(_sim), key="acc_sim_world")
    sim_metric = s2.radio("Score", ["spearman", "sign"], horizontal=True, key="acc_sim_metric",
                          format_func={"spearman": "Spearman", "sign": "sign agreement"}.get)
    means, cells = VS.tau_scores(_sim, world, sim_metric)
    st.line_chart(means, x_label="TAU (left: exact anchors; right: looser merging)", y_label=sim_metric,
                  height=280)
    widgets.table(cells, hide_index=False)
    st.caption("What merging did to the anchors (mean [95% interval] over levels):")
    widgets.table(VS.tau_shares(_sim, world), hide_index=False)
    st.caption(f"`{_sim.get('command', '')}` · docs/results/accuracy.md, \"Approximate anchors: what "
               "merging costs\", has the headline per world.")

st.subheader("How sure is a credit: the interval's level, measured")
_report = load_report(state.SHIPPED_DIR)
if _report is None:
    st.info("No shipped calibration report (`sample_rollouts/interval-calibration.json`). Make one "
            "with `python -m experiments.calibration_data && python -m experiments.calibrate_intervals "
            "report`.")
else:
    st.markdown(
        "What `credit --bootstrap` calls a 90% interval (crbc's closure; `--interval calibrated`, the "
        "default): the credit with fitted multiples of its spread to either side, further on the side "
        "away from 0 (the spread over 200 posterior draws of the group, plus an allowance for the "
        "closure's own bias; docs/MATH.md section 10.1). The multiples depend on G, on whether the "
        "credit is 0 by construction and on whether V(s) >= 0.9, and were fitted on one set of levels; "
        "below, how often it held the exact "
        "anchor-level truth A(s, a) on other, held-out levels, against the plain resampling range "
        "(`--interval range`, dotted). " + interval_note(_report, 0.9))
    svg_view(data.reliability(_report), key="acc_reliability")
    with st.expander("The numbers (coverage at 80 / 90 / 95%, sure share and sure-sign agreement at 90%)"):
        widgets.table(calibration_rows(_report))

st.subheader("A small live run")
env = st.session_state.get("gen_env") or "sokoban-6x6-v0"
models = [p.name for p in state.model_dirs()]
default_model = st.session_state.get("gen_model") or next(
    (m for prefix in (env.rsplit("-", 1)[0], env.split("-")[0]) for m in models if m.startswith(prefix)),
    models[0] if models else None)
if default_model is None:
    st.info("A live run needs a shipped model in `models/`; none was found.")
else:
    st.caption(f"Environment `{env}` and checkpoint `{default_model}` follow the sidebar's live "
               "generation settings. Rollouts are drawn from the policy's exact probabilities.")
    with st.form("acc_live"):
        f1, f2, f3 = st.columns(3)
        n_levels = f1.slider("Levels", 3, 30, 10, key="acc_levels")
        first = f2.number_input("First level seed", 0, 10**9, 1_000_000, key="acc_first")
        sizes = f3.multiselect("Group sizes G", [2, 4, 8, 16, 32], [2, 4, 8, 16], key="acc_sizes")
        go = st.form_submit_button("Run", type="primary", icon=":material/play_arrow:")
    if go and sizes:
        seeds = tuple(range(int(first), int(first) + int(n_levels)))
        st.session_state["_acc_live_args"] = (env, str(state.MODELS_DIR / default_model), seeds,
                                              tuple(sorted(sizes)))
    args = st.session_state.get("_acc_live_args")
    if args:
        _show(data.live_accuracy(*args), metric, target, "live")
