"""The doctor's checks on how a batch weighs its rollouts: which rows enter a group's baseline,
which turns share one, and how much each trajectory weighs in the loss.

Each check is a pure function ``check(batch) -> Finding | None`` of a
:class:`crbc.doctor.batch.Batch` (N steps, R rollouts, G groups; ``A`` the trainer's advantage of
a step, NaN where its row has no trained token; ``S_i`` rollout i's score, ``T_i`` its steps).
A rollout is *empty* when none of its steps has a finite A (its rows have no action token).
"""

from __future__ import annotations

import numpy as np

from crbc.doctor.batch import Batch
from crbc.doctor.findings import Finding, finding
from crbc.doctor.registry import register_check
from crbc.io.grouped_rows import rows_by_label

__all__ = [
    "BASELINE_RTOL", "CENTRED", "empty_response_in_group", "FAIL_RATIO", "MAJORITY", "per_turn_baseline",
    "row_weighted_loss", "ZERO"
]

MAJORITY = 0.5  #: share of the decisive groups that must show a bug
CENTRED = 1e-3  #: |sum A| / sum |A| below this counts as centred (float32 advantages: ~1e-7)
BASELINE_RTOL = 1e-3  #: a fitted baseline "is" a mean within BASELINE_RTOL * (1 + score spread)
ZERO = 1e-9  #: |A| at most this counts as 0
FAIL_RATIO = 1.5  #: row_weighted_loss: failures' share of the rows at least this times their share of trajectories


def _rollout_advantage(b: Batch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(A_R, const_R, empty_R)``: each rollout's advantage at its first step with one, whether
    all its finite step advantages are equal (one number per rollout), and whether it has none."""
    p, a = b.process, b.advantage_N
    fin = np.isfinite(a)
    n_R = len(p.rollout_offsets) - 1
    first_R = np.full(n_R, np.nan)
    hi_R, lo_R = np.full(n_R, -np.inf), np.full(n_R, np.inf)
    r_N = p.step_rollout
    np.maximum.at(hi_R, r_N[fin], a[fin])
    np.minimum.at(lo_R, r_N[fin], a[fin])
    first_n = np.full(n_R, len(a))
    np.minimum.at(first_n, r_N[fin], np.flatnonzero(fin))  # first finite step of each rollout
    seen = first_n < len(a)
    first_R[seen] = a[first_n[seen]]
    const_R = seen & (hi_R - lo_R <= 1e-6 * (1.0 + np.abs(hi_R)))
    return first_R, const_R, ~seen


def _baseline_fit(s: np.ndarray, a: np.ndarray) -> float | None:
    """The baseline ``b`` of ``a = c (s - b)`` fitted by least squares over rollouts (None when the
    scores do not vary, the slope is about 0, or the points are not on one line)."""
    ds = s - s.mean()
    if np.abs(ds).max() <= 1e-12:
        return None
    c = float(ds @ (a - a.mean()) / (ds @ ds))
    if abs(c) <= 1e-9:
        return None
    resid = a - a.mean() - c * ds
    if np.abs(resid).max() > 1e-3 * (1.0 + np.abs(a).max()):
        return None
    return float(s.mean() - a.mean() / c)


@register_check("empty_response_in_group", severity="error", order=110, reads="rows",
                what="rows with no action token counted in their group's mean and std")
def empty_response_in_group(b: Batch) -> Finding | None:
    """Rows with no action token counted in their group's mean (OpenRLHF PR #1239; verl PR #6452
    names the same for GRPO after rejection sampling empties a response's mask).

    In a group with empty rollouts E and >= 2 other rollouts V whose advantage is one number A_i
    each, fit A_i = c (S_i - base) over V (:func:`_baseline_fit`). A group is decisive when the
    mean score of V differs from that of V and E together (by more than BASELINE_RTOL times
    (1 + the score spread)) and the fitted base is one of the two; it shows the bug when base is
    the mean over V and E (the empty rows' scores moved their siblings' advantages). Fires when
    >= MAJORITY of the decisive groups show it; rows = the steps of those groups."""
    if b.advantage_N is None:
        return None
    p = b.process
    A_R, const_R, empty_R = _rollout_advantage(b)
    if not empty_R.any():
        return None
    s_R, g_R = p.rollout_score, p.rollout_group
    decisive = bad = 0
    bad_G = np.zeros(len(p.group_ids), dtype=bool)
    with_empty = np.zeros(len(p.group_ids), dtype=bool)
    with_empty[g_R[empty_R]] = True
    for g, rows in rows_by_label(g_R):  # each group's rollouts (one sort, not one pass per group)
        if not with_empty[g]:
            continue
        v, e = rows[~empty_R[rows] & const_R[rows]], rows[empty_R[rows]]
        if len(v) < 2 or (~empty_R[rows] & ~const_R[rows]).any():
            continue
        both = np.sort(np.concatenate([v, e]))  # the rows of v | e, in row order
        base = _baseline_fit(s_R[v], A_R[v])
        tol = BASELINE_RTOL * (1.0 + np.ptp(s_R[both]))
        m_v, m_all = s_R[v].mean(), s_R[both].mean()
        if base is None or abs(m_v - m_all) <= tol or min(abs(base - m_v), abs(base - m_all)) > tol:
            continue
        decisive += 1
        if abs(base - m_all) <= tol:
            bad += 1
            bad_G[g] = True
    if not bad or bad < MAJORITY * decisive:
        return None
    steps = bad_G[g_R[p.step_rollout]]
    return finding("empty_response_in_group", b.iteration, b.rows_of(steps), b.n_rows,
                   f"in {bad} of {decisive} groups with rows that have no action token (response mask all 0), "
                   "those rows' scores entered the group's mean, so their siblings' advantages moved by the "
                   "score of a response that is never trained: leave rows without an action token out of "
                   "the group's mean and std and give them advantage 0.")


def _cells(p, steps: np.ndarray) -> list[np.ndarray]:
    """The steps ``steps`` (one group's, ascending) at each turn index t, one array per t (in
    rollout order)."""
    t = p.step_t[steps]
    return [steps[t == k] for k in np.unique(t)]


@register_check("per_turn_baseline", severity="warning", order=120, reads="rows",
                what="advantages normalised per (group, turn index)")
def per_turn_baseline(b: Batch) -> Finding | None:
    """Advantages normalised per (group, turn index) (verl #7244, MT-GRPO style).

    A per-turn-index baseline centres, at every turn index t, the advantages of the rollouts still
    running at t: sum_{i: T_i >= t} A_{i,t} = 0 (also when the normalised turn advantages are
    summed over later turns, since the rollouts running at a later turn are among those running
    at t). Its number of terms depends on where a trajectory stopped: a hidden bonus or tax on
    taking another turn. Decisive: groups whose rollouts have unequal lengths, with some rollout
    whose advantage varies over its steps (a trajectory-level advantage never does), a turn index
    t >= 2 reached by >= 2 rollouts but not all, and an advantage in every turn cell of >= 2
    rollouts (sum |A| > ZERO: a cell of zeros, such as the earlier steps of a last-step-only
    trainer, says nothing about its baseline). Such a group shows the pattern when every turn
    cell of >= 2 rollouts is centred (|sum A| / sum |A| < CENTRED). Fires when >= MAJORITY of
    the decisive groups show it; rows = their steps."""
    if b.advantage_N is None:
        return None
    p, a = b.process, b.advantage_N
    _, const_R, empty_R = _rollout_advantage(b)
    n_G = len(p.group_ids)
    n_R_G = np.bincount(p.rollout_group, minlength=n_G)
    len_R = p.rollout_len
    lo_G, hi_G = np.full(n_G, np.inf), np.zeros(n_G)
    np.minimum.at(lo_G, p.rollout_group, len_R)
    np.maximum.at(hi_G, p.rollout_group, len_R)
    varying_G = np.bincount(p.rollout_group, weights=(~const_R & ~empty_R).astype(float), minlength=n_G) > 0
    empty_G = np.bincount(p.rollout_group, weights=empty_R.astype(float), minlength=n_G) > 0
    candidates = np.flatnonzero((n_R_G >= 3) & (hi_G > lo_G) & varying_G & ~empty_G)
    g_N = p.rollout_group[p.step_rollout]
    decisive = 0
    bad_G = np.zeros(n_G, dtype=bool)
    is_candidate = np.zeros(n_G, dtype=bool)
    is_candidate[candidates] = True
    for g, steps in rows_by_label(g_N):  # each group's steps (one sort, not one pass per group)
        if not is_candidate[g]:
            continue
        cells = _cells(p, steps)
        if not any(1 < len(c) < n_R_G[g] for c in cells[1:]):
            continue
        x = [a[c] for c in cells if len(c) >= 2]
        if any(not np.isfinite(v).all() or not np.abs(v).sum() > ZERO for v in x):
            continue
        decisive += 1
        bad_G[g] = all(np.abs(v.sum()) < CENTRED * np.abs(v).sum() for v in x)
    bad = int(bad_G.sum())
    if not bad or bad < MAJORITY * decisive:
        return None
    steps = bad_G[p.rollout_group[p.step_rollout]]
    return finding("per_turn_baseline", b.iteration, b.rows_of(steps), b.n_rows,
                   f"in {bad} of {decisive} groups the advantages are centred at every turn index over the "
                   "rollouts still running there, so each trajectory's baseline has as many terms as it "
                   "took turns: a hidden bonus or tax on taking another turn (verl #7244); use a baseline "
                   "that does not depend on where a trajectory stopped (a finished rollout still counts at "
                   "later turn indices, or one baseline per trajectory).")


@register_check("row_weighted_loss", severity="warning", order=130, reads="rows",
                what="one loss weight per step row, so long failed trajectories weigh more")
def row_weighted_loss(b: Batch) -> Finding | None:
    """One loss weight per step row, so long failed trajectories weigh more than their number
    (rLLM PR #512, verl PR #7580).

    Examined when the batch comes from a trainer (it has the trainer's advantage: a rollout file
    that no trainer saw has no loss to weigh) whose advantage is one number per trajectory,
    broadcast to its step rows (as in both sources; a step-level advantage such as GiGPO's makes
    each step its own decision, weighed per step by design), has more rows than rollouts, and
    every row weighs the same (no ``loss_weight_N``, or all equal). With f_traj = failed rollouts / R and f_rows = their steps /
    N: fires when f_traj > 0 and f_rows >= FAIL_RATIO * f_traj; rows = the failed rollouts' steps."""
    p = b.process
    w = b.loss_weight_N
    if b.advantage_N is None or not np.isfinite(b.advantage_N).any():
        return None
    _, const_R, empty_R = _rollout_advantage(b)
    if not (const_R | empty_R).all():  # a step-level advantage: each step is its own decision
        return None
    if w is not None and np.isfinite(w).all() and np.ptp(w) > 1e-9 * (1.0 + np.abs(w).max()):
        return None
    len_R = p.rollout_len
    n_R, n_N = len(len_R), int(len_R.sum())
    if n_N <= n_R:
        return None
    fail_R = ~np.asarray(p.rollout_success, dtype=bool)
    f_traj = fail_R.mean()
    f_rows = len_R[fail_R].sum() / n_N
    if f_traj <= 0 or f_rows < FAIL_RATIO * f_traj:
        return None
    steps = fail_R[p.step_rollout]
    return finding("row_weighted_loss", b.iteration, b.rows_of(steps), b.n_rows,
                   f"every step row weighs the same in the loss while the failed trajectories are "
                   f"{100 * f_traj:.0f}% of the trajectories but {100 * f_rows:.0f}% of the rows, so "
                   "failures weigh more than their number and long trajectories dominate the gradient: "
                   "give each row a loss weight of 1 / (its trajectory's rows), normalised over the batch, "
                   "so every trajectory weighs the same (verl PR #7580's loss_weight, rLLM PR #512).")
