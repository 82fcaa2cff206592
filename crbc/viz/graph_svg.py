"""The merged process of one group as a static SVG: the Inspector's clickable overview.

The same picture as :func:`crbc.viz.graph.graph_figure` (the shared :func:`crbc.viz.layout.layout`:
layers left to right, the boundaries z+ and z- in a last column), built as SVG text on the
server so the page needs no plotly.js. Each anchor is a ``<g data-pick="<state index>">`` (a
click on it can be sent back by :func:`ui.svg_view.svg_view`) with its name, value, visits and
the first lines of its text in a tooltip. Every user string is HTML-escaped.
"""

from __future__ import annotations

import html

import numpy as np

from crbc.explain.anchor_names import anchor_labels
from crbc.process import Process
from crbc.viz.layout import LABEL_ALL_MAX, X_GAP, Y_GAP, _check_single, _fmt, layout
from crbc.viz.style import HIGHLIGHT, Z_MINUS_COLOR, Z_PLUS_COLOR, cut, v_color

SHOWN_WIDTH_PX = 600.0  # the width the drawing is made for: node and text sizes assume it


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _tooltip(label: str, anchor: str, v: float, visits: int, value_name: str) -> str:
    lines = [cut(row, 120) for row in anchor[:4000].split("\n")[:8]]
    return _esc(f"{label}  {value_name} = {_fmt(v)}, visits {visits}\n" + "\n".join(lines))


def graph_svg(p: Process, value_S: np.ndarray, *, selected: int | None = None,
              value_name: str = "V") -> str:
    """The anchors of ``p`` (one group) as circles coloured by ``value_S`` on the V scale (0..1),
    their area growing with visits; a grey line per observed transition; the ``selected``
    anchor ringed in the highlight colour and always labelled. Up to
    :data:`~crbc.viz.layout.LABEL_ALL_MAX` anchors every name is drawn; beyond that only the
    selected one (every anchor names itself in its tooltip). Sizes are in units of the drawing,
    scaled so that at :data:`SHOWN_WIDTH_PX` pixels wide a label is 12 px."""
    _check_single(p)
    lay = layout(p)
    n = p.n_states
    labels = anchor_labels(p)
    xs = np.concatenate([lay.x_S, lay.x_B]).astype(float)
    ys = np.concatenate([lay.y_S, lay.y_B]).astype(float)
    x0 = float(xs.min()) - X_GAP * 0.35
    x1 = float(xs.max()) + X_GAP * 0.35
    for _ in range(2):  # room right of the boundaries for their labels (about 60 shown pixels)
        u = max((x1 - x0) / SHOWN_WIDTH_PX, 0.5)  # drawing units per shown pixel
        x1 = float(xs.max()) + max(X_GAP * 0.35, 62 * u)
    u = max((x1 - x0) / SHOWN_WIDTH_PX, 0.5)
    y0, y1 = float(ys.min()) - Y_GAP * 0.5, float(ys.max()) + Y_GAP * 0.5 + 22 * u  # + the legend
    sa, nxt, _count = p.transitions()
    pairs = sorted({(int(p.sa_state[a]), int(x)) for a, x in zip(sa.tolist(), nxt.tolist(), strict=True)})
    edges = "".join(f'<line x1="{xs[a]:.1f}" y1="{ys[a]:.1f}" x2="{xs[x]:.1f}" y2="{ys[x]:.1f}"/>'
                    for a, x in pairs if a != x)
    n_max = max(int(p.n_s.max()), 1)
    colours = v_color(np.asarray(value_S, dtype=float))
    nodes = []
    for s in range(n):
        r = (4 + 9 * np.sqrt(p.n_s[s] / n_max)) * u
        ring = (f'stroke="{HIGHLIGHT}" stroke-width="{3.5 * u:.2f}"' if s == selected
                else f'stroke="#333" stroke-width="{0.6 * u:.2f}"')
        name = ""
        if n <= LABEL_ALL_MAX or s == selected:
            weight = ' font-weight="600"' if s == selected else ""
            name = (f'<text x="{xs[s]:.1f}" y="{ys[s] + r + 13 * u:.1f}" text-anchor="middle"{weight}>'
                    f'{_esc(labels[s][:40])}</text>')
        nodes.append(f'<g data-pick="{s}"><title>{_tooltip(labels[s], p.state_anchor[s], value_S[s], int(p.n_s[s]), value_name)}'
                     f'</title><circle cx="{xs[s]:.1f}" cy="{ys[s]:.1f}" r="{r:.1f}" fill="{colours[s]}" {ring}/>'
                     f'{name}</g>')
    side = 11 * u
    for i, (text, colour, dy) in enumerate((("z+ success (V=1)", Z_PLUS_COLOR, -side - 5 * u),
                                            ("z- failure (V=0)", Z_MINUS_COLOR, side + 14 * u))):
        bx, by = xs[n + i], ys[n + i]
        nodes.append(f'<g><title>{text}</title><rect x="{bx - side:.1f}" y="{by - side:.1f}" width="{2 * side:.1f}" '
                     f'height="{2 * side:.1f}" fill="{colour}"/><text x="{bx:.1f}" y="{by + dy:.1f}" '
                     f'text-anchor="middle">{text}</text></g>')
    stops = "".join(f'<stop offset="{q:.2f}" stop-color="{c}"/>'
                    for q, c in zip(np.linspace(0, 1, 6), v_color(np.linspace(0, 1, 6)), strict=True))
    lx, ly, lw = x0 + 34 * u, y1 - 14 * u, 110 * u  # bottom left
    legend = (f'<defs><linearGradient id="crbc-v-scale">{stops}</linearGradient></defs>'
              f'<rect x="{lx:.1f}" y="{ly:.1f}" width="{lw:.1f}" height="{8 * u:.1f}" fill="url(#crbc-v-scale)"/>'
              f'<text x="{lx - 4 * u:.1f}" y="{ly + 8 * u:.1f}" text-anchor="end">{_esc(value_name)} 0</text>'
              f'<text x="{lx + lw + 4 * u:.1f}" y="{ly + 8 * u:.1f}">1</text>')
    return (f'<svg class="crbc-graph" viewBox="{x0:.1f} {y0:.1f} {x1 - x0:.1f} {y1 - y0:.1f}" width="100%" '
            f'font-size="{12 * u:.1f}" fill="#31333f" role="img" aria-label="anchor graph" '
            f'style="font-family:\'Source Sans\',sans-serif">'
            f'<g stroke="#c7cdd4" stroke-width="{u:.2f}">{edges}</g>{"".join(nodes)}{legend}</svg>')


def _first_steps(p: Process) -> dict[tuple[int, int, int], tuple[int, int]]:
    """(anchor, action index, successor) -> (rollout position, step t) of its first occurrence."""
    first: dict[tuple[int, int, int], tuple[int, int]] = {}
    for i in range(len(p.rollout_offsets) - 1):
        for k in range(int(p.rollout_offsets[i]), int(p.rollout_offsets[i + 1])):
            key = (int(p.step_state[k]), int(p.sa_action[p.step_sa[k]]), int(p.step_next[k]))
            first.setdefault(key, (i, int(p.step_t[k])))
    return first


def lesson_graph_svg(p: Process, value_S: np.ndarray, *, value_name: str = "V",
                     delta_S: np.ndarray | None = None, shown_width_px: float = 520.0,
                     max_height_px: int = 360) -> str:
    """The Lesson's group as a graph that is also its control panel (SVG, for
    :func:`ui.svg_view.svg_view`). Anchors coloured and numbered by ``value_S`` (NaN: grey, no
    number), the boundaries, one line per observed (anchor, successor), and three kinds of
    pickable elements, each a ``data-pick`` of ``kind:a:b``:

    - ``edge:i:t``, a diamond on each observed (anchor, action, successor) at 60 % of its line
      (self-loops above the anchor), its action written over it: its first step (rollout
      position ``i``, step ``t``), to edit;
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
            f'<g data-pick="edge:{i}:{t}"><title>{_esc(f"{labels[s]} --{name}--> {target}")}&#10;'
            f'click: edit rollout {int(p.rollout_index[i])}, step {t}</title>'
            f'<polygon points="{px:.1f},{py - d:.1f} {px + d:.1f},{py:.1f} {px:.1f},{py + d:.1f} {px - d:.1f},{py:.1f}" '
            f'fill="white" stroke="#9aa3ad" stroke-width="{1.5 * u:.2f}"/>'
            f'<text x="{px:.1f}" y="{py - d - 3 * u:.1f}" text-anchor="middle" font-size="{11 * u:.1f}" '
            f'fill="#444">{_esc(name[:24])}</text></g>')
    for s in range(n):
        known = bool(np.isfinite(v[s]))
        fill = v_color(v[s])[0] if known else "#d5d8dc"
        value = (f'<tspan x="{xs[s]:.1f}" dy="{14 * u:.1f}">{_esc(value_name)}={v[s]:.3f}</tspan>'
                 if known else "")
        parts.append(
            f'<g data-pick="node:{s}:0"><title>{_esc(labels[s])}: visited {int(p.n_s[s])} times</title>'
            f'<circle cx="{xs[s]:.1f}" cy="{ys[s]:.1f}" r="{15 * u:.1f}" fill="{fill}" stroke="#333" '
            f'stroke-width="{u:.2f}"/><text x="{xs[s]:.1f}" y="{ys[s] + 29 * u:.1f}" text-anchor="middle">'
            f'<tspan font-weight="600">{_esc(labels[s][:40])}</tspan>{value}</text></g>')
    side = 12 * u
    for b, (text, colour, dy) in enumerate((("z+ (V=1)", Z_PLUS_COLOR, -side - 5 * u),
                                            ("z- (V=0)", Z_MINUS_COLOR, side + 14 * u))):
        bx, by = xs[n + b], ys[n + b]
        parts.append(f'<g><rect x="{bx - side:.1f}" y="{by - side:.1f}" width="{2 * side:.1f}" height="{2 * side:.1f}" '
                     f'fill="{colour}"/><text x="{bx:.1f}" y="{by + dy:.1f}" text-anchor="middle">{text}</text></g>')
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
