"""The doctor's checks on a trainer's token tensors: advantages against the response mask.

On :class:`crbc.doctor.batch.Tokens` (B rows, L tokens): ``adv[b, l]`` the advantage the loss
reads, ``m[b, l]`` the response (loss) mask. A row's *span* is [first, last], its first and last
masked token. Nothing outside the span is examined: before it lies the prompt, after it the
padding, where verl's whitening (GAE) leaves values that the masked loss never reads. Inside the
span, verl's multi-turn GAE (PR #2337) leaves on each observation token the advantage of the next
trained token (:mod:`crbc.doctor.gae`), also never read: ``advantage_off_mask`` tells that from
GAE run over the observation tokens (miles PR #1827), by recomputing GAE where values and token
rewards are logged. A token counts as carrying an advantage when |adv| > TOKEN_ZERO. Numpy only;
a torch tensor is given as ``tensor.cpu().numpy()`` by the caller.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from crbc.doctor.batch import Tokens
from crbc.doctor.findings import Finding, finding
from crbc.doctor.gae import GAE_GRID, gae_every_token, gae_trained_tokens, same_up_to_whitening
from crbc.doctor.registry import register_check

__all__ = [
    "advantage_off_mask", "advantage_shifted", "CARRY_RTOL", "carried_from_next", "gae_verdict", "MAJORITY",
    "MAX_GAE_ROWS", "MAX_SHIFT", "shift_of_rows", "SHIFTED_SHARE", "TOKEN_ZERO"
]

TOKEN_ZERO = 1e-7
MAX_SHIFT = 3  #: offsets tried by advantage_shifted: -MAX_SHIFT..MAX_SHIFT tokens
SHIFTED_SHARE = 0.1  #: advantage_shifted fires when at least this share of the examined rows is offset
CARRY_RTOL = 1e-5  #: a masked token's advantage "equals" the next trained token's within this (float32 safe)
MAJORITY = 0.5  #: share of the decided rows that must show a bug
MAX_GAE_ROWS = 64  #: rows GAE is recomputed on (a trainer computes it one way for the whole batch)


@dataclass(frozen=True, eq=False)
class _View:
    """What every token check reads, computed once per :class:`Tokens`: ``inside`` (B, L) the
    row's span, ``has`` (B,) a masked token, ``nz`` (B, L) an advantage inside the span,
    ``shift`` (B,) :func:`shift_of_rows`."""

    inside: np.ndarray
    has: np.ndarray
    nz: np.ndarray
    shift: np.ndarray


_VIEWS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _view(t: Tokens) -> _View:
    v = _VIEWS.get(t)
    if v is None:
        m = t.mask
        has = m.any(axis=1)
        L = m.shape[1]
        first = m.argmax(axis=1)
        last = L - 1 - m[:, ::-1].argmax(axis=1)
        pos = np.arange(L)[None, :]
        inside = (pos >= first[:, None]) & (pos <= last[:, None]) & has[:, None]
        nz = (np.abs(t.advantages) > TOKEN_ZERO) & inside
        v = _View(inside, has, nz, _shift(m, inside, has, nz))
        _VIEWS[t] = v
    return v


def _shift(m: np.ndarray, inside: np.ndarray, has: np.ndarray, nz: np.ndarray) -> np.ndarray:
    B, L = m.shape
    padded = np.zeros((B, L + 2 * MAX_SHIFT), dtype=bool)
    padded[:, MAX_SHIFT:MAX_SHIFT + L] = m
    best_k = np.zeros(B, dtype=np.int64)
    mism0 = ((nz != m) & inside).sum(axis=1)
    best = mism0.copy()
    for k in sorted(range(-MAX_SHIFT, MAX_SHIFT + 1), key=abs):
        if k == 0:
            continue
        shifted = padded[:, MAX_SHIFT - k:MAX_SHIFT - k + L]  # shifted[:, l] = m[l - k]
        mk = ((nz != shifted) & inside).sum(axis=1)
        better = mk < best
        best_k[better], best[better] = k, mk[better]
    ok = has & nz.any(axis=1) & (mism0 >= 1) & (2 * best <= mism0)
    return np.where(ok, best_k, 0)


def shift_of_rows(t: Tokens) -> np.ndarray:
    """(B,) the offset k of each row's advantages against its mask (0: aligned).

    Within the span, mism(k) = #{l : [|adv[l]| > TOKEN_ZERO] != m[l - k]} (m is 0 beyond the row).
    A row is offset by k != 0 when it carries an advantage in its span, mism(0) >= 1 and
    mism(k) <= mism(0) / 2 with k the offset of least mismatch (the smallest |k| among ties)."""
    return _view(t).shift


@register_check("advantage_shifted", severity="error", order=60, reads="tokens",
                what="advantages offset by one or more tokens against the response mask")
def advantage_shifted(t: Tokens, iteration: int | None = None) -> Finding | None:
    """Advantages offset by one or more tokens against the response mask (:func:`shift_of_rows`).
    Fires when >= SHIFTED_SHARE of the rows that carry an advantage in their span are offset;
    rows = those rows."""
    v = _view(t)
    examined = v.nz.any(axis=1)
    k_B = v.shift
    bad = k_B != 0
    if not bad.any() or bad.sum() < SHIFTED_SHARE * examined.sum():
        return None
    ks = np.unique(k_B[bad])
    by = ", ".join(f"{int(k):+d}" for k in ks)
    return finding("advantage_shifted", iteration, np.flatnonzero(bad), t.n_rows,
                   f"in {int(bad.sum())} of {int(examined.sum())} rows the advantages sit {by} token(s) "
                   "off the response mask, so tokens are trained with their neighbour's advantage: "
                   "build the advantage on the same positions as the loss mask (advantage[i] belongs "
                   "to the label predicted at position i).")


def carried_from_next(t: Tokens) -> np.ndarray:
    """(B, L) bool: the token's advantage equals the advantage of the next trained token after it
    in its row (|adv[l] - adv[n(l)]| <= TOKEN_ZERO + CARRY_RTOL |adv[n(l)]|, n(l) the first l' > l
    with mask[l']); False where no trained token follows. Verl's GAE over the trained tokens
    leaves exactly this on observation tokens (:mod:`crbc.doctor.gae`)."""
    B, L = t.mask.shape
    idx = np.where(t.mask, np.arange(L)[None, :], L)
    nxt = np.minimum.accumulate(idx[:, ::-1], axis=1)[:, ::-1]  # first trained token at or after l
    nxt = np.concatenate([nxt[:, 1:], np.full((B, 1), L)], axis=1)  # ... strictly after l
    ok = nxt < L
    follow = np.take_along_axis(t.advantages, np.minimum(nxt, L - 1), axis=1)
    return ok & (np.abs(t.advantages - follow) <= TOKEN_ZERO + CARRY_RTOL * np.abs(follow))


def gae_verdict(t: Tokens, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[float, float] | None]:
    """With ``values`` and ``rewards`` logged, on the rows ``rows`` (at most MAX_GAE_ROWS of the
    indices given are used): ``(every_B, trained_B, (gamma, lam))``, (B,) bool the rows whose
    trained tokens equal GAE over every token, and over the trained tokens only, both up to
    whitening over those rows' trained tokens (:func:`crbc.doctor.gae.same_up_to_whitening`; a
    trainer's whitening over the whole batch is an affine map of them, which whitening again
    removes), for the first (gamma, lam) of ``(t.gamma, t.lam)`` or
    :data:`crbc.doctor.gae.GAE_GRID` under which some row matches either; (all False, all False,
    None) when none does. Tokens after a row's last trained token are left out."""
    B, L = t.mask.shape
    sub = np.asarray(rows, dtype=np.int64)[:MAX_GAE_ROWS]
    m = t.mask[sub]
    last = L - 1 - m[:, ::-1].argmax(axis=1)
    width = int(last.max()) + 1 if len(sub) else 0
    m = m[:, :width]
    keep = np.arange(width)[None, :] <= last[:, None]
    r, val = np.where(keep, t.rewards[sub, :width], 0.0), np.where(keep, t.values[sub, :width], 0.0)
    adv = t.advantages[sub, :width]
    every, trained = np.zeros(B, dtype=bool), np.zeros(B, dtype=bool)
    grid = [(t.gamma, t.lam)] if t.gamma is not None and t.lam is not None else list(GAE_GRID)
    for gamma, lam in grid:
        e = same_up_to_whitening(adv, gae_every_token(r, val, gamma, lam), m)
        k = same_up_to_whitening(adv, gae_trained_tokens(r, val, m, gamma, lam), m)
        if (e | k).any():
            every[sub], trained[sub] = e, k
            return every, trained, (gamma, lam)
    return every, trained, None


def _off_mask_by_gae(t: Tokens, iteration: int | None, gapped: np.ndarray, every: np.ndarray,
                     trained: np.ndarray, params: tuple[float, float]) -> Finding | None:
    """``advantage_off_mask`` from :func:`gae_verdict` on (some of) the rows with an observation
    gap (``gapped``): fires when, of the examined rows that match one way only, at least MAJORITY
    are GAE over every token and not over the trained tokens. A trainer computes its GAE one way
    for the whole batch, so rows = every row with an observation gap."""
    decided = gapped & (every ^ trained)
    bad = decided & every
    if not bad.any() or bad.sum() < MAJORITY * decided.sum():
        return None
    gamma, lam = params
    return finding("advantage_off_mask", iteration, np.flatnonzero(gapped), t.n_rows,
                   f"recomputed from the logged values and token rewards (gamma {gamma:g}, lambda {lam:g}), "
                   f"the advantages of {int(bad.sum())} of the {int(decided.sum())} rows with observation "
                   "tokens examined are GAE over every response token, not over the trained ones, so the "
                   "observation tokens' rewards and value deltas leak into the trained tokens' advantages "
                   "(miles PR #1827): skip masked tokens in the GAE recursion (carry the running advantage "
                   "and next value over them, as verl does since PR #2337).")


@register_check("advantage_off_mask", severity="error", order=50, reads="tokens",
                what="advantages computed over tokens outside the response mask")
def advantage_off_mask(t: Tokens, iteration: int | None = None) -> Finding | None:
    """The advantage on trained tokens computed over tokens outside the response mask.

    Examined: rows with masked tokens inside their span (observation or tool tokens between
    turns), not offset (:func:`shift_of_rows`; those are ``advantage_shifted``'s). With values
    and token rewards logged, :func:`gae_verdict` decides which GAE the batch holds (fires on
    rows that are GAE over every token and not over the trained ones). Otherwise, or when no
    recomputation matches, a masked token in the span is harmless when its advantage is 0 or
    equals the next trained token's (:func:`carried_from_next`, what verl's multi-turn GAE
    leaves, never read by the masked loss); the check fires when some row has a masked token in
    its span that is neither. rows = those rows."""
    v = _view(t)
    gap = v.inside & ~t.mask
    gapped = gap.any(axis=1) & (v.shift == 0)
    if not gapped.any():
        return None
    if t.has_gae_inputs:
        every, trained, params = gae_verdict(t, np.flatnonzero(gapped))
        if params is not None:
            return _off_mask_by_gae(t, iteration, gapped, every, trained, params)
    odd = gap & v.nz & ~carried_from_next(t)
    bad = odd.any(axis=1) & gapped
    if not bad.any():
        return None
    n_tok = int(odd[bad].sum())
    return finding("advantage_off_mask", iteration, np.flatnonzero(bad), t.n_rows,
                   f"{n_tok} tokens in {int(bad.sum())} rows that the loss mask leaves out (observation "
                   "or tool tokens) carry an advantage of their own, neither 0 nor the next trained "
                   "token's (what GAE over the trained tokens carries over them), so the advantage was "
                   "computed over tokens the policy never produced and their rewards and values leak into "
                   "the trained ones (miles PR #1827): compute GAE over the trainable tokens only, skipping "
                   "masked ones, and log values and token_level_rewards so the doctor can recompute it.")
