"""One group in a report: its anchor graph, every estimator's step credits side by side (and the
exact truth where it exists), the Bellman backups with a K slider, where the estimators disagree
most with the arithmetic, and the anchors' texts.

Every drawing is a :mod:`crbc.viz` builder's (the studio's own SVG and HTML); every number is
computed by :mod:`crbc.estimators`, :mod:`crbc.explain` and :mod:`crbc.truth`, never here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from crbc.estimators import registry
from crbc.explain import disagreements as compare
from crbc.explain.anchor_names import anchor_labels
from crbc.explain.arithmetic import anchor_arithmetic
from crbc.io.rollouts import RolloutGroup
from crbc.process import merge
from crbc.report.backups import backups_html
from crbc.report.page import Section
from crbc.report.side_by_side import side_by_side_html
from crbc.report.text import anchor_html, facts, long_text
from crbc.viz.backup_tree import backup_tree_svg
from crbc.viz.core.credits import field_label, field_N
from crbc.viz.core.html import html_table
from crbc.viz.core.text import esc
from crbc.viz.disagreement import disagreement_bars_html
from crbc.viz.graph import graph_svg
from crbc.viz.heatmap import HEAT_ROWS, Panel, heat_rows, heatmaps_svg, shared_range

__all__ = [
    "anchors_html", "credits_html", "disagreements_html", "graph_html", "group_view", "GroupView",
    "HEAT_ROWS", "heat_selection", "INDEX_MAX", "sections", "summary_html", "TOP_ANCHORS", "trainer_html", "TruthFn"
]

TOP_ANCHORS = 3  #: anchors written out with their arithmetic, per comparison
INDEX_MAX = 400  #: anchors listed with their text in the anchor index (most visited first)

#: truth(group, anchors, beta) -> GroupTruth, or raises ValueError / OSError with the reason
TruthFn = Callable[[RolloutGroup, Sequence[str], float], Any]


@dataclass(frozen=True)
class GroupView:
    """What the sections of one group read: the group, its process, the credits per estimator
    (``credits``: name -> :class:`~crbc.estimators.credits.Credits`), the shared ``params``
    (beta, sigma_min, depth, ...), the truth (a ``GroupTruth`` or None) and why there is none,
    ``trainer``: (N,) the advantage the user's trainer gave each step in merge order (NaN where
    none; None when the group records none), ``key``: the anchor key its anchors carry ("" exact);
    ``cache``: every estimator computed on the process so far
    (:func:`crbc.estimators.registry.compute_cached`), so the sections never solve twice;
    ``compare_at``: the anchor of the backups side by side (:mod:`crbc.report.side_by_side`; None:
    the most visited one with two or more actions)."""

    group: RolloutGroup
    credits: Mapping[str, Any]
    params: Mapping[str, Any]
    truth: Any = None
    no_truth: str = ""
    trainer: np.ndarray | None = None
    key: str = ""
    cache: dict = field(default_factory=dict, compare=False, repr=False)
    compare_at: int | str | None = None

    @property
    def process(self):
        return next(iter(self.credits.values())).process


def group_view(group: RolloutGroup, estimators: Sequence[str] | None = None,
               params: Mapping[str, Any] | None = None, truth: TruthFn | None = None,
               trainer: np.ndarray | None = None, key: str = "", compare_at: int | str | None = None) -> GroupView:
    """Merge ``group``, compute every estimator of ``estimators`` (default: every registered one)
    with the shared ``params`` each takes, and the truth with ``truth`` when given; ``trainer``,
    ``key`` and ``compare_at``: see :class:`GroupView`."""
    names = list(estimators or registry.names())
    params = dict(params or {})
    p = merge([group])
    cache: dict = {}
    credits = {n: registry.compute_cached(cache, n, p, **registry.get(n).shared(params)) for n in names}
    beta = float(params.get("beta", 0.98))
    t, why = None, "No exact truth: the report was made without it."
    if truth is not None:
        from crbc.truth import has_truth_meta

        if not has_truth_meta(group):
            why = ("No exact truth: the group's meta does not name a known environment, level seed, "
                   "step limit and checkpoint (as `crbc generate` writes them).")
        else:
            try:
                t, why = truth(group, p.state_anchor, beta), ""
            except (ValueError, OSError) as e:
                why = "No exact truth for this group: " + " ".join(str(e).split())
    return GroupView(group, credits, params, t, why, trainer, key, cache, compare_at)


def _ids(prefix: str) -> Callable[[str], str]:
    return lambda name: f"{prefix}{name}"


def sections(v: GroupView, prefix: str = "", level: int = 2) -> list[Section]:
    """The group's sections in reading order, their ids prefixed by ``prefix`` (several groups
    on one page) and headed at ``level``."""
    i = _ids(prefix)
    return [Section(i("graph"), "Anchor graph", graph_html(v), level),
            Section(i("credits"), "Step credits, every estimator", credits_html(v), level),
            Section(i("backups"), "Bellman backups: K = 0 to the closure", backups_html(v.process, _beta(v)),
                    level, "crbc-backups"),
            Section(i("side-by-side"), "The backups side by side at one anchor",
                    side_by_side_html(v.process, v.compare_at, _beta(v), float(v.params.get("sigma_min", 0.1)),
                                      v.truth, _closure_a_SA(v)), level),
            Section(i("disagreements"), "Where the estimators disagree most", disagreements_html(v, prefix), level),
            Section(i("anchors"), "Anchors", anchors_html(v, prefix), level)]


def _closure_a_SA(v: GroupView) -> np.ndarray:
    """The closure's A(s,a) per pair at the view's beta and sigma_min (computed once per view)."""
    return registry.compute_cached(v.cache, "crbc", v.process, beta=_beta(v), depth=None,
                                   sigma_min=float(v.params.get("sigma_min", 0.1))).credit_SA


def _beta(v: GroupView) -> float:
    return float(v.params.get("beta", 0.98))


def summary_html(v: GroupView) -> str:
    """Group id (cut), rollouts, steps, anchors, success rate, shared parameters."""
    g, p = v.group, v.process
    shared = ", ".join(f"{k} = {val}" for k, val in sorted(v.params.items())) or "defaults"
    return (long_text(g.group, 200)
            + facts({"rollouts": len(g), "steps": p.n_steps, "anchors": p.n_states,
                     "success": f"{g.success_rate:.0%}", "parameters": shared,
                     "anchor key": v.key[:200] if v.key else "exact text"}))


def graph_html(v: GroupView) -> str:
    """The merged process coloured by crbc's V (the studio's Bellman backups drawing)."""
    p = v.process
    c = v.credits.get("crbc") or registry.compute("crbc", p, **registry.get("crbc").shared(dict(v.params)))
    return (summary_html(v) + graph_svg(p, c.value_S, value_name="V", shown_width_px=900)
            + f'<p class="note">Each circle is an anchor (a state two or more rollouts can share), its area '
              f'growing with visits, its colour V(s) of the exact closure (β = {_beta(v):g}; 0 dark purple … '
              '1 yellow); a grey line per observed transition; z+ success and z− failure on the right. '
              'Hover an anchor for its name, value and text; the texts are listed under Anchors.</p>')


def heat_selection(p, limit: int | None = None) -> tuple[list[int] | None, str]:
    """The rollouts a heatmap panel of the report draws (:func:`crbc.viz.heatmap.heat_rows`) and
    the sentence that says which: ``(None, "")`` (all) up to ``limit`` (default
    :data:`HEAT_ROWS`) rollouts."""
    rows = heat_rows(p, limit)
    if rows is None:
        return None, ""
    n, k_ok = len(p.rollout_len), int(np.asarray(p.rollout_success, dtype=bool)[rows].sum())
    return rows, (f'<p class="note">This group has {n:,} rollouts ({int(p.n_steps):,} steps), so each panel shows '
                  f'{len(rows)} of them: the first {k_ok} that succeeded and the first {len(rows) - k_ok} '
                  'that failed, in file order, on the colour scale of all of them. A drawing of every step '
                  'would hold a cell per step and panel, more than a browser shows at once; every step\'s '
                  'credits are in <code>crbc credit FILE</code>.</p>')


def credits_html(v: GroupView) -> str:
    """A heatmap panel per estimator (rollouts x steps, A_S on one shared colour scale), the
    truth's own panel and the agreement of each estimator with it when the truth is known. Above
    :data:`HEAT_ROWS` rollouts the panels draw the stated selection of :func:`heat_selection`."""
    field = "step_advantage"
    shown = [n for n, c in v.credits.items() if field_N(c, field) is not None]
    panels = [n for n in shown if np.any(field_N(v.credits[n], field))] or shown
    zmax = shared_range([v.credits[n] for n in panels], field)
    rows, why = heat_selection(v.process)
    out = [f'<p class="note">One colour scale for every panel, symmetric around 0: dark blue = +{zmax:.3g}, '
           f'dark red = −{zmax:.3g} ({esc(field_label(field))}, normalised per anchor, so estimators share '
           'a scale). A row per rollout (✓ succeeded, ✗ failed; its length in brackets). Hover a cell for '
           'its step, action, anchor and value.</p>' + why]
    zero = [n for n in shown if n not in panels]
    if zero:
        out.append(f'<p class="note">All zero on this group, so no panel: {esc(", ".join(zero))}.</p>')
    out.append(heatmaps_svg(v.process, [Panel(n, field_N(v.credits[n], field)) for n in panels],
                            zmax=zmax, value_name="A_S", scale_name=field_label(field), pickable=False,
                            rows=rows))
    out.append('<p class="note">' + " · ".join(
        f"<b>{esc(n)}</b>: {esc(registry.get(n).summary)}" for n in panels if n in registry.names()) + "</p>")
    if v.trainer is not None:
        out.append(trainer_html(v))
    if v.truth is not None:
        from crbc.truth import accuracy
        from crbc.viz.accuracy import agreement_table

        out.append("<h3>The exact truth</h3><p class=\"note\">The policy's exact advantage A_t = Q_t − V_t of "
                   "each step (return units, its own colour scale).</p>")
        out.append(heatmaps_svg(v.process, [Panel("truth", v.truth.advantage_N)], value_name="true A_t",
                                scale_name="true A_t (its own scale)", pickable=False, rows=rows))
        table = agreement_table(accuracy.group_agreement(dict(v.credits), v.truth.advantage_N))
        out.append("<h3>Which estimator agrees with the truth on this group?</h3>" + html_table(table, index=True)
                   + '<p class="note">Each estimator\'s raw step signal against the true A_t of the same step: '
                     'share of steps with the right sign, rank correlation, and for Q − V the RMSE.</p>')
    elif v.no_truth:
        out.append(f'<p class="note">{esc(v.no_truth)}</p>')
    return "".join(out)


def trainer_html(v: GroupView) -> str:
    """The trainer row, as Step credits shows it under *A_final*: every estimator's A_final and
    the advantage the user's trainer gave each step (recorded with the run) on one colour scale."""
    field = "advantage"
    shown = [n for n, c in v.credits.items() if field_N(c, field) is not None]
    zmax = max(shared_range([v.credits[n] for n in shown], field) if shown else 0.0,
               float(np.nanmax(np.abs(v.trainer))) if np.isfinite(v.trainer).any() else 0.0) or 1.0
    panels = [Panel(n, field_N(v.credits[n], field)) for n in shown]
    panels.append(Panel("trainer", np.asarray(v.trainer, dtype=float)))
    return ('<h3>The trainer\'s advantage</h3><p class="note"><b>trainer</b>: the advantage your trainer gave '
            f'each step (recorded with the run; blank where none), beside every estimator\'s {esc(field_label(field))} '
            f'on one colour scale (dark blue = +{zmax:.3g}, dark red = −{zmax:.3g}): the trainer\'s is an A_final, '
            'so it is compared with the estimators\' A_final.</p>'
            + heatmaps_svg(v.process, panels, zmax=zmax, value_name="A", scale_name=field_label(field),
                           pickable=False, rows=heat_rows(v.process)))


def disagreements_html(v: GroupView, prefix: str = "") -> str:
    """For every comparison of :data:`crbc.explain.disagreements.COMPARISONS` whose two
    estimators are in the report: the anchors ranked by mean |Δ A_S| (bars), and the
    :data:`TOP_ANCHORS` first with each side's A_S per action and crbc's backup arithmetic there
    (:func:`crbc.explain.arithmetic.anchor_arithmetic`, the backup tree drawing)."""
    p = v.process
    shared = {k: v.params[k] for k in ("beta", "sigma_min", "depth") if k in v.params}
    out = []
    for cmp_ in compare.COMPARISONS:
        name = cmp_.name
        if cmp_.x not in v.credits or cmp_.y not in v.credits:
            continue
        # every shared parameter (an estimator takes those the registry says it shares): the
        # sides are then the credits of the view, found in its cache, never solved again
        dis = compare.disagreements(p, cmp_, with_steps=False, cache=v.cache, **dict(v.params))
        out.append(f"<h3>{esc(name)}</h3>" + disagreement_bars_html(dis, top=10))
        top = {a.state: [] for a in dis.anchors[:TOP_ANCHORS]}
        for r in dis.pairs:
            if r.state in top:
                top[r.state].append(r)
        for a in dis.anchors[:TOP_ANCHORS]:
            if a.disagreement <= 1e-12:
                break
            pairs = top[a.state]
            rows = [{"action": r.action, "N(s,a)": r.n_sa, f"A_S {cmp_.x_label}": r.a_s_x,
                     f"A_S {cmp_.y_label}": r.a_s_y, "Δ": r.delta} for r in pairs]
            ar = anchor_arithmetic(p, a.state, _beta(v), shared.get("depth"), float(shared.get("sigma_min", 0.1)),
                                   cache=v.cache)
            expr = "\n".join([ar.v_expression] + [x.q_expression for x in ar.actions]
                             + [ar.sigma_expression, ar.gate_expression])
            out.append(f'<h3 id="{esc(prefix)}dis-{esc(name.replace(" ", "-"))}-{a.state}">Anchor {esc(a.anchor)}: '
                       f'mean |Δ A_S| = {a.disagreement:.3f}</h3>'
                       f'<p class="note">visited {a.visits} times, {a.actions} actions; best by {esc(cmp_.x_label)}: '
                       f'{esc(a.best_x)}, by {esc(cmp_.y_label)}: {esc(a.best_y)}'
                       + (" (they differ)" if a.ranks_differ else "") + "</p>"
                       + anchor_html(p.state_anchor[a.state]) + html_table(rows)
                       + "<div class=\"note\">crbc's backup at this anchor (exact closure"
                       + ("" if shared.get("depth") is None else f", depth {shared['depth']}") + "):</div>"
                       + f'<div class="expr">{esc(expr)}</div>' + backup_tree_svg(ar))
    if not out:
        return '<p class="note">No comparison: the report needs two of crbc, gigpo, shortest_path, visit_local.</p>'
    return "".join(out)


def anchors_html(v: GroupView, prefix: str = "") -> str:
    """Each anchor's name (as in the drawings), visits, actions, crbc's V and its text (cut;
    the rest behind "show all"), most visited first, at most :data:`INDEX_MAX`."""
    p = v.process
    labels = anchor_labels(p)
    c = v.credits.get("crbc")
    order = np.lexsort((np.arange(p.n_states), -p.n_s))[:INDEX_MAX]
    out = []
    for s in order.tolist():
        val = "" if c is None else f", V = {c.value_S[s]:.3f}"
        out.append(f'<div id="{esc(prefix)}anchor-{s}"><b>{esc(labels[s])}</b> <span class="note">visited '
                   f'{int(p.n_s[s])} times, {int(p.n_actions[s])} actions{val}</span>{anchor_html(p.state_anchor[s])}</div>')
    more = "" if p.n_states <= INDEX_MAX else f'<p class="note">… and {p.n_states - INDEX_MAX} more anchors.</p>'
    return "".join(out) + more
