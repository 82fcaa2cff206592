"""Rollouts x steps heatmaps as one server-built SVG (the Step credits page, its truth panel).

One drawing holds every panel (a grid of ``cols`` columns, a panel per estimator, its name as
title) under **one** colour bar: the diverging credit scale on ``[-zmax, +zmax]``, so the same
colour means the same number in every panel. Row ``i`` of a panel is rollout ``i`` of the
process, labelled ``✓ r<index> (<length>)`` (✓ success; ✗ failure or time-out, in
:data:`~crbc.viz.core.style.OUTCOME_COLORS`); column ``t`` is step ``t``, numbered from 0 in the axis
and the tooltips as the rollout files and verl's ``step_index`` number them. Beyond
:data:`~crbc.viz.core.cells.MAX_COLUMNS` steps, or beyond :data:`CELL_BUDGET` cells over all
panels (a cell with its tooltip costs the browser about 25 µs to parse and lay out), a column
is a bin of ``w`` consecutive steps (their mean), as :func:`crbc.viz.core.cells.binned` computes it.

Each cell that holds a step is a ``<rect>`` with a ``<title>`` tooltip (rollout, step, action,
anchor label, value, evidence) and ``data-pick="i:t"``: rollout position ``i`` in the process
and the 1-based step ``t`` (``Process.step_t``; for a bin, its step of largest |value|), which :func:`ui.core.svg_view.svg_view`
sends back on a click. Where a rollout has ended the row is light grey. Every user string is
HTML-escaped; nothing is loaded from anywhere. Sizes are drawing units: a full grid is
:data:`WIDTH` wide, shown at ``width="100%"`` (about one unit per pixel in a wide page column);
a lone panel keeps the width of a grid's panel. A row is 6 to 18 units tall (16 rollouts: 18;
64: 6, with every second row labelled and an outcome stripe on each).

Evidence (``crbc.credit_intervals``): with a panel's ``evidence_N``, a cell keeps its colour when
its credit is sure (for a bin: when one of its steps is) and is washed out otherwise, i.e. its
colour mixed with white, ``0.4 * colour + 0.6 * white`` (:data:`WASH`); with ``sure_only`` those
cells are blank (white) instead. Either way they stay clickable and keep their tooltip.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from crbc.estimators.registry import Credits
from crbc.explain.anchor_names import anchor_labels
from crbc.process import Process
from crbc.viz.core.cells import MAX_COLUMNS, bin_width, binned, by_cell, step_matrix
from crbc.viz.core.credits import field_label, field_N
from crbc.viz.core.palette import sample
from crbc.viz.core.scales import step_ticks, symmetric_range
from crbc.viz.core.style import CREDIT_SCALE, NO_VALUE_COLOR, OUTCOME_COLORS
from crbc.viz.core.svg import FONT_FAMILY
from crbc.viz.core.text import esc, one_line

__all__ = [
    "CELL_BUDGET", "credit_fill", "credit_heatmaps_svg", "credit_matrix", "credit_palettes",
    "heat_rows", "HEAT_ROWS", "heatmaps_svg", "HOVER", "LEVELS", "MIN_COLUMNS", "NO_STEP", "Panel", "ROW_MAX", "ROW_MIN",
    "ROWS_HEIGHT", "rows_only", "shared_range", "WASH", "WIDTH"
]

WIDTH = 880           #: width of the drawing (units); about a wide Streamlit column in pixels
ROWS_HEIGHT = 288.0   #: a panel's rows share this height (16 rollouts: 18 units each) ...
ROW_MAX, ROW_MIN = 18.0, 6.0  #: ... each row between these (a 64-rollout panel: 6 per row)
CELL_BUDGET = 16_000  #: at most about this many cells over all panels (a cell costs the browser ~25 µs)
HEAT_ROWS = 128  #: rollouts a heatmap draws; a bigger group draws a stated selection (:func:`heat_rows`)
MIN_COLUMNS = 50      #: ... but never fewer than this many columns per panel (longer rollouts binned)
LEVELS = 201          #: the credit scale sampled at this many colours (step 0.01 of the range)
WASH = 0.6            #: share of white in a washed-out (not sure) cell
NO_STEP = "#eceef1"   #: a row after its rollout ended
_TITLE_H, _AXIS_H, _ROW_GAP, _COL_GAP, _LEGEND_H = 22.0, 36.0, 16.0, 30.0, 34.0
HOVER = "<style>.crbc-heat [data-pick]:hover{stroke:#31333f;stroke-width:1.5}</style>"  #: outline a cell
_EV_WORDS = {"sure": "sure", "unsure": "not sure", "none": "none (0 by construction)"}


@dataclass(frozen=True)
class Panel:
    """One heatmap of a grid: ``values_N`` holds a value per step of the process (NaN: none);
    ``evidence_N`` (``"sure"``, ``"unsure"`` or ``"none"`` per step) turns the evidence marks on."""

    title: str
    values_N: np.ndarray
    evidence_N: np.ndarray | None = None


@lru_cache(maxsize=1)
def credit_palettes() -> tuple[np.ndarray, np.ndarray]:
    """(colours, washed colours) of the credit scale at :data:`LEVELS` evenly spaced points, as
    ``#rrggbb`` strings; a washed colour is ``(1 - WASH) * colour + WASH * white``."""
    rgb = np.array([[float(v) for v in c[c.index("(") + 1:-1].split(",")]
                    for c in sample(CREDIT_SCALE, np.linspace(0, 1, LEVELS).tolist())])
    washed = (1 - WASH) * rgb + WASH * 255.0

    def hexes(a: np.ndarray) -> np.ndarray:
        return np.array(["#" + "".join(f"{round(v):02x}" for v in row) for row in a], dtype=object)

    return hexes(rgb), hexes(washed)


def credit_fill(values: np.ndarray, zmax: float, washed: bool | np.ndarray = False) -> np.ndarray:
    """Fill colours of values on the diverging credit scale centred on 0: level
    ``round((clip(v / zmax, -1, 1) + 1) / 2 * (LEVELS - 1))`` of :func:`credit_palettes` (the washed
    colour where ``washed``); NaN gets :data:`~crbc.viz.core.style.NO_VALUE_COLOR`. Same shape as
    ``values``, an object array of ``#rrggbb`` strings."""
    v = np.asarray(values, dtype=float)
    full, pale = credit_palettes()
    ok = np.isfinite(v)
    idx = np.rint((np.clip(np.where(ok, v, 0.0) / (zmax or 1.0), -1, 1) + 1) / 2 * (LEVELS - 1)).astype(int)
    out = np.where(np.asarray(washed, dtype=bool), pale[idx], full[idx])
    return np.where(ok, out, NO_VALUE_COLOR).astype(object)


def _num(v: float) -> str:
    """A value in a tooltip: 3 decimals (tiny nonzero values in scientific notation)."""
    if not np.isfinite(v):
        return "–"
    return f"{v:.1e}" if 0 < abs(v) < 5e-4 else f"{v:.3f}"


def _legend(zmax: float, scale_name: str, n_panels: int, evidence: bool, sure_only: bool,
            width: float) -> tuple[str, float]:
    """The one colour bar (-zmax .. +zmax, 80 swatches: no gradient id to clash with another
    drawing on the page) and the keys of the marks, across the top of a drawing ``width``
    wide: the keys right-aligned, or on a second line when they would meet the bar's label.
    Returns ``(svg, height)``."""
    full, pale = credit_palettes()
    shared = " (one scale for every panel)" if n_panels > 1 else ""
    label = f"{zmax:+.3g}  {scale_name}{shared}"
    x, y, n = 60.0, 8.0, 80
    w = min(220.0, max(80.0, width - x - 12 - 6.5 * len(label)))  # the bar and its label fit the width
    bar = "".join(f'<rect x="{x + k * w / n:.1f}" width="{w / n + 0.3:.1f}" height="12" fill="{full[j]}"/>'
                  for k, j in enumerate(np.linspace(0, LEVELS - 1, n).round().astype(int)))
    out = [f'<text x="{x - 6}" y="{y + 11}" text-anchor="end">−{zmax:.3g}</text>',
           f'<g transform="translate(0,{y})">{bar}</g><rect x="{x}" y="{y}" width="{w}" height="12" '
           f'fill="none" stroke="#ccc"/>',
           f'<line x1="{x + w / 2}" y1="{y - 2}" x2="{x + w / 2}" y2="{y + 14}" stroke="#555"/>',
           f'<text x="{x + w + 6}" y="{y + 11}">{esc(label)}</text>']
    keys = []
    if evidence:
        mid = LEVELS // 10
        keys.append(("not sure: blank", "#ffffff") if sure_only else ("washed out: not sure", pale[mid]))
        if not sure_only:
            keys.insert(0, ("sure", full[mid]))
    keys.append(("no step", NO_STEP))
    kx = width - sum(30 + 6.5 * len(k) for k, _ in keys) + 14
    if kx < x + w + 20 + 6.5 * len(label):  # no room beside the bar: a line of its own
        kx, y = x, y + 20
    for k, colour in keys:
        out.append(f'<rect x="{kx:.1f}" y="{y}" width="12" height="12" fill="{colour}" stroke="#bbb"/>'
                   f'<text x="{kx + 16:.1f}" y="{y + 11}">{k}</text>')
        kx += 30 + 6.5 * len(k)
    return "".join(out), _LEGEND_H + y - 8.0


def heatmaps_svg(p: Process, panels: Sequence[Panel], *, zmax: float | None = None,
                 value_name: str = "value", scale_name: str = "credit", sure_only: bool = False,
                 pickable: bool = True, cols: int = 2, max_columns: int = MAX_COLUMNS,
                 max_cells: int = CELL_BUDGET, standalone: bool = False,
                 rows: Sequence[int] | None = None) -> str:
    """One SVG of ``panels`` over the rollouts x steps of ``p`` (see the module docstring), in a
    grid of ``cols`` columns, coloured on ``[-zmax, zmax]`` (default: the largest |value| of any
    panel). A tooltip reads ``rollout r3, step 7: <action> at <anchor> · <value_name> 0.123 ·
    evidence: sure``. ``pickable=False`` leaves out ``data-pick``; ``standalone`` adds the
    ``xmlns`` a file on its own needs (:func:`ui.core.svg_view.svg_view` adds it to its download)
    and a width in pixels; otherwise the width is a share of the column: ``100%`` for a full
    grid, less for fewer panels than ``cols`` (a lone panel as wide as one panel of a grid).
    Columns: one per step up to ``max_columns`` steps, and at most ``max_cells / (rollouts x
    panels)`` of them (never fewer than :data:`MIN_COLUMNS`), so a 64-rollout group of long
    rollouts stays a drawing the browser shows in a few hundred milliseconds; beyond that a
    column is a bin of ``w = ceil(steps / columns)`` steps.
    Each panel is a ``<g class="crbc-panel" data-panel="<title>">``; its cells are its rects
    with ``data-pick`` (with ``pickable``). ``rows``: draw only these rollouts (positions in
    ``p``; drawn in ascending order, their cells picking the same ``i`` as in the full drawing,
    the colour scale still that of every rollout): a caller that bounds a big group's drawing
    says so beside it."""
    panels = list(panels)
    cols = max(1, cols)  # the panels' width: a lone panel is as wide as one of a full grid
    used_cols = max(1, min(cols, len(panels)))
    z = zmax if zmax else symmetric_range(*[q.values_N for q in panels])
    row_ids = None
    if rows is not None:
        p, keep, row_ids = rows_only(p, rows)
        panels = [Panel(q.title, np.asarray(q.values_N)[keep],
                        None if q.evidence_N is None else np.asarray(q.evidence_N)[keep]) for q in panels]
    n_rows = len(p.rollout_len)
    t_max = int(p.rollout_len.max()) if n_rows else 1
    budget = max(MIN_COLUMNS, max_cells // max(n_rows * len(panels), 1))
    w = bin_width(t_max, min(max_columns, budget))
    n_cols = -(-t_max // w)
    rh = min(ROW_MAX, max(ROW_MIN, ROWS_HEIGHT / max(n_rows, 1)))
    every = max(1, math.ceil(11 / rh))  # label every row when it is tall enough for the text
    font = min(12.0, rh - 3) if every == 1 else 10.0
    pw = (WIDTH - _COL_GAP * (cols - 1)) / cols
    rid = [int(i) for i in p.rollout_index]
    lens = p.rollout_len.astype(int)
    lw = 12 + 6.6 * max((len(f"r{a} ({b})") + 2 for a, b in zip(rid, lens, strict=True)), default=8)
    plot_w = pw - lw - 12  # room for the last tick label
    cw = plot_w / n_cols
    gx, gy = (1.0 if cw >= 4 else 0.0), (1.0 if rh >= 6 else 0.0)
    panel_h = _TITLE_H + n_rows * rh + _AXIS_H
    grid_rows = -(-len(panels) // cols)
    used_w = used_cols * pw + (used_cols - 1) * _COL_GAP
    legend, top = _legend(z, scale_name, len(panels), any(q.evidence_N is not None for q in panels), sure_only,
                          used_w)
    height = top + grid_rows * panel_h + (grid_rows - 1) * _ROW_GAP + 4

    # per step: where it is drawn and the words of its tooltip (shared by every panel)
    labels = anchor_labels(p)
    acts = p.action_names
    head_N = [f"rollout r{rid[i]}, step {t - 1}: {one_line(acts[a], 120)} at {one_line(labels[s], 40)}"
              for i, t, a, s in zip(p.step_rollout.tolist(), p.step_t.tolist(),
                                    p.sa_action[p.step_sa].tolist(), p.step_state.tolist(), strict=True)]
    present = np.zeros((n_rows, n_cols), dtype=bool)
    present[p.step_rollout, (p.step_t - 1) // w] = True
    first_empty = present.sum(axis=1)  # a row's cells are contiguous from column 0

    # the frame every panel shares: row labels, the no-step tail of each row, the x axis
    frame = []
    for i in range(n_rows):
        y = _TITLE_H + i * rh
        ok = bool(p.rollout_success[i])
        colour = OUTCOME_COLORS["success" if ok else "failure"]
        if every > 1:  # thin rows: an outcome stripe on every row, a label on some
            frame.append(f'<rect x="{lw - 5:.1f}" y="{y:.1f}" width="3" height="{max(rh - gy, 1):.1f}" '
                         f'fill="{colour}"><title>r{rid[i]} {"✓ success" if ok else "✗ failure"}, '
                         f'{lens[i]} steps</title></rect>')
        if i % every == 0:
            frame.append(f'<text x="{lw - (9 if every > 1 else 4):.1f}" y="{y + rh / 2 + font * 0.36:.1f}" '
                         f'text-anchor="end" font-size="{font:.0f}"><tspan fill="{colour}">{"✓" if ok else "✗"}'
                         f'</tspan> r{rid[i]} <tspan fill="#888">({lens[i]})</tspan></text>')
        if first_empty[i] < n_cols:
            x = lw + first_empty[i] * cw
            frame.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{lw + plot_w - x:.1f}" height="{rh - gy:.1f}" '
                         f'fill="{NO_STEP}"/>')
    ay = _TITLE_H + n_rows * rh
    tick_parts = []
    for t in step_ticks(t_max):
        x = lw + (t + 0.5) / (n_cols * w) * plot_w
        tick_parts.append(f'<line x1="{x:.1f}" y1="{ay:.1f}" x2="{x:.1f}" y2="{ay + 4:.1f}" stroke="#888"/>'
                          f'<text x="{x:.1f}" y="{ay + 15:.1f}" text-anchor="middle">{t}</text>')
    x_title = "step (0-based)" if w == 1 else f"step, 0-based ({w} steps per cell: their mean)"
    frame.append(f'<g font-size="10" fill="#555">{"".join(tick_parts)}</g>'
                 f'<text x="{lw + plot_w / 2:.1f}" y="{ay + 31:.1f}" text-anchor="middle" font-size="11">'
                 f'{x_title}</text>')
    frame_s = "".join(frame)

    out = [legend]
    for k, q in enumerate(panels):
        r_, c_ = divmod(k, cols)
        px, py = c_ * (pw + _COL_GAP), top + r_ * (panel_h + _ROW_GAP)
        out.append(f'<g class="crbc-panel" data-panel="{esc(q.title)}" transform="translate({px:.1f},{py:.1f})">'
                   f'<text x="{lw:.1f}" y="15" font-size="14" font-weight="600">{esc(one_line(q.title, 60))}</text>'
                   f'{frame_s}{_cells(p, q, z, w, n_cols, present, head_N, value_name, sure_only, pickable, lw, cw, rh, gx, gy, row_ids)}'
                   '</g>')
    ns = ' xmlns="http://www.w3.org/2000/svg"' if standalone else ""
    share = used_w / WIDTH  # shown at the scale of a full grid: a lone panel as wide as a grid's panel
    size = f"{used_w:.0f}" if standalone else f"{100 * share:.4g}%"  # a file: one unit per pixel
    return (f'<svg{ns} class="crbc-heat" viewBox="0 0 {used_w:.0f} {height:.0f}" width="{size}" '
            f'font-size="12" fill="#31333f" role="img" aria-label="rollouts by steps heatmaps" '
            f'style="max-width:{WIDTH * 1.4 * share:.0f}px;'
            f'{FONT_FAMILY}">{HOVER if pickable else ""}{"".join(out)}</svg>')


def _cells(p: Process, q: Panel, z: float, w: int, n_cols: int, present: np.ndarray, head_N: list[str],
           value_name: str, sure_only: bool, pickable: bool, lw: float, cw: float, rh: float,
           gx: float, gy: float, row_ids: list[int] | None = None) -> str:
    """The cells of one panel: a row ``<g>`` per rollout holding a ``<rect>`` per cell; a cell of
    row ``i`` picks ``row_ids[i]`` (its rollout's position in the full process) when given."""
    m = step_matrix(p, q.values_N)
    if w > 1:
        zm, pick, _centre = binned(m, w)
        # a bin whose steps all lack a value still opens its first step
        first = np.arange(n_cols)[None, :] * w
        pick = np.where(pick >= 0, pick, np.where(present, first, -1))
    else:
        zm, pick = m, np.where(present, np.arange(n_cols)[None, :], -1)
    ev = None if q.evidence_N is None else np.asarray(q.evidence_N)
    if ev is not None:
        sure = by_cell(p, ev == "sure", w)
        unsure = present & ~sure
    else:
        sure = unsure = np.zeros_like(present)
    if sure_only:  # blank instead of washed out
        fill = np.where(unsure, "#ffffff", credit_fill(zm, z))
    else:
        fill = credit_fill(zm, z, washed=unsure)
    width, height = f"{max(cw - gx, 0.3):.2f}".rstrip("0").rstrip("."), f"{rh - gy:.1f}".rstrip("0").rstrip(".")
    rows = []
    for i in range(zm.shape[0]):
        lo = int(p.rollout_offsets[i])
        cells = []
        for j in np.flatnonzero(present[i]).tolist():
            n = lo + int(pick[i, j])  # the step the cell opens (a bin's strongest)
            t = int(p.step_t[n])
            if w == 1:
                tip = f"{head_N[n]} · {value_name} {_num(zm[i, j])}"
                if ev is not None:
                    tip += f" · evidence: {_EV_WORDS.get(str(ev[n]), str(ev[n]))}"
            else:
                a, b = j * w, min((j + 1) * w, int(p.rollout_len[i])) - 1  # 0-based
                tip = (f"rollout r{int(p.rollout_index[i])}, steps {a}–{b}: {value_name} {_num(zm[i, j])} "
                       f"(mean of {b - a + 1}) · strongest: {head_N[n].split(', ', 1)[1]} ({_num(m[i, t - 1])})")
                if ev is not None:
                    tip += " · evidence: " + ("sure (a step of the bin)" if sure[i, j] else "not sure")
            pk = f' data-pick="{i if row_ids is None else row_ids[i]}:{t}"' if pickable else ""
            cells.append(f'<rect x="{lw + j * cw:.1f}" width="{width}" height="{height}" fill="{fill[i, j]}"{pk}>'
                         f'<title>{esc(tip)}</title></rect>')
        rows.append(f'<g transform="translate(0,{_TITLE_H + i * rh:.1f})">{"".join(cells)}</g>')
    return "".join(rows)


def rows_only(p: Process, rows: Sequence[int]) -> tuple[Process, np.ndarray, list[int]]:
    """``(q, keep_N, ids)``: a drawing-only view of ``p`` holding the rollouts ``rows``
    (positions, drawn ascending: ``ids``), ``keep_N`` (N,) the mask of their steps in ``p``'s
    step order. Its rollout and step arrays are ``p``'s restricted (``step_rollout``
    renumbered 0..len(ids) - 1); its anchor and pair arrays are ``p``'s own (counts over every
    rollout), so it serves drawings and labels, never an estimator. ValueError for a position
    outside 0..R - 1."""
    n_rows = len(p.rollout_len)
    ids = sorted({int(r) for r in rows})
    if not ids:
        raise ValueError("rows: name at least one rollout to draw")
    if not (0 <= ids[0] and ids[-1] < n_rows):
        raise ValueError(f"rows must be rollout positions 0..{n_rows - 1}, got {ids[0] if ids[0] < 0 else ids[-1]}")
    sel = np.asarray(ids, dtype=np.int64)
    keep = np.zeros(n_rows, dtype=bool)
    keep[sel] = True
    keep_N = keep[p.step_rollout]
    new = np.cumsum(keep) - 1  # a kept rollout's new position
    lens = p.rollout_len[sel]
    cut = None if p.rollout_truncated is None else p.rollout_truncated[sel]
    q = dataclasses.replace(
        p, rollout_group=p.rollout_group[sel], rollout_offsets=np.concatenate([[0], np.cumsum(lens)]),
        rollout_success=p.rollout_success[sel], rollout_score=p.rollout_score[sel],
        rollout_has_score=p.rollout_has_score[sel], rollout_index=p.rollout_index[sel], rollout_truncated=cut,
        step_rollout=new[p.step_rollout[keep_N]], step_t=p.step_t[keep_N], step_state=p.step_state[keep_N],
        step_sa=p.step_sa[keep_N], step_next=p.step_next[keep_N], step_reward=p.step_reward[keep_N])
    return q, keep_N, ids


def heat_rows(p: Process, limit: int | None = None, keep: Iterable[int] = ()) -> list[int] | None:
    """The rollouts a heatmap of ``p`` draws (positions in ``p``, ascending), for ``rows=`` of
    :func:`heatmaps_svg`: None (every one) up to ``limit`` (default :data:`HEAT_ROWS`) rollouts;
    beyond, the first ``limit // 2`` that succeeded and the first that failed, in file order (the
    other outcome fills what one lacks, so both stay in view), and the positions of ``keep`` (a
    chosen rollout) too.
    Without it, the cell budget bins steps but never rollouts: 4,000 rollouts of 25 steps under 8
    estimators were 832,000 cells, a 126 MB drawing."""
    n, limit = len(p.rollout_len), HEAT_ROWS if limit is None else int(limit)
    if n <= limit:
        return None
    success = np.asarray(p.rollout_success, dtype=bool)
    ok, bad = np.flatnonzero(success), np.flatnonzero(~success)
    k_ok = min(len(ok), max(limit // 2, limit - len(bad)))
    kept = [int(i) for i in keep if 0 <= int(i) < n]
    return sorted(set(ok[:k_ok].tolist() + bad[:limit - k_ok].tolist() + kept))


def credit_heatmaps_svg(credits: Mapping[str, Credits], field: str = "step_advantage", *,
                        zmax: float | None = None, evidence: Mapping[str, np.ndarray] | None = None,
                        sure_only: bool = False, cols: int = 2, standalone: bool = False,
                        extra: Mapping[str, np.ndarray] | None = None, rows: Sequence[int] | None = None) -> str:
    """:func:`heatmaps_svg` of estimators on one group: a panel per entry of ``credits`` (its
    key as title, ``field`` of :data:`crbc.viz.core.credits.FIELDS` as values; an estimator without
    that field is left out), each with ``evidence[name]`` when given, then a panel per entry of
    ``extra`` (title -> (N,) values in the process's step order, NaN where a step has none: the
    trainer's own advantage, drawn on the same colours). Pass the page's
    :func:`shared_range` as ``zmax`` to keep its caption's numbers; ``rows``: draw only these
    rollouts (:func:`heat_rows`)."""
    names = [n for n in credits if field_N(credits[n], field) is not None]
    if not names:
        raise ValueError(f"no estimator here has the field {field!r}")
    p = credits[names[0]].process
    evidence = evidence or {}
    panels = [Panel(n, field_N(credits[n], field), evidence.get(n)) for n in names]
    panels += [Panel(n, np.asarray(v, dtype=float)) for n, v in (extra or {}).items()]
    return heatmaps_svg(p, panels, zmax=zmax, value_name="value", scale_name=field_label(field),
                        sure_only=sure_only, cols=cols, standalone=standalone, rows=rows)


def credit_matrix(c: Credits, field: str) -> np.ndarray:
    """Rollouts x steps (NaN padded) of a per-step field of :data:`crbc.viz.core.credits.FIELDS`."""
    return step_matrix(c.process, field_N(c, field))


def shared_range(all_credits: Iterable[Credits], field: str) -> float:
    """One symmetric colour range for several heatmaps: :func:`~crbc.viz.core.scales.
    symmetric_range` of ``field`` over all of them, so a colour means the same number in every
    panel."""
    return symmetric_range(*[field_N(c, field) for c in all_credits])
