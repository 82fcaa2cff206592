"""The Lesson's group as a graph that is also its control panel: edges to edit, outcomes to
flip, anchors to pick (static SVG on the shared :func:`crbc.viz.core.graph_layout.layout`)."""

from __future__ import annotations

import numpy as np

from crbc.explain.anchor_names import anchor_labels
from crbc.process import Process
from crbc.viz.core.graph_layout import layout
from crbc.viz.core.style import NO_VALUE_COLOR, Z_MINUS_COLOR, Z_PLUS_COLOR, v_color
from crbc.viz.core.svg import FONT_FAMILY
from crbc.viz.core.text import esc
from crbc.viz.graph import boundaries_svg

__all__ = ["CHIP_TEXT", "lesson_graph_svg"]

#: outcome chips' text: the boundaries' hues, dark enough for 4.5:1 on white (WCAG AA)
CHIP_TEXT = {True: "#1d6b30", False: "#a3281c"}


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
                     max_height_px: int = 420, pickable: bool = True) -> str:
    """The Lesson's group as a graph that is also its control panel (SVG, for
    :func:`ui.core.svg_view.svg_view`). Anchors coloured and numbered by ``value_S`` (NaN: grey, no
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
    ``max_height_px`` tall and is centred. ``pickable=False`` draws the same graph as a picture:
    no ``data-pick``, and the outcome chips as plain text, so nothing looks clickable."""
    def pick(v: str) -> str:
        return f' data-pick="{v}"' if pickable else ""

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
                      float(lay.y_B[b]) + (-1 if ok else 1) * 30 * (k % 4)))
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
            f'<g{pick(f"edge:{i}:{t}")}><title>{esc(f"{labels[s]} --{name}--> {target}")}'
            + (f'&#10;click: edit rollout {int(p.rollout_index[i])}, step {t}' if pickable else "") + '</title>'
            + f'<circle cx="{px:.1f}" cy="{py:.1f}" r="{12 * u:.1f}" fill="transparent" stroke="none"/>'

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
            f'<g{pick(f"node:{s}:0")}><title>{esc(labels[s])}: visited {int(p.n_s[s])} times</title>'
            f'<circle cx="{xs[s]:.1f}" cy="{ys[s]:.1f}" r="{15 * u:.1f}" fill="{fill}" stroke="#333" '
            f'stroke-width="{u:.2f}"/><text x="{xs[s]:.1f}" y="{ys[s] + 29 * u:.1f}" text-anchor="middle">'
            f'<tspan font-weight="600">{esc(labels[s][:40])}</tspan>{value}</text></g>')
    parts.append(boundaries_svg(xs[n:], ys[n:], 12 * u, u, ("z+ (V=1)", "z- (V=0)")))
    for i, ok, cx, cy in chips:
        colour = Z_PLUS_COLOR if ok else Z_MINUS_COLOR
        rid = int(p.rollout_index[i])
        parts.append(
            f'<g{pick(f"outcome:{i}:0")}><title>rollout {rid} {"succeeded" if ok else "failed"}'
            + (': click to flip its outcome' if pickable else '') + '</title>'
            + (f'<rect x="{cx - 12 * u:.1f}" y="{cy - 12 * u:.1f}" width="{46 * u:.1f}" height="{24 * u:.1f}" '
               f'rx="{4 * u:.1f}" fill="white" stroke="{colour}" stroke-width="{1.5 * u:.2f}"/>'
               f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{5 * u:.1f}" fill="{colour}"/>' if pickable else "")
            + f'<text x="{cx + 10 * u:.1f}" y="{cy + 4 * u:.1f}" fill="{CHIP_TEXT[ok]}" font-weight="600">'
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
            f'style="max-height:{max_height_px}px;{FONT_FAMILY}">{"".join(parts)}</svg>')
