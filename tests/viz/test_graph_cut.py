"""Big groups are drawn cut (crbc.viz.core.graph_layout.drawn_anchors / drawn_layout): at most
MAX_DRAWN anchors, the highlighted path and the chosen anchor's neighbours first, then the
busiest; the drawing says how many of how many it shows, and costs what a small one does."""

from __future__ import annotations

import html
import re

import numpy as np
import pytest

import crbc
from crbc import Rollout, RolloutGroup, Step
from crbc.viz.anchor_graph import anchor_graph_html
from crbc.viz.core import graph_layout as GL
from crbc.viz.graph import graph_svg
from devtools.synthetic import random_walk_group


@pytest.fixture(scope="module")
def big():
    """One group of 1,208 anchors (random walks on a 40 x 40 grid)."""
    p = crbc.merge([random_walk_group(80, 200, size=40, seed=5, bias=0.2)])
    assert p.n_states > 3 * GL.MAX_DRAWN
    return p


def _picked(svg: str) -> list[int]:
    return [int(s) for s in re.findall(r'<g data-pick="(\d+)">', svg)]


def _path_anchors(p, r: int) -> set[int]:
    return {a for a, _, _ in GL.rollout_edges(p, r)}


def test_drawn_anchors_keep_what_is_asked_then_the_busiest_like_a_plain_sort(big):
    keep = [7, 3, 7, 900, -1, 10**9]  # repeats and ids out of range are ignored
    got = GL.drawn_anchors(big, keep=keep, cap=50)
    # the slow twin: the kept ones, then every other anchor by (-visits, id), cut at 50
    wanted = [7, 3, 900]
    others = sorted((s for s in range(big.n_states) if s not in wanted), key=lambda s: (-int(big.n_s[s]), s))
    assert got.tolist() == sorted(wanted + others[:47])
    assert GL.drawn_anchors(big, cap=big.n_states).tolist() == list(range(big.n_states))
    assert len(GL.drawn_anchors(big, keep=range(100), cap=40)) == 40  # keep itself is cut at the cap


def test_full_hops_are_the_layouts_breadth_first_layers(big):
    small = crbc.merge([random_walk_group(12, 30, size=5, seed=2, bias=0.2)])
    for p in (big, small):
        assert GL.full_hops(p).tolist() == GL.compute_layout(p).layer_S.tolist()


def test_a_cut_layout_places_only_the_shown_anchors_in_the_whole_graphs_column_order(big):
    shown = GL.drawn_anchors(big, keep=sorted(_path_anchors(big, 0)))
    lay = GL.drawn_layout(big, shown)
    hidden = np.setdiff1d(np.arange(big.n_states), shown)
    assert np.isnan(lay.x_S[hidden]).all() and np.isnan(lay.y_S[hidden]).all() and (lay.layer_S[hidden] == -1).all()
    assert np.isfinite(lay.x_S[shown]).all() and np.isfinite(lay.y_S[shown]).all()
    hops = GL.full_hops(big)[shown]
    cols = lay.layer_S[shown]
    # columns keep the order of the hops, with the empty ones closed up
    assert np.array_equal(np.unique(cols), np.arange(len(np.unique(hops))))
    assert all((cols[hops < h].max(initial=-1) < cols[hops == h].min()) for h in np.unique(hops))
    # no two shown anchors share a place; the boundaries sit right of every anchor
    assert len({(x, y) for x, y in zip(lay.x_S[shown], lay.y_S[shown], strict=True)}) == len(shown)
    assert lay.x_B.min() > np.nanmax(lay.x_S)
    # a small group is not cut: the same layout object as every other drawing of it
    assert GL.drawn_layout(big, np.arange(big.n_states)) is GL.layout(big)


def test_the_svg_of_a_big_group_draws_the_path_the_chosen_anchor_and_says_how_many(big):
    v = crbc.compute("crbc", big).value_S
    chosen = int(np.argmin(big.n_s))  # a rarely visited anchor: kept only because it is chosen
    delta = np.random.default_rng(0).normal(0, 0.01, big.n_states)
    svg = graph_svg(big, v, highlight_rollout=3, selected=chosen, delta_S=delta)
    drawn = _picked(svg)
    assert len(drawn) == GL.MAX_DRAWN == len(set(drawn))
    assert _path_anchors(big, 3) <= set(drawn) and chosen in drawn
    inner = big.step_next < big.n_states
    neighbours = set(big.step_next[inner][big.step_state[inner] == chosen].tolist()) | set(
        big.step_state[inner][big.step_next[inner] == chosen].tolist())
    assert neighbours <= set(drawn)
    note = " ".join(re.findall(r'<text class="crbc-graph-cut"[^>]*>([^<]*)</text>', svg))
    assert html.unescape(note) == (f"{GL.MAX_DRAWN:,} of {big.n_states:,} anchors drawn: rollout 3's path, the "
                                   "chosen anchor and its neighbours and the busiest; an edge is drawn when both its ends are")
    # rings only around drawn anchors: every ring's centre is a drawn node's centre
    centres = set(re.findall(r'<circle cx="([-0-9.]+)" cy="([-0-9.]+)" r="[0-9.]+" fill="(?!none)', svg))
    rings = re.findall(r'<circle cx="([-0-9.]+)" cy="([-0-9.]+)" r="[0-9.]+" fill="none"', svg)
    assert rings and set(rings) <= centres
    assert "nan" not in svg.lower()


def test_a_small_group_is_drawn_whole_without_a_cut_line():
    p = crbc.merge([random_walk_group(8, 12, size=4, seed=1, bias=0.3)])
    svg = graph_svg(p, crbc.compute("crbc", p).value_S, highlight_rollout=0)
    assert sorted(_picked(svg)) == list(range(p.n_states)) and "anchors drawn" not in svg


def test_the_vis_network_page_of_a_big_group_is_cut_the_same_way(big):
    v = crbc.compute("crbc", big).value_S
    page = anchor_graph_html(big, v, highlight_rollout=3, assets_url="/app/static")
    ids = [int(i) for i in re.findall(r'"id": (\d+), "info"', page)]
    anchors = [i for i in ids if i < big.n_states]
    assert len(anchors) == GL.MAX_DRAWN and _path_anchors(big, 3) <= set(anchors)
    assert f"{GL.MAX_DRAWN:,} of {big.n_states:,} anchors drawn: rollout 3&#x27;s path and the busiest" in page


def test_a_cut_drawing_is_the_size_of_a_drawing_of_the_cap_not_of_the_group(big):
    """What a drawing sends follows what it draws: the group four times past the cap gives an
    SVG no larger than a whole drawing of a group about the cap's size, give or take half."""
    near_cap = crbc.merge([random_walk_group(40, 80, size=16, seed=4, bias=0.2)])
    assert 0.6 * GL.MAX_DRAWN <= near_cap.n_states <= GL.MAX_DRAWN
    cut = graph_svg(big, crbc.compute("crbc", big).value_S, highlight_rollout=1)
    whole = graph_svg(near_cap, crbc.compute("crbc", near_cap).value_S, highlight_rollout=1)
    assert len(cut) < 1.5 * len(whole) * GL.MAX_DRAWN / near_cap.n_states


def _wrapped_slowly(layer, y, rows):
    """The obvious twin of GL._wrapped: per layer, its anchors sorted by y, dealt into columns
    of ``rows``, the columns numbered left to right over the layers; each column centred."""
    column, out, next_col = np.zeros(len(layer), dtype=int), np.zeros(len(layer)), 0
    for L in range(int(layer.max()) + 1):
        members = sorted(np.flatnonzero(layer == L).tolist(), key=lambda m: (y[m], m))
        chunks = [members[i:i + rows] for i in range(0, len(members), rows)] or []
        for chunk in chunks:
            for i, m in enumerate(chunk):
                column[m], out[m] = next_col, i - (len(chunk) - 1) / 2
            next_col += 1
    return column, out


@pytest.mark.parametrize("seed", range(6))
def test_tall_layers_wrap_into_columns_like_the_obvious_twin(seed):
    rng = np.random.default_rng(seed)
    layer = rng.integers(0, 5, size=int(rng.integers(1, 90)))
    y = np.zeros(len(layer))
    for L in np.unique(layer):  # centred ranks, as _order_layers gives them
        m = np.flatnonzero(layer == L)
        y[m[rng.permutation(len(m))]] = np.arange(len(m)) - (len(m) - 1) / 2
    for rows in (1, 3, 16, 200):
        col, out = GL._wrapped(layer, y, rows)
        want_col, want_y = _wrapped_slowly(layer, y, rows)
        assert col.tolist() == want_col.tolist() and np.allclose(out, want_y)
    col, out = GL._wrapped(layer, y, 200)  # no layer that tall: the layers and their ranks as given
    assert np.array_equal(np.unique(col, return_inverse=True)[1].reshape(-1), np.unique(layer, return_inverse=True)[1].reshape(-1))
    assert np.array_equal(out, y)


def _random_graph_group(n_rollouts: int, steps: int, anchors: int, seed: int) -> RolloutGroup:
    """Rollouts from one start through anchors drawn uniformly from ``anchors`` names: most
    anchors are one or two hops from the start (the worst shape for a layered drawing)."""
    rng = np.random.default_rng(seed)
    rollouts = []
    for i in range(n_rollouts):
        names = ["start"] + [f"a{k}" for k in rng.integers(0, anchors, size=steps - 1)]
        rollouts.append(Rollout("wide", i, tuple(Step(anchor=a, action=f"go{j % 3}", reward=0.0)
                                                for j, a in enumerate(names)), bool(rng.random() < 0.3)))
    return RolloutGroup("wide", tuple(rollouts))


def test_a_cut_drawing_of_a_wide_group_is_a_grid_not_a_strip():
    wide = crbc.merge([_random_graph_group(400, 6, 2000, seed=1)])
    lay = GL.drawn_layout(wide, GL.drawn_anchors(wide))
    shown = np.isfinite(lay.x_S)
    assert shown.sum() == GL.MAX_DRAWN
    per_column = np.unique(lay.x_S[shown], return_counts=True)[1]
    assert per_column.max() <= GL.WRAP_ROWS
    assert np.bincount(lay.layer_S[shown]).max() > GL.WRAP_ROWS  # the layers themselves are taller
    # a layer's columns all sit left of the next layer's
    for L in range(int(lay.layer_S.max())):
        assert lay.x_S[lay.layer_S == L].max() < lay.x_S[lay.layer_S == L + 1].min()
    width = np.ptp(np.r_[lay.x_S[shown], lay.x_B])
    height = np.ptp(lay.y_S[shown])
    assert 0.5 < width / height < 4  # landscape-ish, not a strip


def test_the_cut_note_wraps_to_the_drawings_width_and_reads_the_same():
    from crbc.viz.graph import _note_lines

    note = GL.drawn(crbc.merge([_random_graph_group(400, 6, 2000, seed=1)]), keep=[3]).note(0, 3)
    for width in (2000, 700, 400, 130, 10):
        lines = _note_lines(note, width)
        assert " ".join(lines) == note
        assert all(len(line) <= max(int(width / 6), 20) for line in lines)
    assert len(_note_lines(note, 2000)) == 1 and len(_note_lines(note, 400)) > 1
    assert _note_lines(note, 400)[0].endswith((",", ";"))  # cut after a clause where one fits
    assert "".join(_note_lines("x" * 50, 10)) == "x" * 50  # a word longer than a line is cut inside


@pytest.mark.parametrize("seed", range(4))
def test_the_drawn_moves_are_the_obvious_set_of_pairs(big, seed):
    """crbc.viz.graph._drawn_pairs (arrays) against a set of every observed move between two
    drawn nodes, on 4 random masks over the 1,208-anchor group, boundaries included."""
    from crbc.viz.graph import _drawn_pairs

    mask = np.random.default_rng(seed).random(big.n_states + 2) < (0.2 + 0.25 * seed)
    sa, nxt, _ = big.transitions()
    want = sorted({(int(big.sa_state[a]), int(x)) for a, x in zip(sa.tolist(), nxt.tolist(), strict=True)
                   if int(big.sa_state[a]) != int(x) and mask[big.sa_state[a]] and mask[x]})
    assert _drawn_pairs(big, mask) == want
    assert want  # the masks keep some moves
