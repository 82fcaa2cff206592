"""Step-level PPO-clip with a KL penalty: the flat batch, its log-probabilities and the loss.

This is the part a verl user reads next to verl's ``core_algos`` (``compute_policy_loss``,
``kl_penalty``): what one optimiser step does with the advantages an estimator produced.

**Batch.** The N steps of an iteration in the estimators' order (group, rollout, step), each
with its advantage ``A_n`` (shape (N,)). Steps that share (observation, response) share their
log-probability, so the model scores P distinct *pairs*; pairs that share an observation share
one prompt forward, so the model reads D distinct *boards* (D <= P <= N).

**Log-probabilities** (:func:`pair_logprobs`). For a response y = (y_1 .. y_m) to prompt x::

    log pi(y | x) = sum_j log softmax(z_j / T)[y_j],   z_j = logits after x, y_1 .. y_{j-1}

The prompt of each distinct board is run once (right-padded, key/value cache kept); z_1 is read
at its last position. Pairs with m >= 2 continue from the cached prompt with y_1 .. y_{m-1} in
one more (short) forward for z_2 .. z_m. For the tiny model (y = action word, ``<eos>``) that is
one prompt pass per board plus one token per pair, where scoring each pair as its own padded
sequence (``Policy.response_logprobs``, the slow twin kept in the tests) re-reads the prompt for
every action taken there.

**Loss** (:func:`ppo_loss`), for a minibatch B of steps with ``rho_n = exp(log pi - log pi_old)``
and the frozen starting policy ``pi_ref``::

    L = (1/|B|) sum_{n in B} [ -min(rho_n A_n, clip(rho_n, 1-eps, 1+eps) A_n)     (PPO-clip)
                               + kl_coef * k3_n ]                                  (KL penalty)
    k3_n = exp(log pi_ref - log pi) - (log pi_ref - log pi) - 1

averaged over the steps of B (the step-averaged objective of CRBC Eq. 15).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from crbc.io.rollouts import RolloutGroup

__all__ = [
    "Batch", "Encoded", "flatten", "LOSS_AGG_MODES", "LossParts", "minibatches", "pair_logprobs",
    "ppo_loss", "ppo_update", "step_weights"
]


@dataclass
class Batch:
    """Flat per-step training data of one iteration (shapes: N steps, P pairs, D boards)."""

    advantages: np.ndarray  #: (N,) float64, A_final of each step
    pair_N: np.ndarray  #: (N,) int64, the step's distinct (observation, response) pair
    pair_obs: list[str]  #: (P,) observation of each pair
    pair_resp: list[str]  #: (P,) response text of each pair
    group_N: np.ndarray | None = None  #: (N,) int64, the step's group (None: one group)
    episode_N: np.ndarray | None = None  #: (N,) int64, the step's rollout (None: one rollout)

    @property
    def n_steps(self) -> int:
        return len(self.pair_N)

    def boards(self) -> tuple[list[str], np.ndarray]:
        """(distinct observations (D,), board index of each pair (P,)) in first-seen order."""
        index: dict[str, int] = {}
        board_P = np.array([index.setdefault(o, len(index)) for o in self.pair_obs], dtype=np.int64)
        return list(index), board_P


def flatten(groups: Sequence[RolloutGroup], advantages_N: np.ndarray) -> Batch:
    """Steps in the estimators' order (group, rollout, step) with their advantages."""
    pairs: dict[tuple[str, str], int] = {}
    pair_N, group_N, episode_N = [], [], []
    episode = 0
    for gi, g in enumerate(groups):
        for r in g.rollouts:
            for s in r.steps:
                if s.obs is None or s.response is None:
                    raise ValueError(f"{g.group}: a step lacks obs/response; training needs both")
                pair_N.append(pairs.setdefault((s.obs, s.response), len(pairs)))
                group_N.append(gi)
                episode_N.append(episode)
            episode += 1
    if len(pair_N) != len(advantages_N):
        raise ValueError("advantages do not match the steps")
    return Batch(np.asarray(advantages_N, dtype=np.float64), np.asarray(pair_N, dtype=np.int64),
                 [o for o, _ in pairs], [r for _, r in pairs], np.asarray(group_N, dtype=np.int64),
                 np.asarray(episode_N, dtype=np.int64))


LOSS_AGG_MODES = ("episode", "step", "token-mean", "seq-mean-token-mean", "seq-mean-token-sum")


def step_weights(episode_N: np.ndarray | None, n: int, mode: str = "step",
                 tokens_N: np.ndarray | None = None) -> np.ndarray:
    """Weights ``w_n`` of a minibatch's n step rows in the loss ``sum_n w_n l_n``, shape (n,).

    ``l_n`` is a row's clipped surrogate (plus KL term), computed with the ratio of its whole
    response; ``T_n`` (``tokens_N``, default 1) is the row's number of response tokens. verl's
    ``agg_loss`` modes over step rows (one row per step, as verl-agent packs them), where every
    token of a row carries the row's loss:

    - ``"token-mean"``: ``w_n = T_n / sum_m T_m`` (the mean over all response tokens);
    - ``"seq-mean-token-mean"``: ``w_n = 1 / n`` (each row's token mean, then the mean over rows);
    - ``"seq-mean-token-sum"``: ``w_n = T_n / n`` (each row's token sum, then the mean; the
      weights sum to the mean row length, not 1).

    And over episodes, which verl-agent's step rows do not have:

    - ``"step"``: ``1 / n`` (the step-averaged objective, CRBC Eq. 15; equal to
      ``seq-mean-token-mean``);
    - ``"episode"``: ``1 / (E T_e)`` for a step of episode e with T_e steps among the E episodes
      of the minibatch: each episode counts once whatever its length.
    """
    if mode not in LOSS_AGG_MODES:
        raise ValueError(f"unknown loss aggregation {mode!r} (one of {', '.join(LOSS_AGG_MODES)})")
    if n == 0:
        return np.zeros(0)
    if mode == "episode" and episode_N is not None:
        _, inv, counts = np.unique(episode_N, return_inverse=True, return_counts=True)
        return 1.0 / (len(counts) * counts[inv])
    if mode in ("token-mean", "seq-mean-token-sum"):
        t_N = np.ones(n) if tokens_N is None else np.asarray(tokens_N, dtype=np.float64)
        if len(t_N) != n or (t_N < 0).any():
            raise ValueError("tokens_N must hold n non-negative token counts")
        if mode == "token-mean":
            total = t_N.sum()
            return t_N / total if total > 0 else np.full(n, 1.0 / n)
        return t_N / n
    return np.full(n, 1.0 / n)


@dataclass
class Encoded:
    """A batch's token ids, made once per iteration: prompts per board, responses per pair."""

    prompt_ids: list[list[int]]  #: (D, len) token ids of each board's prompt
    resp_ids: list[list[int]]  #: (P, len) token ids of each pair's response
    board_P: np.ndarray  #: (P,) board of each pair

    @classmethod
    def of(cls, policy, batch: Batch) -> Encoded:
        boards, board_P = batch.boards()
        tok = policy.tokenizer
        prompts = tok([policy.prompt(b) for b in boards], add_special_tokens=False)["input_ids"]
        answers = tok(list(batch.pair_resp), add_special_tokens=False)["input_ids"]
        return cls([list(p) for p in prompts], [list(a) for a in answers], board_P)


def _right_padded(rows: Sequence[Sequence[int]], pad: int):
    import torch

    width = max((len(r) for r in rows), default=0)
    ids = torch.full((len(rows), max(width, 1)), pad, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
        mask[i, : len(r)] = 1
    return ids, mask


def pair_logprobs(policy, enc: Encoded, pairs: Sequence[int] | None = None, temperature: float = 1.0):
    """``log pi(response | prompt)`` of the given pairs (default: all), shape (len(pairs),).

    For a Llama policy (the tiny one) one packed forward of :mod:`crbc.policy.lean`: each
    distinct board's prompt once, followed by its pairs' distinct response prefixes as branches.
    Other models: one prompt forward per distinct board among the pairs, then one continuation
    forward from the cached prompts for the pairs whose response has two or more tokens (module
    docstring). Differentiable; wrap in ``torch.no_grad()`` to only score.
    """
    import torch

    from crbc.policy import lean

    pairs = np.arange(len(enc.resp_ids)) if pairs is None else np.asarray(pairs, dtype=np.int64)
    if len(pairs) == 0:
        return torch.zeros(0)
    boards, row_of_pair = np.unique(enc.board_P[pairs], return_inverse=True)
    pad = policy.tokenizer.pad_token_id
    if pad is None:
        pad = policy.tokenizer.eos_token_id
    if lean.supports(policy.model):
        return lean.score_responses(policy.model, [enc.prompt_ids[b] for b in boards], row_of_pair.tolist(),
                                    [enc.resp_ids[p] for p in pairs], pad, temperature)
    dev = policy.device
    ids, mask = _right_padded([enc.prompt_ids[b] for b in boards], pad)
    lengths = mask.sum(-1)
    resp = [enc.resp_ids[p] for p in pairs]
    cont = [i for i, r in enumerate(resp) if len(r) >= 2]
    decoder, head = policy.model.get_decoder(), policy.model.get_output_embeddings()
    out = decoder(input_ids=ids.to(dev), attention_mask=mask.to(dev),
                  position_ids=torch.arange(ids.shape[1])[None].expand_as(ids).to(dev), use_cache=bool(cont))
    last = out.last_hidden_state[torch.arange(len(boards)), lengths - 1]
    logp_first = torch.log_softmax(head(last).float() / max(temperature, 1e-6), dim=-1)  # (D', V)
    first_tok = torch.tensor([r[0] if r else 0 for r in resp], dtype=torch.long, device=dev)
    has = torch.tensor([len(r) > 0 for r in resp], device=dev)
    rows = torch.as_tensor(row_of_pair, dtype=torch.long, device=dev)
    total = logp_first[rows, first_tok] * has
    if cont:
        c_ids, c_mask = _right_padded([resp[i][:-1] for i in cont], pad)
        c_tgt, _ = _right_padded([resp[i][1:] for i in cont], pad)
        c_rows = rows[cont]
        cache = out.cache
        cache.batch_select_indices(c_rows)
        pos = lengths[c_rows.cpu()][:, None] + torch.arange(c_ids.shape[1])[None]
        hid = decoder(input_ids=c_ids.to(dev), attention_mask=torch.cat([mask[c_rows.cpu()], c_mask], 1).to(dev),
                      position_ids=pos.to(dev), cache=cache, use_cache=True).last_hidden_state
        logp = torch.log_softmax(head(hid).float() / max(temperature, 1e-6), dim=-1)
        picked = logp.gather(-1, c_tgt.to(dev)[..., None]).squeeze(-1) * c_mask.to(dev)
        total = total.index_add(0, torch.tensor(cont, device=dev), picked.sum(-1))
    return total


@dataclass(frozen=True)
class LossParts:
    """The loss of one minibatch and what it is made of (all scalars, the loss differentiable)."""

    loss: Any  #: policy_loss + kl_coef * kl (a 0-d tensor)
    policy_loss: float  #: -mean clipped surrogate
    kl: float  #: mean k3 estimate of KL(pi || pi_ref)
    clip_frac: float  #: share of steps with |rho - 1| > eps
    ratio_dev: float  #: mean |rho - 1|


def ppo_loss(logp, old_logp, ref_logp, adv, clip: float, kl_coef: float, weights=None) -> LossParts:
    """PPO-clip loss with the k3 KL penalty (module docstring); inputs shape (B,).

    ``weights`` (B,) replace the step average 1/|B| (see :func:`step_weights`).
    """
    import torch

    w = torch.full_like(logp, 1.0 / max(len(logp), 1)) if weights is None else weights
    ratio = torch.exp(logp - old_logp)
    surr = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip, 1 + clip) * adv)
    d = ref_logp - logp
    kl = torch.exp(d) - d - 1
    policy_loss = -(w * surr).sum()
    loss = policy_loss + kl_coef * (w * kl).sum()
    with torch.no_grad():
        dev = (ratio - 1).abs()
        return LossParts(loss, float(policy_loss), float((w * kl).sum()),
                         float((w * (dev > clip).float()).sum()), float((w * dev).sum()))


def minibatches(group_N: np.ndarray, n_minibatches: int, generator) -> list[np.ndarray]:
    """Step indices of each minibatch: the groups shuffled, then cut into ``n_minibatches``
    runs of (nearly) equal group count; a group's steps always share a minibatch.

    Groups are different levels, so their boards hardly overlap: every epoch scores each board
    about once however many minibatches it has (random step minibatches would re-read a board
    in every minibatch holding one of its steps). Shape: a list of (n_k,) int64 arrays.
    """
    import torch

    ids = np.unique(group_N)
    perm = ids[torch.randperm(len(ids), generator=generator).numpy()]
    chunks = np.array_split(perm, min(max(n_minibatches, 1), len(ids)))
    return [np.flatnonzero(np.isin(group_N, c)) for c in chunks]


def ppo_update(policy, ref_policy, optimizer, batch: Batch, cfg, generator,
               rollout_memo=None) -> dict[str, float]:
    """One iteration's PPO-clip + KL update; returns the means over optimiser steps.

    ``cfg`` supplies temperature, ppo_epochs, minibatches (optimiser steps per epoch, see
    :func:`minibatches`), clip, kl_coef, max_grad_norm and loss_agg (:func:`step_weights`)
    (a ``TrainConfig``).

    ``log pi_old`` is the policy before the first step: the first minibatch's own forward
    (detached) for its pairs (so the first step's ratio is exactly 1). The other pairs' come from
    ``rollout_memo`` when given (the :class:`~crbc.policy.base.NextTokenMemo` the batch was sampled
    with, same weights: the logits the rollout drew from, equal to a fresh forward up to float32
    rounding, about 1e-6), and otherwise (or for pairs it lacks) from one no-grad pass before
    that step.
    ``log pi_ref`` is one no-grad pass of the frozen policy, skipped when ``kl_coef`` is 0 (then
    the KL term is 0 and ``kl`` is not reported).
    """
    import torch

    params = [p for p in policy.model.parameters() if p.requires_grad]
    enc = Encoded.of(policy, batch)
    n_pairs = len(enc.resp_ids)
    ref_P = None
    if cfg.kl_coef > 0:
        with torch.no_grad():
            ref_P = pair_logprobs(ref_policy, enc, None, cfg.temperature)
    old_P = torch.zeros(n_pairs)
    need_old = np.ones(n_pairs, dtype=bool)  # pairs whose old log-prob is still to be computed
    if rollout_memo is not None:
        from_memo, known = rollout_memo.logprobs([enc.prompt_ids[b] for b in enc.board_P], enc.resp_ids,
                                                 cfg.temperature)
        old_P[known] = from_memo[known]
        need_old &= ~known.numpy()
    adv = torch.as_tensor(batch.advantages, dtype=torch.float32)
    tokens_P = np.array([len(r) for r in enc.resp_ids], dtype=np.float64)
    pair_N = torch.as_tensor(batch.pair_N)
    group_N = batch.group_N if batch.group_N is not None else np.zeros(batch.n_steps, dtype=np.int64)
    sums = dict.fromkeys(("loss", "policy_loss", "kl", "clip_frac", "grad_norm", "ratio_dev"), 0.0)
    count = 0
    for _ in range(cfg.ppo_epochs):
        for mb in minibatches(group_N, cfg.minibatches, generator):
            idx = torch.as_tensor(mb)
            uniq, inv = torch.unique(pair_N[idx], return_inverse=True)
            logp_u = pair_logprobs(policy, enc, uniq.numpy(), cfg.temperature)
            if count == 0:  # still the old weights
                old_P[uniq] = logp_u.detach()
                rest = np.setdiff1d(np.flatnonzero(need_old), uniq.numpy())
                if len(rest):
                    with torch.no_grad():
                        old_P[torch.as_tensor(rest)] = pair_logprobs(policy, enc, rest, cfg.temperature)
            logp = logp_u[inv]
            pn = pair_N[idx]
            ref = ref_P[pn] if ref_P is not None else logp.detach()
            w = step_weights(None if batch.episode_N is None else batch.episode_N[mb], len(mb),
                             getattr(cfg, "loss_agg", "step"), tokens_P[batch.pair_N[mb]])
            parts = ppo_loss(logp, old_P[pn], ref, adv[idx], cfg.clip, cfg.kl_coef,
                             torch.as_tensor(w, dtype=torch.float32))
            optimizer.zero_grad(set_to_none=True)
            parts.loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
            optimizer.step()
            sums["loss"] += float(parts.loss.detach())
            sums["policy_loss"] += parts.policy_loss
            sums["kl"] += parts.kl
            sums["clip_frac"] += parts.clip_frac
            sums["grad_norm"] += float(gn)
            sums["ratio_dev"] += parts.ratio_dev
            count += 1
    out = {k: v / max(count, 1) for k, v in sums.items()}
    if ref_P is None:
        out.pop("kl")
    out["distinct_pairs"] = n_pairs
    out["distinct_boards"] = len(enc.prompt_ids)
    out["optimizer_steps"] = count
    return out
