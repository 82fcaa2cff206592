"""Assemble a report file: a group's page or a run's page, from objects or from a path.

``report(src, ...)`` reads ``src``: a ``crbc.rollout/1`` file (``.jsonl``, ``.jsonl.gz``) gives
a group report of ``group`` (an id or a 0-based index; default the first group that mixes
successes and failures), a run folder (``run.json`` inside) a run report.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from crbc.errors import UsageError
from crbc.estimators.closure import solves_remembered
from crbc.io.rollouts import RolloutGroup, showcase_group
from crbc.report import group as G
from crbc.report.page import Section, page
from crbc.viz.core.text import esc


def default_params() -> dict[str, Any]:
    """Every shared estimator parameter at its registry default (beta, depth, sigma_min, w_G, w_S,
    ...): the studio's sidebar and the command line both start from these, so the same group and
    parameters give the same file."""
    from crbc.estimators.registry import shared_param_specs

    return {name: default for name, (_meta, default) in shared_param_specs().items()}


def pick_group(groups: Sequence[RolloutGroup], group: str | int | None) -> int:
    """The index of ``group`` in ``groups``: an id, or a 0-based index (an int or digits that
    are no group's id); None: the first group whose rollouts neither all succeed nor all fail,
    else 0. An unknown id raises :class:`UsageError` naming a few known ones."""
    ids = [g.group for g in groups]
    if group is None:
        return showcase_group(groups)
    if str(group) in ids:
        return ids.index(str(group))
    if isinstance(group, int) or str(group).isdigit():
        k = int(group)
        if 0 <= k < len(groups):
            return k
    shown = ", ".join(repr(i) for i in ids[:5]) + (", ..." if len(ids) > 5 else "")
    raise UsageError(f"no group {str(group)[:200]!r} (there are {len(ids)}: {shown})")


def default_truth(policy_root: str | None = None):
    """The truth function :func:`crbc.report.group.group_view` calls: the exact truth of a
    generated toy group (crbc.truth; loads the tiny policy named in the group's meta, resolved
    from the working directory or ``policy_root``)."""
    cache = {}

    def truth(group: RolloutGroup, anchors, beta: float):
        from crbc.truth import TruthCache, group_truth_arrays

        if "c" not in cache:
            cache["c"] = TruthCache(policy_root=policy_root)
        return group_truth_arrays(group, anchors, beta, cache["c"])

    return truth


@solves_remembered()  # its sections ask for the same closure: solved once per process and beta
def group_report(group: RolloutGroup, *, estimators: Sequence[str] | None = None,
                 params: Mapping[str, Any] | None = None, truth: bool | Any = True,
                 policy_root: str | None = None, source: str = "", key: str = "", findings=None,
                 tokens=None, compare_at: int | str | None = None) -> str:
    """The HTML file of one group (see :mod:`crbc.report.group`). ``truth``: True computes the
    exact truth where the group's meta allows it, False never, or a function
    ``truth(group, anchors, beta) -> GroupTruth``. ``source``: where the group came from (shown);
    ``key``: the anchor key its anchors carry (named; "" the exact text). A group whose steps
    record the trainer's advantage gets the trainer row. ``findings``: the advantage doctor's
    findings on the group's source (a last section), or None. ``tokens``: the stored response
    tokens of the group's iteration (:func:`crbc.report.tokens.stored_tokens`; a section with the
    advantage on each token of a step, :mod:`crbc.report.tokens`), or None. ``compare_at``: the
    anchor of the backups side by side (an id, label or text; None: the most visited choosable)."""
    from crbc.run_analysis.review import trainer_advantage

    fn = default_truth(policy_root) if truth is True else (truth or None)
    view = G.group_view(group, estimators, {**default_params(), **dict(params or {})}, fn,
                        trainer_advantage([group]), key, compare_at)
    sub = (f"A report of group <b>{esc(group.group[:200])}</b>"
           + (f" from {esc(source[:300])}" if source else "") + ", anchors keyed by "
           + (f"the anchor key <code>{esc(key[:200])}</code>" if key else "the exact text")
           + ": its anchor graph, every estimator's step "
           "credits, the Bellman backups from K = 0 to the closure, every method's backup side by side at one "
           "anchor and where the estimators disagree.")
    secs = list(G.sections(view))
    if tokens is not None:
        from crbc.report.tokens import token_section

        secs.append(token_section(tokens, group, "tokens"))
    if findings is not None:
        from crbc.report.doctor import findings_html

        secs.append(Section("doctor", "The advantage doctor", findings_html(findings, source or "the source")))
    return page(f"crbc report: {group.group[:120]}", secs, subtitle=sub)


def run_report(run_dir: str | os.PathLike, *, estimators: Sequence[str] = ("crbc", "gigpo"),
               iteration: int | None = None, params: Mapping[str, Any] | None = None,
               top: int = 5, progress=None, anchor: str | None = None,
               anchor_similarity: float | None = None) -> str:
    """The HTML file of a ``crbc.run/1`` folder (see :mod:`crbc.report.run`). ``anchor``: the
    anchor key (a regex; None: the run's ``config.anchor_key``, else the exact text);
    ``anchor_similarity``: TAU, then merged as verl-agent merges similar observations."""
    from crbc.report import run as RUN

    return RUN.run_report(run_dir, estimators=estimators, iteration=iteration,
                          params={**default_params(), **dict(params or {})}, top=top, progress=progress,
                          anchor=anchor, anchor_similarity=anchor_similarity)


def run_group_report(run_dir: str | os.PathLike, group: str | int, *, iteration: int | None = None,
                     estimators: Sequence[str] | None = None, params: Mapping[str, Any] | None = None,
                     anchor: str | None = None, anchor_similarity: float | None = None,
                     compare_at: int | str | None = None) -> str:
    """The report of one group of a run's ``iteration`` (default the last with saved rollouts),
    under the anchor key ``anchor`` (as :func:`run_report`); an unknown group or iteration
    raises UsageError naming what exists. ``compare_at``: as :func:`group_report`."""
    from crbc.io.anchor_keys import effective_key, key_to_apply, recorded_key
    from crbc.io.runs import read_run
    from crbc.report.run import run_groups

    run = read_run(run_dir)
    recorded = recorded_key(run.meta)
    it, groups = run_groups(run, iteration, key_to_apply(anchor, recorded), anchor_similarity)
    if it is None:
        raise UsageError(f"{run_dir}: the run saved no rollouts, so it has no group to report")
    from crbc.report.tokens import stored_tokens

    k = pick_group(groups, group)
    return group_report(groups[k], estimators=estimators, params=params, truth=False,
                        source=f"run {run.label}, iteration {it}" + _merged(anchor_similarity),
                        key=effective_key(anchor, recorded), tokens=stored_tokens(run_dir, it), compare_at=compare_at)


def report(src: str | os.PathLike, *, group: str | int | None = None, iteration: int | None = None,
           estimators: Sequence[str] | None = None, params: Mapping[str, Any] | None = None,
           truth: bool = True, anchor: str | None = None, anchor_similarity: float | None = None,
           compare_at: int | str | None = None) -> str:
    """The report of ``src``: a run folder (``run.json`` inside; with ``group``, that group's
    report of ``iteration``) or a rollout file (JSON Lines, gzip or the recorder's Parquet),
    its anchors keyed by ``anchor`` when given, then merged at ``anchor_similarity`` (TAU);
    ``compare_at``: the anchor of a group report's backups side by side."""
    path = Path(src)
    if path.is_dir():
        if not (path / "run.json").is_file():
            raise UsageError(f"{src}: a folder must be a crbc.run/1 run (no run.json in it)")
        if group is not None:
            return run_group_report(path, group, iteration=iteration, estimators=estimators, params=params,
                                    anchor=anchor, anchor_similarity=anchor_similarity, compare_at=compare_at)
        return run_report(path, estimators=tuple(estimators or ("crbc", "gigpo")), iteration=iteration,
                          params=params, anchor=anchor, anchor_similarity=anchor_similarity)
    if iteration is not None:
        raise UsageError("--iteration is for run folders")
    from crbc.doctor import diagnose, from_groups
    from crbc.io.anchor_keys import rekey
    from crbc.io.rollout_files import read_rollouts

    groups = read_rollouts(path)
    anchor = (anchor or "").strip()
    if anchor or anchor_similarity is not None:
        groups = rekey(groups, anchor or None, anchor_similarity)
    k = pick_group(groups, group)
    root = str(path.resolve().parent.parent)
    return group_report(groups[k], estimators=estimators, params=params, truth=truth, policy_root=root,
                        source=path.name + _merged(anchor_similarity), key=anchor,
                        findings=diagnose(from_groups(groups)), compare_at=compare_at)


def _merged(tau: float | None) -> str:
    """How a report's source line says the anchors were merged by similarity ("" for none)."""
    return "" if tau is None else f", anchors merged at difflib ratio >= {tau:g} (verl-agent's similarity)"


__all__ = ["Section", "group_report", "pick_group", "report", "run_group_report", "run_report"]
