"""The merged process of one group as static SVG: the Inspector's clickable overview, the
Bellman backups' graph (:func:`graph_svg`) and the Lesson's graph, which is also its control
panel (:func:`lesson_graph_svg`).

The picture of the shared :func:`crbc.viz.layout.layout` (layers left to right, the boundaries
z+ and z- in a last column), built as SVG text on the server (no script on the page).
Every clickable element carries ``data-pick`` (sent back by :func:`ui.svg_view.svg_view`) and
a tooltip; every user string is HTML-escaped.
"""

from __future__ import annotations

import numpy as np

from crbc.explain.anchor_names import anchor_labels
from crbc.process import Process
from crbc.viz.layout import LABEL_ALL_MAX, X_GAP, Y_GAP, check_single, fmt_value, layout, rollout_edges
from crbc.viz.style import (
    HIGHLIGHT,
    NO_VALUE_COLOR,
    Z_MINUS_COLOR,
    Z_PLUS_COLOR,
    cut,
    esc,
    signed_color,
    symmetric_range,
    v_color,
)

SHOWN_WIDTH_PX = 600.0  # the width the drawing is made for: node and text sizes assume it


def _tooltip(label: str, anchor: str, v: float, visits: int, value_name: str) -> str:
    lines = [cut(row, 120) for row in anchor[:4000].split("\n")[:8]]
    return esc(f"{label}  {value_name} = {fmt_value(v)}, visits {visits}\n" + "\n".join(lines))


def _boundaries(bx: np.ndarray, by: np.ndarray, side: float, u: float, names: tuple[str, str]) -> str:
    """The two boundaries at (bx, by) = [z+, z-]: squares of half-side ``side``, green and red,
    each named (z+ above, z- below) and titled."""
    out = []
    for x, y, name, colour, dy in zip(bx, by, names, (Z_PLUS_COLOR, Z_MINUS_COLOR),
                                      (-side - 5 * u, side + 14 * u), strict=True):
        out.append(f'<g><title>{name}</title><rect x="{x - side:.1f}" y="{y - side:.1f}" width="{2 * side:.1f}" '
                   f'height="{2 * side:.1f}" fill="{colour}"/><text x="{x:.1f}" y="{y + dy:.1f}" '
                   f'text-anchor="middle">{name}</text></g>')
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


def graph_svg(p: Process, value_S: np.ndarray, *, selected: int | None = None, value_name: str = "V",
              highlight_rollout: int | None = None, delta_S: np.ndarray | None = None,
              signed: bool = False, shown_width_px: float = SHOWN_WIDTH_PX) -> str:
    """The anchors of ``p`` (one group) as circles coloured by ``value_S`` (the V scale 0..1, or
    with ``signed`` the credit scale centred on 0; NaN grey), their area growing with visits; a
    grey line per observed transition; the ``selected`` anchor ringed in the highlight colour;
    ``highlight_rollout``'s path drawn over the lines in the highlight colour; ``delta_S`` (e.g.
    V^(K) - V^(K-1)) rings on the anchors that moved (see :func:`_rings`). Up to
    :data:`~crbc.viz.layout.LABEL_ALL_MAX` anchors every name is drawn; beyond that only the
    selected anchor's and the highlighted path's (every anchor names itself in its tooltip).
    Sizes are in units of the drawing, scaled so that at ``shown_width_px`` pixels wide a label
    is 12 px."""
    check_single(p)
    lay = layout(p)
    n = p.n_states
    labels = anchor_labels(p)
    values = np.asarray(value_S, dtype=float)
    xs = np.concatenate([lay.x_S, lay.x_B]).astype(float)
    ys = np.concatenate([lay.y_S, lay.y_B]).astype(float)
    x0 = float(xs.min()) - X_GAP * 0.35
    x1 = float(xs.max()) + X_GAP * 0.35
    for _ in range(2):  # room right of the boundaries for their labels (about 60 shown pixels)
        u = max((x1 - x0) / shown_width_px, 0.5)  # drawing units per shown pixel
        x1 = float(xs.max()) + max(X_GAP * 0.35, 62 * u)
    u = max((x1 - x0) / shown_width_px, 0.5)
    y0, y1 = float(ys.min()) - Y_GAP * 0.5, float(ys.max()) + Y_GAP * 0.5 + 22 * u  # + the legend
    sa, nxt, _count = p.transitions()
    pairs = sorted({(int(p.sa_state[a]), int(x)) for a, x in zip(sa.tolist(), nxt.tolist(), strict=True)})
    parts = [f'<g stroke="#c7cdd4" stroke-width="{u:.2f}">'
             + "".join(f'<line x1="{xs[a]:.1f}" y1="{ys[a]:.1f}" x2="{xs[x]:.1f}" y2="{ys[x]:.1f}"/>'
                       for a, x in pairs if a != x) + "</g>"]
    on_path: set[int] = set()
    if highlight_rollout is not None:
        path = rollout_edges(p, highlight_rollout)
        on_path = {a for a, _, _ in path}
        parts.append(f'<g stroke="{HIGHLIGHT}" stroke-width="{3 * u:.2f}" pointer-events="none">'
                     + "".join(f'<line x1="{xs[a]:.1f}" y1="{ys[a]:.1f}" x2="{xs[x]:.1f}" y2="{ys[x]:.1f}"/>'
                               for a, _, x in path if a != x) + "</g>")
    n_max = max(int(p.n_s.max()), 1)
    radius = (4 + 9 * np.sqrt(p.n_s / n_max)) * u
    known = np.isfinite(values)
    colours = (signed_color(values, symmetric_range(values)) if signed else v_color(values))
    for s in range(n):
        r = radius[s]
        fill = colours[s] if known[s] else NO_VALUE_COLOR
        ring = (f'stroke="{HIGHLIGHT}" stroke-width="{3.5 * u:.2f}"' if s == selected
                else f'stroke="#333" stroke-width="{0.6 * u:.2f}"')
        name = ""
        if n <= LABEL_ALL_MAX or s == selected or s in on_path:
            weight = ' font-weight="600"' if s == selected else ""
            name = (f'<text x="{xs[s]:.1f}" y="{ys[s] + r + 13 * u:.1f}" text-anchor="middle"{weight}>'
                    f'{esc(labels[s][:40])}</text>')
        parts.append(f'<g data-pick="{s}"><title>{_tooltip(labels[s], p.state_anchor[s], values[s], int(p.n_s[s]), value_name)}'
                     f'</title><circle cx="{xs[s]:.1f}" cy="{ys[s]:.1f}" r="{r:.1f}" fill="{fill}" {ring}/>'
                     f'{name}</g>')
    parts.append(_boundaries(xs[n:], ys[n:], 11 * u, u, ("z+ success (V=1)", "z- failure (V=0)")))
    if delta_S is not None:
        parts.append(_rings(xs, ys, radius, delta_S, u))
    parts.append(_legend(x0, y1, u, values, value_name, signed))
    return (f'<svg class="crbc-graph" viewBox="{x0:.1f} {y0:.1f} {x1 - x0:.1f} {y1 - y0:.1f}" width="100%" '
            f'font-size="{12 * u:.1f}" fill="#31333f" role="img" aria-label="anchor graph" '
            f'style="font-family:\'Source Sans\',sans-serif">{"".join(parts)}</svg>')


def _first_steps(p: Process) -> dict[tuple[int, int, int], tuple[int, int]]:
    """(anchor, action index, successor) -> (rollout position, step t, 0-based as in the files) of
    its first occurrence."""
    first: dict[tuple[int, int, int], tuple[int, int]] = {}
    for i in range(len(p.rollout_offsets) - 1):
        for k in range(int(p.rollout_offsets[i]), int(p.rollout_offsets[i + 1])):
            key = (int(p.step_state[k]), int(p.sa_action[p.step_sa[k]]), int(p.step_next[k]))
            first.setdefault(key, (i, int(p.step_t[k]) - 1))
    return first


def lesson_graph_svg(p: Process, value_S: np.ndarray, *, value_name: str = "V",
                     delta_S: np.ndarray | None = None, shown_width_px: float = 520.0,
                     max_height_px: int = 420) -> str:
    """The Lesson's group as a graph that is also its control panel (SVG, for
    :func:`ui.svg_view.svg_view`). Anchors coloured and numbered by ``value_S`` (NaN: grey, no
    number), the boundaries, one line per observed (anchor, successor), and three kinds of
    pickable elements, each a ``data-pick`` of ``kind:a:b``:

    - ``edge:i:t``, a diamond on each observed (anchor, action, successor) at 60 % of its line
      (self-loops above the anchor), its action written over it: its first step (rollout
      position ``i``, step ``t``, 0-based as in the files), to edit;
    - ``outcome:i:0``, one chip per rollout in a column right of the boundary it reached
      (its id in the file and ✓ / ✗), to flip that rollout's outcome;
    - ``node:s:0``, the anchors.

    ``delta_S`` adds a ring on each anchor whose value moved by more than 5e-5 (blue: rose, red:
    fell) with the change written beside it. Sizes assume the drawing is ``shown_width_px`` wide
    (the Lesson's graph column on a laptop); in a wider column the drawing grows up to
    ``max_height_px`` tall and is centred."""
    lay = layout(p)
    n = p.n_states
    labels = anchor_labels(p)
    xs = np.concatenate([lay.x_S, lay.x_B]).astype(float)
    ys = np.concatenate([lay.y_S, lay.y_B]).astype(float)
    v = np.asarray(value_S, dtype=float)
    # outcome chips: per boundary, columns of four beside it
    gap = (float(lay.x_B[0]) - float(lay.x_S.min())) / max(float(lay.layer_S.max()) + 1, 1.0)
    chips, count = [], {0: 0, 1: 0}
    for i in range(len(p.rollout_offsets) - 1):
        ok = bool(p.rollout_success[i])
        b = 0 if ok else 1
        k = count[b]
        count[b] += 1
        chips.append((i, ok, float(lay.x_B[b]) + 0.55 * gap * (1 + k // 4),
                      float(lay.y_B[b]) + (-1 if ok else 1) * 22 * (k % 4)))
    x0 = float(xs.min()) - 60
    x1 = max([float(xs.max())] + [c[2] for c in chips]) + 90
    y0 = min([float(ys.min())] + [c[3] for c in chips]) - 45
    y1 = max([float(ys.max())] + [c[3] for c in chips]) + 50
    u = max((x1 - x0) / shown_width_px, 0.5)

    first = _first_steps(p)
    pairs = sorted({(s, x) for s, _a, x in first})
    parts = [f'<g stroke="#9aa3ad" stroke-width="{1.5 * u:.2f}">'
             + "".join(f'<line x1="{xs[s]:.1f}" y1="{ys[s]:.1f}" x2="{xs[x]:.1f}" y2="{ys[x]:.1f}"/>'
                       for s, x in pairs if s != x) + "</g>"]
    seen: dict[tuple[int, int], int] = {}
    for (s, act, x), (i, t) in first.items():
        j = seen[(s, x)] = seen.get((s, x), -1) + 1
        if s == x:
            px, py = xs[s], ys[s] - 28 - 22 * j
        else:
            px, py = xs[s] + 0.6 * (xs[x] - xs[s]), ys[s] + 0.6 * (ys[x] - ys[s]) - 24 * j
        name = p.action_names[act]
        target = "z+" if x == n else "z-" if x == n + 1 else labels[x]
        d = 5.5 * u
        parts.append(
            f'<g data-pick="edge:{i}:{t}"><title>{esc(f"{labels[s]} --{name}--> {target}")}&#10;'
            f'click: edit rollout {int(p.rollout_index[i])}, step {t}</title>'
            f'<polygon points="{px:.1f},{py - d:.1f} {px + d:.1f},{py:.1f} {px:.1f},{py + d:.1f} {px - d:.1f},{py:.1f}" '
            f'fill="white" stroke="#9aa3ad" stroke-width="{1.5 * u:.2f}"/>'
            f'<text x="{px:.1f}" y="{py - d - 3 * u:.1f}" text-anchor="middle" font-size="{11 * u:.1f}" '
            f'fill="#444">{esc(name[:24])}</text></g>')
    for s in range(n):
        known = bool(np.isfinite(v[s]))
        fill = v_color(v[s])[0] if known else NO_VALUE_COLOR
        value = (f'<tspan x="{xs[s]:.1f}" dy="{14 * u:.1f}">{esc(value_name)}={v[s]:.3f}</tspan>'
                 if known else "")
        parts.append(
            f'<g data-pick="node:{s}:0"><title>{esc(labels[s])}: visited {int(p.n_s[s])} times</title>'
            f'<circle cx="{xs[s]:.1f}" cy="{ys[s]:.1f}" r="{15 * u:.1f}" fill="{fill}" stroke="#333" '
            f'stroke-width="{u:.2f}"/><text x="{xs[s]:.1f}" y="{ys[s] + 29 * u:.1f}" text-anchor="middle">'
            f'<tspan font-weight="600">{esc(labels[s][:40])}</tspan>{value}</text></g>')
    parts.append(_boundaries(xs[n:], ys[n:], 12 * u, u, ("z+ (V=1)", "z- (V=0)")))
    for i, ok, cx, cy in chips:
        colour = Z_PLUS_COLOR if ok else Z_MINUS_COLOR
        rid = int(p.rollout_index[i])
        parts.append(
            f'<g data-pick="outcome:{i}:0"><title>rollout {rid} {"succeeded" if ok else "failed"}: click to flip '
            f'its outcome</title><circle cx="{cx:.1f}" cy="{cy:.1f}" r="{7 * u:.1f}" fill="white" stroke="{colour}" '
            f'stroke-width="{2 * u:.2f}"/><text x="{cx + 10 * u:.1f}" y="{cy + 4 * u:.1f}" fill="{colour}">'
            f'{rid} {"✓" if ok else "✗"}</text></g>')
    if delta_S is not None:
        d_S = np.asarray(delta_S, dtype=float)
        for s in range(n):
            if np.isfinite(d_S[s]) and abs(d_S[s]) > 5e-5:
                colour = "#2166ac" if d_S[s] > 0 else "#b2182b"
                parts.append(f'<g class="crbc-moved" pointer-events="none"><circle cx="{xs[s]:.1f}" cy="{ys[s]:.1f}" r="{21 * u:.1f}" '
                             f'fill="none" stroke="{colour}" stroke-width="{3 * u:.2f}"/>'
                             f'<text x="{xs[s] + 20 * u:.1f}" y="{ys[s] - 18 * u:.1f}" fill="{colour}">'
                             f'{d_S[s]:+.3f}</text></g>')
    return (f'<svg class="crbc-lesson-graph" viewBox="{x0:.1f} {y0:.1f} {x1 - x0:.1f} {y1 - y0:.1f}" '
            f'width="100%" font-size="{12 * u:.1f}" fill="#31333f" role="img" aria-label="the group as a graph" '
            f'style="max-height:{max_height_px}px;font-family:\'Source Sans\',sans-serif">{"".join(parts)}</svg>')
