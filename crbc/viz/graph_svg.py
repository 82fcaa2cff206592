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
