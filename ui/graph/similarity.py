"""The Anchor graph's similarity slider: which different states a TAU would merge in this group
(their boards side by side) and what the merge does to each estimator's credit against the truth
(docs/MATH.md section 14)."""

from __future__ import annotations

import html
from difflib import SequenceMatcher

import numpy as np
import streamlit as st

from crbc.estimators import registry as estimators
from crbc.io.similarity import SimilarityError, cluster_texts, similar_groups
from crbc.process import merge
from crbc.truth.accuracy import signal_kind, spearman, step_signal
from crbc.viz.board import board_html, is_board
from ui.core import exact_truth, url, widgets
from ui.core.context import PageContext

__all__ = ["similarity_section"]

#: Distinct anchor texts above which the slider does not cluster in the page (the sidebar's
#: field clusters in the keying worker, under its budgets).
MAX_TEXTS = 3000
SHOWN_MERGES = 3


def _merges(texts: list[str], labels: list[int], reps: list[str]) -> list[tuple[str, str, int]]:
    """(representative, another text merged into it, how many distinct texts the cluster holds)
    for each cluster of two or more distinct texts, the largest first."""
    members: dict[int, list[str]] = {}
    for text, c in zip(texts, labels, strict=True):
        if text not in members.setdefault(c, []):
            members[c].append(text)
    out = [(reps[c], next(t for t in ts if t != reps[c]), len(ts)) for c, ts in members.items() if len(ts) > 1]
    return sorted(out, key=lambda m: -m[2])


def _spearman_rows(ctx: PageContext, merged_group, truth_N: np.ndarray) -> list[dict]:
    """Each estimator's Spearman with the per-step truth, on exact and on merged anchors."""
    exact = merge([ctx.group])
    merged = merge([merged_group])
    rows = []
    for name in estimators.names():
        kind = signal_kind(name)
        a = step_signal(estimators.compute(name, exact), kind)
        b = step_signal(estimators.compute(name, merged), kind)
        rows.append({"estimator": name, "exact anchors": round(spearman(a, truth_N), 3),
                     "merged at TAU": round(spearman(b, truth_N), 3)})
    return rows


def _anchor_html(text: str) -> str:
    """A board as its grid; any other text wrapped in a bounded, scrollable box (a transcript)."""
    if is_board(text):
        return board_html(text, cell=22)
    return ("<pre style='white-space:pre-wrap;overflow-wrap:anywhere;max-height:260px;overflow:auto;"
            f"font-size:12px;margin:0'>{html.escape(text)}</pre>")


def _show_merges(found: list[tuple[str, str, int]]) -> None:
    for rep, other, size in found[:SHOWN_MERGES]:
        ratio = SequenceMatcher(None, other, rep).ratio()
        st.markdown(f"A cluster of **{size}** different anchors; two of them (difflib ratio {ratio:.3f}):")
        left, right = st.columns(2)
        left.html(_anchor_html(rep))
        right.html(_anchor_html(other))


def _merge_view(ctx: PageContext, tau: float) -> tuple[int, int, list[tuple[str, str, int]]] | str:
    """``(distinct anchors, clusters, merges)`` of the chosen group at ``tau``, or the reason it
    cannot be clustered here (too many texts, or :class:`SimilarityError`)."""
    texts = [s.anchor for r in ctx.group.rollouts for s in r.steps]
    distinct = len(set(texts))
    if distinct > MAX_TEXTS:
        return (f"This group has {distinct:,} different anchors; the slider clusters at most "
                f"{MAX_TEXTS:,} here. Use the sidebar's anchor-similarity field (it runs in the background "
                "worker with its time limit) or `crbc credit --anchor-similarity TAU`.")
    try:
        labels, reps = cluster_texts(texts, tau, where=f"group {ctx.group.group!r}")
    except SimilarityError as e:
        return str(e)
    return distinct, len(reps), _merges(texts, labels, reps)


@st.fragment
def similarity_section(ctx: PageContext) -> None:
    """The fold's content: a TAU slider, the merges it makes and their cost. What it computes is
    kept per group and TAU (:meth:`PageContext.kept`: shared for the shipped groups, the
    session's own for an upload), so a class opening the fold on one sample computes it once."""
    url.check_url("graph_tau", url.float_in(0.8, 0.99), "the similarity TAU is between 0.80 and 0.99")
    tau = st.slider("TAU", 0.80, 0.99, 0.95, 0.01, key="graph_tau", bind="query-params",
                    help="Each anchor joins the first cluster whose first anchor has difflib ratio >= TAU "
                         "(verl-agent's GiGPO with enable_similarity).")
    view = ctx.kept("table", ("similarity_merges", round(float(tau), 2)), lambda: _merge_view(ctx, tau))
    if isinstance(view, str):
        st.info(view)
        return
    distinct, clusters, found = view
    st.markdown(f"At TAU = {tau:.2f} the group's **{distinct}** anchors become **{clusters}**; "
                f"**{len(found)}** of them hold two or more different anchors.")
    if not found:
        return
    _show_merges(found)
    truth, why = exact_truth.group_truth(ctx)
    if truth is None:
        st.caption(f"What the merge does to each credit needs the exact truth. {why}")
        return
    beta = float(ctx.params.get("beta", 0.98))  # the truth's discount (exact_truth.group_truth)
    rows = ctx.kept("table", ("similarity_spearman", round(float(tau), 2), beta),
                    lambda: _spearman_rows(ctx, similar_groups([ctx.group], tau)[0], truth.advantage_N))
    widgets.table(rows)
    st.caption("Spearman of each estimator's step signal with the true A_t of each step's own state: "
               "a merge of two different states shows as a lower number.")
