"""The fast paths that make ``crbc report`` on a 20,000-anchor group take seconds (issue 57), each
against its slow obvious twin: the crossing count (pairwise matrix), the barycentre sweeps (one
anchor at a time), the disagreement rows (a pass over every pair per anchor), the depth sweep that
stops at convergence (the full sweep cut), the memo of the closure solve, and the heatmap's
stated selection of rollouts on a big group."""

from __future__ import annotations

import re

import numpy as np
import pytest

import crbc.estimators.closure as C
import crbc.viz.core.graph_layout as GL
from crbc.estimators import registry
from crbc.explain import disagreements as D
from crbc.explain.anchor_names import _anchor_labels, anchor_labels, node_labels, state_pairs
from crbc.io.rollouts import Rollout, RolloutGroup, Step
from crbc.process import merge
from crbc.viz.heatmap import Panel, heatmaps_svg, rows_only
from tests.support import reference as ref


def _groups(n: int = 12, seed: int = 3) -> list[RolloutGroup]:
    rng = np.random.default_rng(seed)
    return [ref.random_group(rng, name=f"g{i}", max_rollouts=12, max_len=20, n_anchors=int(rng.integers(2, 30)),
                             n_actions=int(rng.integers(1, 4))) for i in range(n)]


def _wide(n_anchors: int = 300, n_rollouts: int = 120, seed: int = 0) -> RolloutGroup:
    """A random sparse graph with many anchors per layer (the 20,000-anchor shape, small)."""
    rng = np.random.default_rng(seed)
    rollouts = []
    for i in range(n_rollouts):
        steps = tuple(Step(f"a{int(x)}", ("l", "r", "u")[int(rng.integers(3))])
                      for x in rng.integers(n_anchors, size=int(rng.integers(2, 12))))
        rollouts.append(Rollout("wide", i, steps, bool(rng.random() < 0.4)))
    return RolloutGroup("wide", tuple(rollouts))


# --------------------------------------------------------------------------------------------
# the layout: crossings and sweeps


def _slow_crossings(layer, y, succ) -> int:
    """The pairwise count the fast one replaced: an E x E matrix per layer."""
    total = 0
    for L in range(int(layer.max()) if len(layer) else 0):
        e = np.array([(y[a], y[b]) for a in np.flatnonzero(layer == L) for b in succ[a]
                      if layer[b] == L + 1]).reshape(-1, 2)
        d0 = e[:, 0][:, None] - e[:, 0][None, :]
        d1 = e[:, 1][:, None] - e[:, 1][None, :]
        total += int(((d0 * d1) < 0).sum()) // 2
    return total


def _slow_order_layers(layer, pred, succ, n_s, sweeps: int = 6):
    """The barycentre sweeps one anchor at a time (np.mean of its neighbours' positions)."""
    n = len(layer)
    y = GL._positions(layer, np.zeros(n), n_s)
    best, best_x = y, _slow_crossings(layer, y, succ)
    for sweep in range(sweeps):
        forward = sweep % 2 == 0
        key = y.copy()
        layers = range(1, int(layer.max()) + 1) if forward else range(int(layer.max()) - 1, -1, -1)
        for L in layers:
            for m in np.flatnonzero(layer == L):
                nb = [a for a in (pred[m] if forward else succ[m])
                      if (layer[a] < L if forward else layer[a] > L)]
                key[m] = np.mean(y[nb]) if nb else y[m]
            members = np.flatnonzero(layer == L)
            order = sorted(members.tolist(), key=lambda m: (key[m], -n_s[m], m))
            for i, m in enumerate(order):
                y[m] = i - (len(order) - 1) / 2.0
        c = _slow_crossings(layer, y, succ)
        if c < best_x:
            best, best_x = y.copy(), c
    return best


def test_inversions_count_strict_inversions_like_the_double_loop():
    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 3, 5, 16, 17, 64, 100, 257):
        for _ in range(10):
            v = rng.integers(0, max(n // 3, 1) + 1, size=n)
            want = sum(1 for i in range(n) for j in range(i + 1, n) if v[i] > v[j])
            assert GL.inversions(v) == want
    assert GL.inversions(np.arange(1000)[::-1]) == 1000 * 999 // 2


def test_crossings_equal_the_pairwise_count_on_random_layered_graphs():
    rng = np.random.default_rng(1)
    for _ in range(60):
        n = int(rng.integers(1, 80))
        layer = np.sort(rng.integers(0, 6, size=n))
        y = np.zeros(n)
        for L in np.unique(layer):
            m = np.flatnonzero(layer == L)
            y[m] = rng.permutation(len(m)) - (len(m) - 1) / 2
        succ = [{int(b) for b in rng.integers(0, n, size=rng.integers(0, 5))} for _ in range(n)]
        assert GL.crossings(layer, y, succ) == _slow_crossings(layer, y, succ)


def test_the_layout_equals_the_one_anchor_at_a_time_sweeps(monkeypatch):
    """compute_layout with the vectorised sweeps gives the very positions of the slow twin."""
    groups = [*_groups(), _wide(), _wide(120, 40, seed=2)]
    fast = [GL.compute_layout(merge([g])) for g in groups]
    monkeypatch.setattr(GL, "_order_layers", _slow_order_layers)
    for g, f in zip(groups, fast, strict=True):
        slow = GL.compute_layout(merge([g]))
        for name in ("x_S", "y_S", "layer_S", "x_B", "y_B"):
            np.testing.assert_array_equal(getattr(f, name), getattr(slow, name))


# --------------------------------------------------------------------------------------------
# disagreements


def _slow_disagreements(p, cmp_, **shared):
    """The rows as the per-anchor pass over every pair made them (anchors and pairs)."""
    ax = D._side(cmp_.x, p, shared, cmp_.x_params, cmp_.signal, None)
    ay = D._side(cmp_.y, p, shared, cmp_.y_params, cmp_.signal, None)
    d_N = D.snap(ax - ay)
    labels = node_labels(p)
    mx = D.snap(np.bincount(p.step_sa, weights=ax, minlength=len(p.n_sa)) / p.n_sa)
    my = D.snap(np.bincount(p.step_sa, weights=ay, minlength=len(p.n_sa)) / p.n_sa)
    score = np.bincount(p.step_state, weights=np.abs(d_N), minlength=p.n_states) / p.n_s
    mx_S = np.zeros(p.n_states)
    np.maximum.at(mx_S, p.step_state, np.abs(d_N))
    anchors, pairs = [], []
    for s in range(p.n_states):
        sas = state_pairs(p, s)
        acts = [p.action_names[p.sa_action[sa]] for sa in sas]
        bx, by = acts[int(np.argmax(mx[sas]))], acts[int(np.argmax(my[sas]))]
        tx = len(sas) > 1 and np.ptp(mx[sas]) == 0
        ty = len(sas) > 1 and np.ptp(my[sas]) == 0
        g = p.group_ids[int(p.state_group[s])]
        anchors.append(D.AnchorDisagreement(g, labels[s], s, int(p.n_s[s]), len(sas), float(score[s]),
                                            float(mx_S[s]), "(tie)" if tx else bx, "(tie)" if ty else by,
                                            bool(len(sas) > 1 and (tx != ty or (not tx and bx != by))),
                                            cmp_.x_label, cmp_.y_label))
        for sa in sas:
            pairs.append(D.PairDisagreement(g, labels[s], s, p.action_names[p.sa_action[sa]], int(p.n_sa[sa]),
                                            float(mx[sa]), float(my[sa]), float(D.snap(mx[sa] - my[sa])),
                                            cmp_.x_label, cmp_.y_label))
    anchors.sort(key=lambda r: (-r.disagreement, -r.visits, r.state))
    pairs.sort(key=lambda r: (-abs(r.delta), r.state))
    return anchors, pairs


@pytest.mark.parametrize("name", D.COMPARISONS.names())
def test_disagreement_rows_equal_the_per_pair_pass(name):
    p = merge([*_groups(), _wide(80, 30)])
    cmp_ = D.comparison_named(name)
    cache: dict = {}
    fast = D.disagreements(p, cmp_, cache=cache, beta=0.98, sigma_min=0.1, depth=None)
    anchors, pairs = _slow_disagreements(p, cmp_, beta=0.98, sigma_min=0.1, depth=None)
    assert fast.anchors == anchors
    assert fast.pairs == pairs
    again = D.disagreements(p, cmp_, with_steps=False, cache=cache, beta=0.98, sigma_min=0.1, depth=None)
    assert fast.steps and again.steps == [] and again.anchors == anchors
    assert len(cache) == 2  # each side computed once, then found


def test_compute_cached_computes_once_per_name_process_and_parameters():
    p = merge(_groups(3))
    cache: dict = {}
    a = registry.compute_cached(cache, "crbc", p, beta=0.9)
    assert registry.compute_cached(cache, "crbc", p, beta=0.9) is a
    assert registry.compute_cached(cache, "crbc", p, beta=0.8) is not a
    assert registry.compute_cached(None, "crbc", p, beta=0.9) is not a


def test_anchor_labels_are_memoised_and_equal_a_fresh_computation():
    p = merge(_groups(4))
    assert anchor_labels(p) is anchor_labels(p)
    assert anchor_labels(p) == _anchor_labels(p)


# --------------------------------------------------------------------------------------------
# the closure's memo and the depth sweep that stops


def test_the_closure_memo_returns_fresh_copies_equal_to_a_new_solve(monkeypatch):
    p = merge([_wide(300, 200)])  # above MAX_DENSE_BLOCK: the iterative solve
    solves = []
    real = C._solve_values
    monkeypatch.setattr(C, "_solve_values", lambda *a: solves.append(a[1]) or real(*a))
    with C.solves_remembered():
        v = C.solve_values(p, 0.97)
        v[:] = -1.0  # a caller's copy: the memo is untouched
        again = C.solve_values(p, 0.97)
        assert solves == [0.97]  # solved once inside the block
    np.testing.assert_array_equal(again, real(p, 0.97, "auto"))
    assert again.flags.writeable and (again >= 0).all()
    C.solve_values(p, 0.97)
    C.solve_values(p, 0.97)
    assert solves == [0.97] * 3  # outside it (a benchmark, the studio) every call solves


@pytest.mark.parametrize("tol", [1e-6, 1e-3, 0.0, 10.0])
def test_the_sweep_that_stops_at_convergence_is_the_full_sweep_cut(tol):
    for g in [*_groups(6), _wide(60, 40)]:
        p = merge([g])
        full = C.depth_sweep(p, 0.95, 60)
        conv = full.converged_at(tol)
        want = full.first(max(60 if conv is None else conv, 1))
        got = C.depth_sweep(p, 0.95, 60, tol)
        for name in ("v_KS", "q_KSA", "a_KSA", "v_S", "q_SA", "a_SA", "err_v_K", "err_a_K", "bound_K"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
    with pytest.raises(ValueError, match="tol"):
        C.depth_sweep(p, 0.95, 3, -1.0)


# --------------------------------------------------------------------------------------------
# the heatmap's rows and the report's stated selection


def test_a_heatmap_of_every_row_equals_the_full_drawing_and_a_selection_keeps_its_rows():
    p = merge([_wide(40, 30)])
    vals = registry.compute("crbc", p).step_advantage_N
    full = heatmaps_svg(p, [Panel("crbc", vals)])
    assert heatmaps_svg(p, [Panel("crbc", vals)], rows=range(30)) == full
    rows = [3, 17, 5]
    part = heatmaps_svg(p, [Panel("crbc", vals)], rows=rows, zmax=1.0)
    picked = {int(m) for m in re.findall(r'data-pick="(\d+):', part)}
    assert picked == set(rows)
    q, keep, ids = rows_only(p, rows)
    assert ids == [3, 5, 17] and keep.sum() == q.n_steps == int(p.rollout_len[[3, 5, 17]].sum())
    np.testing.assert_array_equal(q.rollout_index, p.rollout_index[[3, 5, 17]])
    with pytest.raises(ValueError, match="rollout positions"):
        rows_only(p, [30])
    with pytest.raises(ValueError, match="at least one"):
        rows_only(p, [])


def test_a_big_group_report_draws_a_stated_selection_of_rollouts(tmp_path):
    from crbc.report import group as G
    from crbc.report.build import group_report

    g = _wide(60, G.HEAT_ROWS + 40, seed=5)
    p = merge([g])
    rows, why = G.heat_selection(p)
    ok = np.asarray(p.rollout_success, dtype=bool)
    assert len(rows) == G.HEAT_ROWS and rows == sorted(rows)
    n_ok = int(ok[rows].sum())
    assert rows == sorted(np.flatnonzero(ok)[:n_ok].tolist() + np.flatnonzero(~ok)[:G.HEAT_ROWS - n_ok].tolist())
    assert f"{len(g):,} rollouts" in why and f"shows {G.HEAT_ROWS} of them" in why
    assert G.heat_selection(merge([_wide(20, 10)])) == (None, "")
    html = group_report(g, estimators=["crbc", "gigpo"], truth=False)
    assert f"shows {G.HEAT_ROWS} of them" in html
