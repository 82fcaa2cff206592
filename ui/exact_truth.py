"""The exact truth (crbc.truth) of a group whose meta names a known env, seed and tiny policy,
cached for every page (an upload's truth in its own session: :mod:`ui.session_memo`)."""

from __future__ import annotations

import streamlit as st

from crbc.io.rollouts import RolloutGroup
from ui import figure_cache, warm_imports
from ui.context import PageContext, cached_process
from ui.session_memo import memo
from ui.state import ROOT


@st.cache_resource(show_spinner=False, max_entries=1)
def _truth_cache():
    warm_imports.wait()  # the model stack may still be importing in the background
    from crbc.truth import TruthCache

    return TruthCache(policy_root=str(ROOT))  # loaded checkpoints and solved levels, shared


@memo(show_spinner="Solving the level exactly…", max_entries=64)
def _truth(key: str, beta: float, _group: RolloutGroup, _anchors: tuple[str, ...]):
    warm_imports.wait()
    from crbc.truth import group_truth_arrays

    try:
        return group_truth_arrays(_group, _anchors, beta, _truth_cache())
    except (ValueError, OSError) as e:  # bad meta or anchor, unscorable policy, missing folder
        return f"No exact truth for this group: {' '.join(str(e).split())}"


def truth_for_group(key: str, group: RolloutGroup, beta: float = 0.98):
    """``(GroupTruth, None)`` or ``(None, reason)`` for any group (``key``: its cache key)."""
    from crbc.truth import has_truth_meta

    if not has_truth_meta(group):
        return None, "No exact truth: the group's meta does not identify env, level and policy."
    out = _truth(key, float(beta), group, cached_process(key, group).state_anchor)
    return (None, out) if isinstance(out, str) else (out, None)


def truth_possible(ctx: PageContext) -> bool:
    """Cheap check (no model load): the chosen group's meta names env, seed, policy, step limit."""
    from crbc.truth import has_truth_meta

    return has_truth_meta(ctx.group)


def group_truth(ctx: PageContext):
    """``(GroupTruth, None)`` for the chosen group when its meta identifies a known env, seed and
    scorable policy (shipped samples, live generation, iteration 0 of a run), else
    ``(None, reason)``. Cached per group and beta."""
    if not truth_possible(ctx):
        return None, ("No exact truth: this group's meta does not name a known environment, level "
                      "seed, step limit and checkpoint (as `generate` writes them), or it comes from "
                      "a training iteration whose policy weights were not saved.")
    out = _truth(ctx.key, float(ctx.params.get("beta", 0.98)), ctx.group, ctx.process.state_anchor)
    return (None, out) if isinstance(out, str) else (out, None)


def agreement_table(ctx: PageContext, credits: dict, truth, params_key: tuple):
    """The table of how each estimator's raw step signal agrees with the truth on the chosen
    group (:func:`crbc.truth.accuracy.group_agreement`), built once per group and parameters
    (``params_key``: every estimator's parameters)."""
    from crbc.truth import accuracy
    from crbc.viz import accuracy as VA

    return figure_cache.figure("truth_agreement_table", (ctx.key, params_key),
                               lambda: VA.agreement_table(accuracy.group_agreement(credits, truth.advantage_N)))
