"""The doctor's checks on step rows: grouping, the trainer's step advantages, rewards, anchors.

Each check is a pure function ``check(batch) -> Finding | None`` of a :class:`crbc.doctor.batch.Batch`
(N steps, R rollouts, G groups; ``A`` is the trainer's advantage of a step, ``T_i`` the number of
steps of rollout i, ``S_i`` its score). Each threshold is one a clean run does not cross: the
bug pattern must hold for at least half of the rows or groups that can show it (unless stated).
"""

from __future__ import annotations

import numpy as np

from crbc.doctor.batch import Batch
from crbc.doctor.findings import Finding, finding
from crbc.doctor.registry import register_check
from crbc.doctor.token_checks import TOKEN_ZERO
from crbc.run_analysis.health import MERGE_WARNING_SHARE, later_shared_share, merge_warning, shared_steps
from crbc.run_analysis.similarity_hint import suggestion as similarity_suggestion

__all__ = [
    "all_zero_advantage", "CENTRED", "length_weighted_baseline", "MAJORITY", "no_shared_anchors",
    "singleton_groups", "step_rewards_sum", "SUM_ATOL", "SUM_RTOL", "ZERO", "zero_step_advantage",
    "zero_variance_groups"
]

MAJORITY = 0.5  #: share of the rows (or groups) that can show a bug which must show it
ZERO = 1e-9  #: |A| at most this counts as a zero advantage (a last step's, a group's)
CENTRED = 1e-3  #: |sum A| / sum |A| below this counts as centred (float32 advantages: ~1e-7)
SUM_ATOL, SUM_RTOL = 1e-4, 1e-4  #: step rewards "sum to the score" within these


def _per_rollout(p, x_N: np.ndarray, how=np.add) -> np.ndarray:
    """(R,) a reduction of ``x_N`` over each rollout's steps (rollouts are non-empty)."""
    return how.reduceat(x_N, p.rollout_offsets[:-1])


@register_check("singleton_groups", severity="error", order=10, reads="rows",
                what="groups of one rollout, where every group-relative advantage is 0 or the raw score")
def singleton_groups(b: Batch) -> Finding | None:
    """Groups with one rollout: with a group of one, GRPO's (S_i - mean) / (std + eps) is 0 (verl:
    mean 0, std 1 gives the raw score) and every group-relative baseline is lost.

    Fires when >= half of the G groups hold a single rollout; rows = the steps of those groups."""
    p = b.process
    n_G = np.bincount(p.rollout_group, minlength=len(p.group_ids))
    single_G = n_G == 1
    if not single_G.any() or single_G.mean() < MAJORITY:
        return None
    steps = single_G[p.rollout_group[p.step_rollout]]
    return finding("singleton_groups", b.iteration, b.rows_of(steps), b.n_rows,
                   f"{int(single_G.sum())} of {len(n_G)} groups hold a single rollout, so every "
                   "group-relative advantage there is 0 or the raw score (no baseline): the group id "
                   "was probably made per trajectory; give all rollouts of one task the same group id "
                   "(uid) before computing advantages.")


@register_check("zero_step_advantage", severity="error", order=20, reads="rows",
                what="only the last step of each trajectory had an advantage")
def zero_step_advantage(b: Batch) -> Finding | None:
    """Only the last step trained: in a rollout with T_i >= 2 steps whose last step has A != 0,
    every earlier step has A exactly 0.

    Considered: rollouts with T_i >= 2, a finite A on every step and |A_last| > ZERO. Fires when
    >= half of them (and at least 2) show the pattern; rows = their earlier steps."""
    if b.advantage_N is None:
        return None
    p, a = b.process, b.advantage_N
    last_R = p.rollout_offsets[1:] - 1
    len_R = p.rollout_len
    finite_R = _per_rollout(p, np.isfinite(a).astype(np.int64)) == len_R
    a0 = np.where(np.isfinite(a), a, 0.0)
    seen_R = (len_R >= 2) & finite_R & (np.abs(a0[last_R]) > ZERO)
    earlier_zero_R = _per_rollout(p, (a0 != 0.0).astype(np.int64)) - (a0[last_R] != 0.0) == 0
    bad_R = seen_R & earlier_zero_R
    if bad_R.sum() < 2 or bad_R.sum() < MAJORITY * seen_R.sum():
        return None
    steps = bad_R[p.step_rollout] & ~b.last_N()
    return finding("zero_step_advantage", b.iteration, b.rows_of(steps), b.n_rows,
                   f"in {int(bad_R.sum())} of {int(seen_R.sum())} multi-step rollouts every step before "
                   "the last has advantage exactly 0 while the last has not, so only the last step of "
                   "each trajectory is trained: broadcast the trajectory's advantage to every step "
                   "with that step's own response mask.")


@register_check("length_weighted_baseline", severity="warning", order=30, reads="rows",
                what="an episode baseline averaged over step rows, not trajectories")
def length_weighted_baseline(b: Batch) -> Finding | None:
    """An episode baseline averaged over step rows, not trajectories (long trajectories weigh more).

    In a group whose trainer advantage is one number A_i per rollout (constant over its steps),
    a trajectory baseline centres the rollouts, sum_i A_i = 0, while a per-row baseline centres
    the rows, sum_i T_i A_i = 0. With u = sum_i A_i / sum_i |A_i| and w = sum_i T_i A_i / sum_i T_i |A_i|,
    a group is decisive when exactly one of |u|, |w| is below CENTRED, and row-centred when it is
    |w|. Fires when >= half of the decisive groups are row-centred; rows = their steps."""
    if b.advantage_N is None:
        return None
    p, a = b.process, b.advantage_N
    len_R = p.rollout_len.astype(np.float64)
    finite_R = _per_rollout(p, np.isfinite(a).astype(np.int64)) == p.rollout_len
    a0 = np.where(np.isfinite(a), a, 0.0)
    hi_R, lo_R = _per_rollout(p, a0, np.maximum), _per_rollout(p, a0, np.minimum)
    const_R = finite_R & (hi_R - lo_R <= 1e-6 * (1.0 + np.abs(hi_R)))
    g_R, n_G = p.rollout_group, len(p.group_ids)
    A_R = hi_R
    ok_G = np.bincount(g_R, weights=(~const_R).astype(float), minlength=n_G) == 0
    n_R_G = np.bincount(g_R, minlength=n_G)
    len_lo = np.full(n_G, np.inf)
    len_hi = np.zeros(n_G)
    np.minimum.at(len_lo, g_R, len_R)
    np.maximum.at(len_hi, g_R, len_R)
    abs_G = np.bincount(g_R, weights=np.abs(A_R), minlength=n_G)
    ok_G &= (n_R_G >= 2) & (len_hi > len_lo) & (abs_G > ZERO)
    if not ok_G.any():
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        u_G = np.abs(np.bincount(g_R, weights=A_R, minlength=n_G)) / abs_G
        w_G = (np.abs(np.bincount(g_R, weights=len_R * A_R, minlength=n_G))
               / np.bincount(g_R, weights=len_R * np.abs(A_R), minlength=n_G))
    traj_c, rows_c = u_G < CENTRED, w_G < CENTRED
    decisive = ok_G & (traj_c != rows_c)
    bad_G = decisive & rows_c
    if not bad_G.any() or bad_G.sum() < MAJORITY * decisive.sum():
        return None
    steps = bad_G[g_R[p.step_rollout]]
    return finding("length_weighted_baseline", b.iteration, b.rows_of(steps), b.n_rows,
                   f"in {int(bad_G.sum())} of {int(decisive.sum())} groups the advantages are centred "
                   "over step rows, not over trajectories, so a trajectory counts as many times as it "
                   "has steps in the baseline (long trajectories weigh more): compute the group mean "
                   "and std once per trajectory (deduplicate rows by trajectory id).")


@register_check("step_rewards_sum", severity="warning", order=40, reads="rows",
                what="step rewards that do not sum to the trajectory's score")
def step_rewards_sum(b: Batch) -> Finding | None:
    """Step rewards that do not sum to the trajectory's score where the run says they should.

    Considered: rollouts with a reward on every step and a given score. They should agree when
    the source says the score is the sum (``score_is_sum``), or, when it does not say, when at
    least half of those rollouts agree (|sum_t r_t - S_i| <= SUM_ATOL + SUM_RTOL |S_i|). Fires when
    some considered rollout disagrees; rows = its steps."""
    p = b.process
    r = b.reward_N
    has_R = _per_rollout(p, np.isfinite(r).astype(np.int64)) == p.rollout_len
    seen_R = has_R & p.rollout_has_score
    if not seen_R.any() or b.score_is_sum is False:
        return None
    sum_R = _per_rollout(p, np.where(np.isfinite(r), r, 0.0))
    score_R = p.rollout_score
    agree_R = np.abs(sum_R - score_R) <= SUM_ATOL + SUM_RTOL * np.abs(score_R)
    bad_R = seen_R & ~agree_R
    if not bad_R.any():
        return None
    if b.score_is_sum is None and (seen_R & agree_R).sum() < MAJORITY * seen_R.sum():
        return None
    k = int(np.flatnonzero(bad_R)[0])
    steps = bad_R[p.step_rollout]
    return finding("step_rewards_sum", b.iteration, b.rows_of(steps), b.n_rows,
                   f"in {int(bad_R.sum())} of {int(seen_R.sum())} trajectories the step rewards do not "
                   f"sum to the trajectory's score (e.g. {sum_R[k]:.6g} against {score_R[k]:.6g}), so "
                   "step-level credit and the episode score disagree about the same trajectory: record "
                   "each turn's raw reward, including the final one, and check their sum against the score.")


@register_check("no_shared_anchors", severity="warning", order=70, reads="rows",
                what="later steps at anchors no other rollout shares, so step credit is about 0")
def no_shared_anchors(b: Batch) -> Finding | None:
    """Later steps that share no anchor: :func:`crbc.run_analysis.health.merge_warning` (fewer than
    MERGE_WARNING_SHARE of the steps after each rollout's first sit at an anchor that two or more
    rollouts of the group visit); rows = the later steps at unshared anchors."""
    p = b.process
    if not merge_warning(p):
        return None
    steps = (p.step_t >= 2) & ~shared_steps(p)
    return finding("no_shared_anchors", b.iteration, b.rows_of(steps), b.n_rows,
                   f"only {100 * later_shared_share(p):.1f}% of the steps after the first sit at an "
                   f"anchor another rollout of the group shares (below {100 * MERGE_WARNING_SHARE:g}%), "
                   "so every step credit is about 0: observations that carry their history need an "
                   "anchor key (--anchor REGEX, anchor= in the trainer) that keeps only the state."
                   + similarity_suggestion(p))


def _score_spread_G(p) -> np.ndarray:
    """(G,) max - min of the rollouts' scores (the outcome when no score) in each group."""
    n_G = len(p.group_ids)
    hi, lo = np.full(n_G, -np.inf), np.full(n_G, np.inf)
    np.maximum.at(hi, p.rollout_group, p.rollout_score)
    np.minimum.at(lo, p.rollout_group, p.rollout_score)
    return hi - lo


@register_check("all_zero_advantage", severity="error", order=100, reads="rows",
                what="an advantage of 0 everywhere although outcomes differ")
def all_zero_advantage(b: Batch) -> Finding | None:
    """Nothing trained: the trainer's advantage is 0 everywhere although outcomes differ.

    Fires when (1) outcomes differ where a baseline can see it: some group of >= 2 rollouts has
    scores that differ (max - min > ZERO), or the groups of one rollout have scores that differ
    among themselves (every such group zero is rLLM #916's ``reinforce_plus_plus_baseline`` with
    ``rollout.n = 1``: r - mean([r]) = 0; verl PR #7581 names the same for ``rloo_vectorized``); (2) every step with a finite trainer advantage has
    |A| <= ZERO (and at least one step has one); (3) when the batch carries the trainer's token
    tensors, no trained token carries an advantage either (|adv[b, l]| <= TOKEN_ZERO wherever
    mask[b, l]; a non-zero advantage off the first token is ``advantage_shifted``'s to name).
    From a recorded run (no tensors) (3) is not examined: a 0 stored for every step is also what
    a recorder that read the wrong token leaves. Groups of >= 2 rollouts that all share one
    outcome are not (1): GRPO rightly gives them 0. rows = the steps with a trainer advantage."""
    if b.advantage_N is None:
        return None
    p, a = b.process, b.advantage_N
    have = np.isfinite(a)
    if not have.any() or np.abs(a[have]).max() > ZERO:
        return None
    n_R_G = np.bincount(p.rollout_group, minlength=len(p.group_ids))
    mixed_G = (n_R_G >= 2) & (_score_spread_G(p) > ZERO)
    single_R = n_R_G[p.rollout_group] == 1
    singles_differ = single_R.sum() >= 2 and np.ptp(p.rollout_score[single_R]) > ZERO
    if not (mixed_G.any() or singles_differ):
        return None
    t = b.tokens
    if t is not None and (np.abs(t.advantages[t.mask]) > TOKEN_ZERO).any():
        return None
    where = "on every trained token" if t is not None else "on every step as recorded"
    why = (f"{int(mixed_G.sum())} of {len(p.group_ids)} groups have rollouts with different outcomes"
           if mixed_G.any() else f"the {int(single_R.sum())} groups of one rollout have different outcomes")
    return finding("all_zero_advantage", b.iteration, b.rows_of(have), b.n_rows,
                   f"the trainer's advantage is 0 {where} although {why}, so nothing is trained: give "
                   "every rollout of a task the same group id (a group of one has no baseline but 0 or "
                   "its own score), compute the advantage after the rewards are filled in, and record "
                   "the advantage at a trained token.")


@register_check("zero_variance_groups", severity="info", order=80, reads="rows",
                what="groups whose rollouts all have the same outcome")
def zero_variance_groups(b: Batch) -> Finding | None:
    """Groups of >= 2 rollouts whose scores (the outcome when no score) are all equal: no
    group-relative learning signal there. Informational; fires when there is one."""
    p = b.process
    n_G = len(p.group_ids)
    flat_G = (np.bincount(p.rollout_group, minlength=n_G) >= 2) & (_score_spread_G(p) <= ZERO)
    if not flat_G.any():
        return None
    steps = flat_G[p.rollout_group[p.step_rollout]]
    return finding("zero_variance_groups", b.iteration, b.rows_of(steps), b.n_rows,
                   f"{int(flat_G.sum())} of {n_G} groups have the same outcome on every rollout, so "
                   "their group-relative advantage is 0 and they teach nothing: expected on tasks "
                   "that are too easy or too hard; resample or filter them if the share is large.")
