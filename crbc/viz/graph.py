"""The merged process of one group as static SVG: the Inspector's clickable overview and the
Bellman backups' graph (:func:`graph_svg`); the Lesson's graph is :mod:`crbc.viz.lesson_graph`.

The picture of the shared :func:`crbc.viz.core.graph_layout.layout` (layers left to right, the boundaries
z+ and z- in a last column), built as SVG text on the server (no script on the page).
Every clickable element carries ``data-pick`` (sent back by :func:`ui.core.svg_view.svg_view`) and
a tooltip; every user string is HTML-escaped.
"""

from __future__ import annotations

import numpy as np

from crbc.explain.anchor_names import anchor_labels
from crbc.process import Process
from crbc.viz.core.graph_layout import LABEL_ALL_MAX, X_GAP, Y_GAP, check_single, drawn, rollout_edges
from crbc.viz.core.scales import symmetric_range
from crbc.viz.core.style import HIGHLIGHT, NO_VALUE_COLOR, Z_MINUS_COLOR, Z_PLUS_COLOR, signed_color, v_color
from crbc.viz.core.svg import FONT_FAMILY
from crbc.viz.core.text import cut, esc, fmt_value

__all__ = ["boundaries_svg", "graph_svg", "SHOWN_WIDTH_PX"]

SHOWN_WIDTH_PX = 600.0  # the width the drawing is made for: node and text sizes assume it


def _neighbours(p: Process, s: int | None) -> list[int]:
    """The anchors one observed step away from anchor ``s`` (before or after it); none for None."""
    if s is None:
        return []
    n = p.n_states
    inner = p.step_next < n
    src, dst = p.step_state[inner], p.step_next[inner]
    return sorted(set(dst[src == s].tolist()) | set(src[dst == s].tolist()))


def _drawn_pairs(p: Process, is_shown: np.ndarray) -> list[tuple[int, int]]:
    """The distinct observed moves ``(anchor, next)`` between two drawn nodes (``is_shown``: one
    flag per anchor, then per boundary), self-loops left out, in ascending order; as arrays, so
    a 100,000-step group's moves cost milliseconds."""
    sa, nxt, _count = p.transitions()
    a = np.asarray(p.sa_state, dtype=np.int64)[sa]
    x = np.asarray(nxt, dtype=np.int64)
    keep = (a != x) & is_shown[a] & is_shown[x]
    key = np.unique(a[keep] * len(is_shown) + x[keep])
    return list(zip((key // len(is_shown)).tolist(), (key % len(is_shown)).tolist(), strict=True))


def _tooltip(label: str, anchor: str, v: float, visits: int, value_name: str) -> str:
    lines = [cut(row, 120) for row in anchor[:4000].split("\n")[:8]]
    return esc(f"{label}  {value_name} = {fmt_value(v)}, visits {visits}\n" + "\n".join(lines))


def boundaries_svg(bx: np.ndarray, by: np.ndarray, side: float, u: float, names: tuple[str, str]) -> str:
    """The two boundaries at (bx, by) = [z+, z-]: squares of half-side ``side``, green and red,
    each named (z+ above, z- below, on a white halo: a dense drawing's last column may reach
    under the name) and titled."""
    out = []
    for x, y, name, colour, dy in zip(bx, by, names, (Z_PLUS_COLOR, Z_MINUS_COLOR),
                                      (-side - 5 * u, side + 14 * u), strict=True):
        out.append(f'<g><title>{name}</title><rect x="{x - side:.1f}" y="{y - side:.1f}" width="{2 * side:.1f}" '
                   f'height="{2 * side:.1f}" fill="{colour}"/><text x="{x:.1f}" y="{y + dy:.1f}" '
                   f'text-anchor="middle" paint-order="stroke" stroke="white" stroke-width="{3 * u:.2f}" '
                   f'stroke-linejoin="round">{name}</text></g>')
    return "".join(out)


def _legend(x0: float, y1: float, u: float, value_S: np.ndarray, value_name: str, signed: bool) -> str:
    """A colour bar at the bottom left: the V scale 0..1, or the credit scale -z..+z (``signed``)."""
    if signed:
        z = symmetric_range(value_S)
        marks = np.linspace(-z, z, 7)
        colours, lo, hi, gid = signed_color(marks, z), f"{-z:+.2g}", f"{z:+.2g}", "crbc-credit-scale"
    else:
        colours, lo, hi, gid = v_color(np.linspace(0, 1, 6)), "0", "1", "crbc-v-scale"
    stops = "".join(f'<stop offset="{q:.2f}" stop-color="{c}"/>'
                    for q, c in zip(np.linspace(0, 1, len(colours)), colours, strict=True))
    lx, ly, lw = x0 + 20 * u, y1 - 14 * u, 110 * u
    return (f'<defs><linearGradient id="{gid}">{stops}</linearGradient></defs>'
            f'<text x="{lx - 4 * u:.1f}" y="{ly + 8 * u:.1f}" text-anchor="end">{lo}</text>'
            f'<rect x="{lx:.1f}" y="{ly:.1f}" width="{lw:.1f}" height="{8 * u:.1f}" fill="url(#{gid})"/>'
            f'<text x="{lx + lw + 4 * u:.1f}" y="{ly + 8 * u:.1f}">{hi}  {esc(value_name)}</text>')


def _rings(xs: np.ndarray, ys: np.ndarray, radius: np.ndarray, delta_S: np.ndarray, u: float) -> str:
    """A ring around each anchor whose value moved (blue: rose, red: fell), its width growing with
    |Δ|; the eight largest moves written beside their anchors. Not clickable."""
    d = np.asarray(delta_S, dtype=float)
    moved = np.flatnonzero(np.isfinite(d) & (np.abs(d) > 1e-9))
    if not len(moved):
        return ""
    dmax = float(np.abs(d[moved]).max())
    top = set(moved[np.argsort(-np.abs(d[moved]))[:8]].tolist())
    out = []
    for s in moved.tolist():
        colour = "#2166ac" if d[s] > 0 else "#b2182b"
        out.append(f'<circle cx="{xs[s]:.1f}" cy="{ys[s]:.1f}" r="{radius[s] + 4.5 * u:.1f}" fill="none" '
                   f'stroke="{colour}" stroke-width="{(1.5 + 3.5 * abs(d[s]) / dmax) * u:.2f}"/>')
        if s in top:
            out.append(f'<text x="{xs[s] + radius[s] + 5 * u:.1f}" y="{ys[s] - radius[s] - 3 * u:.1f}" '
                       f'fill="{colour}" font-size="{11 * u:.1f}">{d[s]:+.3f}</text>')
    return f'<g class="crbc-moved" pointer-events="none">{"".join(out)}</g>'


def _note_lines(note: str, width_px: float) -> list[str]:
    """``note`` as lines of 12 px text no wider than ``width_px`` (about 6 px a character), cut
    after a "; " or ", " where it must be, else between words."""
    most = max(int(width_px / 6.0), 20)
    lines: list[str] = []
    while len(note) > most:
        head = note[:most]
        space = head.rfind(" ")
        cut = max(head.rfind("; ") + 1, head.rfind(", ") + 1) or (space if space > 0 else most)
        lines.append(note[:cut].rstrip())
        note = note[cut:].lstrip()
    return lines + [note]


def graph_svg(p: Process, value_S: np.ndarray, *, selected: int | None = None, value_name: str = "V",
              highlight_rollout: int | None = None, delta_S: np.ndarray | None = None,
              signed: bool = False, shown_width_px: float = SHOWN_WIDTH_PX) -> str:
    """The anchors of ``p`` (one group) as circles coloured by ``value_S`` (the V scale 0..1, or
    with ``signed`` the credit scale centred on 0; NaN grey), their area growing with visits; a
    grey line per observed transition; the ``selected`` anchor ringed in the highlight colour;
    ``highlight_rollout``'s path drawn over the lines in the highlight colour; ``delta_S`` (e.g.
    V^(K) - V^(K-1)) rings on the anchors that moved (see :func:`_rings`). Up to
    :data:`~crbc.viz.core.graph_layout.LABEL_ALL_MAX` anchors every name is drawn; beyond that only the
    selected anchor's and the highlighted path's (every anchor names itself in its tooltip).
    Sizes are in units of the drawing, scaled so that at ``shown_width_px`` pixels wide a label
    is 12 px. A group of more than :data:`~crbc.viz.core.graph_layout.MAX_DRAWN` anchors is
    drawn cut (:func:`~crbc.viz.core.graph_layout.drawn_anchors`): the highlighted path, the
    selected anchor and its neighbours, then the busiest anchors, laid out alone
    (:func:`~crbc.viz.core.graph_layout.drawn_layout`); a line under the legend says how many
    of how many are drawn."""
    check_single(p)
    n = p.n_states
    path = rollout_edges(p, highlight_rollout) if highlight_rollout is not None else []
    d = drawn(p, keep=[*([selected] if selected is not None else []), *(a for a, _, _ in path),
                       *_neighbours(p, selected)])
    lay, is_shown = d.layout, d.mask
    labels = anchor_labels(p)
    values = np.asarray(value_S, dtype=float)
    xs = np.concatenate([lay.x_S, lay.x_B]).astype(float)
    ys = np.concatenate([lay.y_S, lay.y_B]).astype(float)
    x0 = float(np.nanmin(xs)) - X_GAP * 0.35
    x1 = float(np.nanmax(xs)) + X_GAP * 0.35
    for _ in range(2):  # room right of the boundaries for their labels (about 60 shown pixels)
        u = max((x1 - x0) / shown_width_px, 0.5)  # drawing units per shown pixel
        x1 = float(np.nanmax(xs)) + max(X_GAP * 0.35, 62 * u)
    u = max((x1 - x0) / shown_width_px, 0.5)
    top = max(Y_GAP * 0.5, 30 * u)  # room for the top row's largest circle and its ring's label
    y0, y1 = float(np.nanmin(ys)) - top, float(np.nanmax(ys)) + Y_GAP * 0.5 + 22 * u  # + the legend
    note = _note_lines(d.note(highlight_rollout, selected), (x1 - x0) / u - 30) if d.cut else []
    y1 += 18 * u * len(note)  # the lines that say how many anchors are drawn
    parts = [f'<g stroke="#c7cdd4" stroke-width="{u:.2f}">'
             + "".join(f'<line x1="{xs[a]:.1f}" y1="{ys[a]:.1f}" x2="{xs[x]:.1f}" y2="{ys[x]:.1f}"/>'
                       for a, x in _drawn_pairs(p, is_shown)) + "</g>"]
    on_path: set[int] = set()
    if highlight_rollout is not None:
        on_path = {a for a, _, _ in path}
        parts.append(f'<g stroke="{HIGHLIGHT}" stroke-width="{3 * u:.2f}" pointer-events="none">'
                     + "".join(f'<line x1="{xs[a]:.1f}" y1="{ys[a]:.1f}" x2="{xs[x]:.1f}" y2="{ys[x]:.1f}"/>'
                               for a, _, x in path if a != x and is_shown[a] and is_shown[x]) + "</g>")
    n_max = max(int(p.n_s.max()), 1)
    radius = (4 + 9 * np.sqrt(p.n_s / n_max)) * u
    known = np.isfinite(values)
    shown = d.shown.tolist()
    fills = (signed_color(values[shown], symmetric_range(values)) if signed else v_color(values[shown]))
    names = []  # drawn over every circle (a dense drawing's next row would hide them)
    for s, fill in zip(shown, fills, strict=True):
        r = radius[s]
        fill = fill if known[s] else NO_VALUE_COLOR
        ring = (f'stroke="{HIGHLIGHT}" stroke-width="{3.5 * u:.2f}"' if s == selected
                else f'stroke="#333" stroke-width="{0.6 * u:.2f}"')
        if n <= LABEL_ALL_MAX or s == selected or s in on_path:
            weight = ' font-weight="600"' if s == selected else ""
            names.append(f'<text x="{xs[s]:.1f}" y="{ys[s] + r + 13 * u:.1f}" text-anchor="middle"{weight}>'
                         f'{esc(labels[s][:40])}</text>')
        parts.append(f'<g data-pick="{s}"><title>{_tooltip(labels[s], p.state_anchor[s], values[s], int(p.n_s[s]), value_name)}'
                     f'</title><circle cx="{xs[s]:.1f}" cy="{ys[s]:.1f}" r="{r:.1f}" fill="{fill}" {ring}/></g>')
    parts.append(f'<g class="crbc-names" pointer-events="none" paint-order="stroke" stroke="white" stroke-width="{3 * u:.2f}" '
                 f'stroke-linejoin="round">{"".join(names)}</g>')
    parts.append(boundaries_svg(xs[n:], ys[n:], 11 * u, u, ("z+ success (V=1)", "z- failure (V=0)")))
    if delta_S is not None:
        moved = np.asarray(delta_S, dtype=float).copy()
        moved[~is_shown[:n]] = np.nan  # rings only on drawn anchors
        parts.append(_rings(xs, ys, radius, moved, u))
    parts.append(_legend(x0, y1 - 18 * u * len(note), u, values, value_name, signed))
    for i, line in enumerate(note):
        parts.append(f'<text class="crbc-graph-cut" x="{x0 + 20 * u:.1f}" '
                     f'y="{y1 - 4 * u - 18 * u * (len(note) - 1 - i):.1f}">{esc(line)}</text>')
    return (f'<svg class="crbc-graph" viewBox="{x0:.1f} {y0:.1f} {x1 - x0:.1f} {y1 - y0:.1f}" width="100%" '
            f'font-size="{12 * u:.1f}" fill="#31333f" role="img" aria-label="anchor graph" '
            f'style="{FONT_FAMILY}">{"".join(parts)}</svg>')
