"""A run's report: the audit's curves over the iterations, the trainer's own metrics, the advantage
doctor's findings (:mod:`crbc.report.doctor`), and the
groups of one iteration worth a look, each with its own section (graph, credits, backups,
disagreements, and the advantage on each token of a step where the recorder kept tokens,
:mod:`crbc.report.tokens`) linked from the table.

Groups worth a look (of iteration ``I``, default the last with saved rollouts): those whose
rollouts mix successes and failures first, then by the mean over their steps of
|A_S^crbc − A_S^gigpo| (the first two estimators of the report), largest first; the ``top``
first are written out in full. The exact truth is left out (a training iteration's policy
weights are not saved).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from crbc.errors import UsageError
from crbc.explain import disagreements as compare
from crbc.io.anchor_keys import effective_key, key_to_apply, recorded_key, rekey
from crbc.io.runs import Run, read_run, transcripts
from crbc.process import merge, merge_stats
from crbc.report import audit_table as AT
from crbc.report import group as G
from crbc.report.doctor import run_doctor_html
from crbc.report.page import Section, page, render
from crbc.report.text import facts
from crbc.report.tokens import stored_tokens, token_section
from crbc.viz.core.axes import Axis
from crbc.viz.core.chart import chart_svg, grid_svg
from crbc.viz.core.credits import est_color
from crbc.viz.core.series import Mark, Series
from crbc.viz.core.text import esc
from crbc.viz.trainer_metrics import left_out_text, trainer_metrics_svg

__all__ = [
    "curves_html", "groups_table_html", "rank_groups", "run_facts", "run_groups", "run_report",
    "TABLE_MAX", "trainer_by_group", "trainer_html"
]

TABLE_MAX = 200  #: groups listed in the table at most


def _series(frame, column: str, estimators: Sequence[str]) -> list[Series]:
    """One line of ``column`` over iterations: a single one for a column that does not depend
    on the estimator (its first estimator's rows), else one per estimator (its colour)."""
    out = []
    names = list(dict.fromkeys(frame["estimator"]))
    shared = column in AT.SHARED_COLUMNS or names == [""]
    for name in names[:1] if shared else names:
        rows = frame[frame["estimator"] == name]
        y = rows[column].astype(float).to_numpy()
        if not np.isfinite(y).any():
            continue
        many = len(y) > 60
        out.append(Series("all" if shared else name, rows["iteration"].to_numpy(), y,
                          "#31333f" if shared else est_color(name, "#7f7f7f") or "#7f7f7f",
                          markers=not many, point_tips=not many or len(y) <= 400, width=1.6))
    return out


def curves_html(frame, origin: str, estimators: Sequence[str], iteration: int | None) -> str:
    """Small multiples of every column of the audit (or the minimal summary) over iterations."""
    cols = [c for c in AT.SHARED_COLUMNS + AT.PER_ESTIMATOR if c in frame.columns]
    panels, titles, legend = [], [], {}
    marks = [Mark(iteration, "", "#ff7f0e")] if iteration is not None else []
    for c in cols:
        ss = _series(frame, c, estimators)
        if not ss:
            continue
        for s in ss:
            if s.name != "all":
                legend[s.name] = Series(s.name, [], [], s.color)
        panels.append(chart_svg(ss, x=Axis("iteration"), y=Axis(percent=c in AT.PERCENT), size=(400, 210),
                                legend=False, marks=marks))
        titles.append(AT.LABELS.get(c, c))
    if not panels:
        return f'<p class="note">No numbers per iteration ({esc(origin)}).</p>'
    return (f'<p class="note">Source: {esc(origin)}. '
            + ("The orange line marks the iteration whose groups are shown below." if marks else "") + "</p>"
            + grid_svg(panels, titles, cols=3, legend=list(legend.values())))


def trainer_html(run: Run, iteration: int | None) -> str:
    """The trainer's own metrics (metrics.jsonl) over iterations: the CPU trainer's names and
    verl's (``episode/...``, ``critic/...``, ``actor/...``, then ``crbc/...``;
    :func:`crbc.io.runs.metric_choice`), and a note naming what was left out."""
    drawn, capped, zero = run.trainer_metric_choice()
    svg = trainer_metrics_svg(run.metrics, iteration, drawn)
    note = left_out_text(capped, zero)
    note = f'<p class="note">{esc(note)}</p>' if note else ""
    if svg is None:
        return ('<p class="note">metrics.jsonl holds no numbers per iteration besides the iteration '
                '(neither the CPU trainer\'s names nor verl\'s episode/, critic/, actor/ or crbc/ ones).</p>' + note)
    return svg + note


def rank_groups(groups, estimators: Sequence[str], params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per group (see the module docstring for the order): index, group, rollouts,
    steps, success, shared (share of steps at shared anchors), disagreement (mean |Δ A_S| of
    the first two estimators; NaN with fewer than two)."""
    p = merge(groups)
    dis_G = np.full(len(groups), np.nan)
    if len(estimators) >= 2:
        cmp_ = compare.Comparison(f"{estimators[0]} vs {estimators[1]}", estimators[0], estimators[1])
        shared = {k: params[k] for k in ("beta", "sigma_min", "depth") if k in params}
        d = compare.disagreements(p, cmp_, **shared)
        ids = {g: i for i, g in enumerate(p.group_ids)}
        tot, cnt = np.zeros(len(groups)), np.zeros(len(groups))
        for s in d.steps:
            k = ids[s.group]
            tot[k] += abs(s.delta)
            cnt[k] += 1
        dis_G = tot / np.maximum(cnt, 1)
    rows = []
    for k, g in enumerate(groups):
        st = merge_stats([g])
        rows.append({"index": k, "group": g.group, "rollouts": len(g), "steps": st.n_steps,
                     "success": g.success_rate, "shared": st.shared_step_share, "disagreement": float(dis_G[k])})
    rows.sort(key=lambda r: (not 0.0 < r["success"] < 1.0,
                             -(0.0 if math.isnan(r["disagreement"]) else r["disagreement"]), r["index"]))
    return rows


def groups_table_html(rows: Sequence[Mapping[str, Any]], linked: Mapping[int, str], label: str) -> str:
    """The ranked groups as a table; a group written out below links to its section."""
    head = ["#", "group", "rollouts", "steps", "success", "steps at shared anchors", f"mean |Δ A_S| {label}"]
    out = ['<div class="crbc-table-wrap" style="max-height:460px;overflow-y:auto"><table class="crbc-table">'
           '<thead style="position:sticky;top:0;background:#fff"><tr>'
           + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for rank, r in enumerate(rows[:TABLE_MAX], start=1):
        name = esc(r["group"][:120])
        cell = f'<a href="#{esc(linked[r["index"]])}">{name}</a>' if r["index"] in linked else name
        d = "" if math.isnan(r["disagreement"]) else f"{r['disagreement']:.3f}"
        out.append(f"<tr><td class=\"num\">{rank}</td><td>{cell}</td><td class=\"num\">{r['rollouts']}</td>"
                   f"<td class=\"num\">{r['steps']}</td><td class=\"num\">{r['success']:.0%}</td>"
                   f"<td class=\"num\">{r['shared']:.0%}</td><td class=\"num\">{d}</td></tr>")
    out.append("</tbody></table></div>")
    more = "" if len(rows) <= TABLE_MAX else f'<p class="note">… and {len(rows) - TABLE_MAX} more groups.</p>'
    from crbc.viz.core.html import STYLE

    return STYLE + "".join(out) + more


def run_groups(run: Run, iteration: int | None, apply: str,
               similarity: float | None = None) -> tuple[int | None, list]:
    """``(iteration, groups)``: the iteration whose groups are shown (default the last with
    saved rollouts; one without raises UsageError) and its groups keyed by ``apply``, then
    merged at ``similarity`` (:func:`crbc.io.anchor_keys.rekey`)."""
    saved = list(run.iterations_with_rollouts)
    if iteration is None and saved:
        iteration = saved[-1]
    if iteration is not None and iteration not in saved:
        raise UsageError(f"iteration {iteration} has no saved rollouts in {run.source} "
                         f"(saved: {', '.join(map(str, saved[:10]))}{', ...' if len(saved) > 10 else ''})")
    if iteration is None:
        return None, []
    groups = run.rollouts(iteration)
    if apply and recorded_key(run.meta):  # a keyed run: the new key reads the kept transcripts
        groups = transcripts(groups)
    return iteration, rekey(groups, apply or None, similarity) if apply or similarity is not None else groups


def run_facts(run: Run, key: str, similarity: float | None = None) -> str:
    """The run's name, estimator, seed, iterations and the anchor key (and similarity) the report used."""
    cfg = run.config
    seed = cfg.get("seed")
    return facts({"run": run.label[:120], "estimator": cfg.get("estimator", "?"),
                  "seed": seed if seed is not None else "not recorded", "iterations": len(run.metrics),
                  "iterations with rollouts": len(run.iterations_with_rollouts),
                  "anchor key": key[:200] if key else "exact text",
                  **({"anchor similarity": f"difflib ratio >= {similarity:g} (verl-agent's merging)"}
                     if similarity is not None else {})})


def run_report(run_dir: str | os.PathLike, *, estimators: Sequence[str] = ("crbc", "gigpo"),
               iteration: int | None = None, params: Mapping[str, Any] | None = None, top: int = 5,
               progress=None, anchor: str | None = None, anchor_similarity: float | None = None) -> str:
    """The HTML file of the run in ``run_dir`` (module docstring). ``iteration``: whose groups
    are ranked (default the last with saved rollouts; one without raises UsageError);
    ``estimators``: those computed for each written-out group (the first two are compared);
    ``top``: groups written out in full; ``anchor``: the anchor key (a regex; None: the run's
    ``config.anchor_key``, else the exact text), named in the file; ``progress(i, n)``: see
    :func:`crbc.report.audit_table.minimal_summary`. ``anchor_similarity``: TAU, the keyed
    anchors of each group merged as verl-agent merges similar observations (named in the file)."""
    run = read_run(run_dir)
    params = dict(params or {})
    estimators = list(estimators)
    recorded = recorded_key(run.meta)
    key = effective_key(anchor, recorded)
    iteration, groups = run_groups(run, iteration, key_to_apply(anchor, recorded), anchor_similarity)
    frame, origin = AT.load(run, progress, anchor, anchor_similarity)
    head = run_facts(run, key, anchor_similarity)
    secs = [Section("curves", "Audit over iterations", head + curves_html(frame, origin, estimators, iteration)),
            Section("trainer", "The trainer's metrics", trainer_html(run, iteration)),
            Section("doctor", "The advantage doctor", run_doctor_html(run, frame, iteration, groups))]
    if iteration is not None:
        trainer = trainer_by_group(groups)
        rows = rank_groups(groups, estimators, params)
        chosen = [r["index"] for r in rows[:top]]
        linked = {k: f"g{k}" for k in chosen}
        label = f"{estimators[0]} ~ {estimators[1]}" if len(estimators) >= 2 else ""
        from crbc.process import merge_profile

        secs.append(Section("groups", f"Iteration {iteration}: the groups worth a look",
                            f'<p class="merge-line">Iteration {iteration}, anchors keyed by '
                            + (f"the anchor key <code>{esc(key[:200])}</code>" if key else "the exact text")
                            + f': <b>{esc(merge_profile(groups).line())}</b></p>'
                            '<p class="note">Groups whose rollouts mix successes and failures first (there the '
                            'estimators have something to compare), then by how much the first two estimators '
                            f'disagree on their steps. The first {len(chosen)} are written out below (click a name).</p>'
                            + groups_table_html(rows, linked, label)))
        stored = stored_tokens(run.source, iteration)  # None: the recorder kept no tokens
        for rank, k in enumerate(chosen, start=1):
            view = G.group_view(groups[k], estimators, params, None, trainer[k], key)
            tok = token_section(stored, groups[k], f"g{k}-tokens", level=3)
            body = "".join(render(s) for s in [*G.sections(view, f"g{k}-", level=3), *([tok] if tok else [])])
            secs.append(Section(linked[k], f"Group {rank}: {groups[k].group[:100]}", body, 2, "group-section"))
    sub = f"A report of the run <b>{esc(run.label[:200])}</b> ({esc(Path(run.source).name[:200])})."
    return page(f"crbc report: run {run.label[:100]}", secs, subtitle=sub)


def trainer_by_group(groups) -> list:
    """(per group) the trainer's advantage per step in merge order (None where the group records none)."""
    from crbc.run_analysis.review import trainer_advantage

    return [trainer_advantage([g]) for g in groups]
