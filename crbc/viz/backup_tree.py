"""The backup tree at one anchor as SVG: the anchor, its observed actions, their successors."""

from __future__ import annotations

from crbc.explain.arithmetic import AnchorArithmetic
from crbc.explain.table_rows import fmt
from crbc.viz.core.html import FONT
from crbc.viz.core.style import EDGE_COLOR, NO_VALUE_COLOR, Z_MINUS_COLOR, Z_PLUS_COLOR, signed_color, v_color
from crbc.viz.core.text import esc, missing, one_line

__all__ = ["backup_tree_svg"]


def _free_spot(x1: float, y1: float, x2: float, y2: float, placed: list[tuple[float, float]],
               box: tuple[float, float] = (56.0, 16.0)) -> tuple[float, float]:
    """Where to write an edge's label: the first point at 55, 75, 35, 85 or 25 % of the way from
    (x1, y1) to (x2, y2) whose ``box`` (width, height) overlaps no label in ``placed`` (else the
    55 % point); the spot is appended to ``placed``. Edges that converge on one successor, or
    cross, would otherwise write their P labels over each other."""
    spots = [(x1 + f * (x2 - x1), y1 + f * (y2 - y1)) for f in (0.55, 0.75, 0.35, 0.85, 0.25)]
    free = next((pt for pt in spots if all(abs(pt[0] - qx) >= box[0] or abs(pt[1] - qy) >= box[1]
                                           for qx, qy in placed)), spots[0])
    placed.append(free)
    return free


def backup_tree_svg(ar: AnchorArithmetic, label_chars: int = 32) -> str:
    """The backup tree at one anchor as SVG: the anchor (left, coloured by its V) -> each observed
    action (middle, a square coloured by its A_S on the credit scale; the edge's width grows with
    mu) -> each successor (right, coloured by V; z+ green, z- red; grey at K = 0, where nothing is
    backed up; the edge's width grows with P). Labels are cut to ``label_chars`` characters,
    the whole string in the node's tooltip. Width 680 user units (about a page column, so text
    is drawn near its own size), 100 per row."""
    succ: dict[str, float | None] = {}
    for a in ar.actions:
        for x in a.successors:
            succ.setdefault(x.label, x.v)
    n_a, n_x = len(ar.actions), max(len(succ), 1)
    span = max(n_a, n_x, 2)
    row_h, top = 100.0, 30.0
    width, height = 680.0, top + row_h * span

    def y_of(i: int, n: int) -> float:
        return top + row_h * (span - n) / 2 + row_h * (i + 0.5)

    xa_, xs_, xx_ = 50.0, 270.0, 470.0
    y0 = top + row_h * span / 2
    ya = {a.action: y_of(i, n_a) for i, a in enumerate(ar.actions)}
    yx = {lab: y_of(i, n_x) for i, lab in enumerate(succ)}
    edges, notes, nodes = [], [], []
    placed: list[tuple[float, float]] = []
    note = ('<text x="{x:.1f}" y="{y:.1f}" text-anchor="middle" font-size="12" fill="#555" '
            'paint-order="stroke" stroke="white" stroke-width="4">{t}</text>')
    for a in ar.actions:
        edges.append(f'<line x1="{xa_}" y1="{y0:.1f}" x2="{xs_}" y2="{ya[a.action]:.1f}" stroke="{EDGE_COLOR}" '
                     f'stroke-width="{1 + 6 * a.mu:.2f}"/>')
        notes.append(note.format(x=(xa_ + xs_) / 2, y=(y0 + ya[a.action]) / 2, t=f"mu={fmt(a.mu, 3)}"))
        for x in a.successors:
            edges.append(f'<line x1="{xs_}" y1="{ya[a.action]:.1f}" x2="{xx_}" y2="{yx[x.label]:.1f}" '
                         f'stroke="{EDGE_COLOR}" stroke-width="{1 + 6 * x.p:.2f}"/>')
            lx, ly = _free_spot(xs_, ya[a.action], xx_, yx[x.label], placed)
            notes.append(note.format(x=lx, y=ly, t=f"P={fmt(x.p, 3)}"))
    k = "" if ar.depth is None else f"({ar.depth})"
    nodes.append(f'<g data-node="anchor"><title>{esc(ar.label)}</title>'
                 f'<circle cx="{xa_}" cy="{y0:.1f}" r="17" fill="{v_color(ar.v)[0]}" stroke="#333"/>'
                 f'<text x="{xa_}" y="{y0 + 34:.1f}" text-anchor="middle" font-weight="600">'
                 f'{esc(one_line(ar.label, 18))}</text>'
                 f'<text x="{xa_}" y="{y0 + 50:.1f}" text-anchor="middle">V{k}={fmt(ar.v)}</text></g>')
    amax = max([abs(a.a_s) for a in ar.actions] + [1e-9])
    for a in ar.actions:
        y = ya[a.action]
        nodes.append(f'<g data-node="action" data-label="{esc(a.action)}"><title>{esc(a.action)}</title>'
                     f'<rect x="{xs_ - 11}" y="{y - 11:.1f}" width="22" height="22" '
                     f'fill="{signed_color(a.a_s, amax)[0]}" stroke="#333"/>'
                     f'<text x="{xs_}" y="{y - 46:.1f}" text-anchor="middle" font-weight="600">'
                     f'{esc(one_line(a.action, label_chars))}</text>'
                     f'<text x="{xs_}" y="{y - 31:.1f}" text-anchor="middle">Q={fmt(a.q)}</text>'
                     f'<text x="{xs_}" y="{y - 16:.1f}" text-anchor="middle">A_S={fmt(a.a_s, 2, True)}</text></g>')
    v_name = "V" if ar.depth in (None, 0) else f"V({ar.depth - 1})"
    for lab, v in succ.items():
        y = yx[lab]
        no_value = missing(v)
        fill = (Z_PLUS_COLOR if lab == "z+" else Z_MINUS_COLOR if lab == "z-"
                else NO_VALUE_COLOR if no_value else v_color(v)[0])
        value = "" if no_value else f'<tspan x="{xx_ + 20}" dy="16">{v_name}={fmt(v)}</tspan>'
        nodes.append(f'<g data-node="successor" data-label="{esc(lab)}" data-fill="{fill}">'
                     f'<title>{esc(lab)}</title>'
                     f'<circle cx="{xx_}" cy="{y:.1f}" r="13" fill="{fill}" stroke="#333"/>'
                     f'<text x="{xx_ + 20}" y="{y - 3:.1f}"><tspan font-weight="600">'
                     f'{esc(one_line(lab, label_chars - 4))}</tspan>{value}</text></g>')
    return (f'<svg class="crbc-backup-tree" viewBox="0 0 {width:.0f} {height:.0f}" width="100%" '
            f'style="max-height:{height:.0f}px;{FONT}" font-size="13" fill="#31333f" '
            f'role="img" aria-label="backup tree">'
            f'{"".join(edges)}{"".join(notes)}{"".join(nodes)}</svg>')
