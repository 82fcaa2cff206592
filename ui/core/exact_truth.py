"""The exact truth (crbc.truth) of a group whose meta names a known env, seed and tiny policy,
kept by the group's context (an upload's truth in its own session: :mod:`ui.core.context`)."""

from __future__ import annotations

from ui.core import warm_imports
from ui.core.context import PageContext, server
from ui.core.state import ROOT


def _solver():
    """The truth's cache of loaded checkpoints and solved levels, one for the server."""
    def build():
        warm_imports.wait()  # the model stack may still be importing in the background
        from crbc.truth import TruthCache

        return TruthCache(policy_root=str(ROOT))

    return server().kept("solver", (), build)


def _solved(ctx: PageContext, beta: float):
    """The GroupTruth of the chosen group at ``beta``, or the reason there is none (a string)."""
    group, anchors = ctx.group, ctx.process.state_anchor

    def build():
        warm_imports.wait()
        from crbc.truth import group_truth_arrays

        try:
            return group_truth_arrays(group, anchors, beta, _solver())
        except (ValueError, OSError) as e:  # bad meta or anchor, unscorable policy, missing folder
            return f"No exact truth for this group: {' '.join(str(e).split())}"

    return ctx.kept("truth", (float(beta),), build, spinner="Solving the level exactly…")


def truth_of(ctx: PageContext, beta: float = 0.98):
    """``(GroupTruth, None)`` or ``(None, reason)`` for the chosen group of any context."""
    from crbc.truth import has_truth_meta

    if not has_truth_meta(ctx.group):
        return None, "No exact truth: the group's meta does not identify env, level and policy."
    out = _solved(ctx, beta)
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
    out = _solved(ctx, float(ctx.params.get("beta", 0.98)))
    return (None, out) if isinstance(out, str) else (out, None)


def agreement_table(ctx: PageContext, credits: dict, truth, params_key: tuple):
    """The table of how each estimator's raw step signal agrees with the truth on the chosen
    group (:func:`crbc.truth.accuracy.group_agreement`), built once per group and parameters
    (``params_key``: every estimator's parameters)."""
    from crbc.truth import accuracy
    from crbc.viz import accuracy as VA

    return ctx.kept("table", ("truth_agreement", params_key),
                    lambda: VA.agreement_table(accuracy.group_agreement(credits, truth.advantage_N)))
