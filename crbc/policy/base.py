"""The policy interface and the batched sampling loop shared by both adapters.

``Policy.act`` turns B observations into B (semantic action, raw response) pairs with one
forward pass per generated token for the whole batch: prompts are left-padded, positions are
computed from the attention mask, and the key/value cache is reused between tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["choose_tokens", "Generators", "NextTokenMemo", "Policy", "sample_tokens", "sample_tokens_memo"]

#: A single generator shared by the batch, or one generator per row (per-episode randomness that
#: does not depend on which other episodes share the batch).
Generators = torch.Generator | Sequence[torch.Generator] | None


class Policy:
    """A text policy over board observations, backed by a transformers causal LM.

    Subclasses define the prompt, the parser and the canonical response of an action.
    Attributes: ``model`` (the causal LM), ``tokenizer``, ``name`` (written into rollout meta),
    ``max_new_tokens`` (response length cap; a response without a stop token is invalid).
    """

    max_new_tokens: int = 8

    def __init__(self, model, tokenizer, name: str):
        self.model = model
        self.tokenizer = tokenizer
        self.name = name

    # -- adapter hooks --------------------------------------------------------------------------
    def observation(self, env) -> str:
        """The observation text this policy sees for an environment's current state."""
        return env.render()

    def prompt(self, observation: str) -> str:
        """The full prompt text for one observation."""
        raise NotImplementedError

    def parse(self, token_ids: Sequence[int]) -> tuple[str, str]:
        """(semantic action or ``invalid``, raw response text) of generated token ids."""
        raise NotImplementedError

    def canonical_response(self, action: str) -> str:
        """The response text that expresses a semantic action (for ``action_logprobs``)."""
        raise NotImplementedError

    @property
    def stop_ids(self) -> list[int]:
        """Token ids that end a response."""
        ids = {self.tokenizer.eos_token_id}
        gen_eos = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        if isinstance(gen_eos, int):
            ids.add(gen_eos)
        elif gen_eos:
            ids.update(gen_eos)
        return sorted(i for i in ids if i is not None)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def save_pretrained(self, path) -> None:
        """Write the model (safetensors) and the tokenizer to a folder ``load_policy`` can read."""
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        self.model.save_pretrained(path, safe_serialization=True)
        self.tokenizer.save_pretrained(path)

    # -- sampling -------------------------------------------------------------------------------
    def encode_prompts(self, observations: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Left-padded (input_ids, attention_mask) for a batch of observations."""
        self.tokenizer.padding_side = "left"
        enc = self.tokenizer([self.prompt(o) for o in observations], add_special_tokens=False,
                             padding=True, return_tensors="pt")
        return enc["input_ids"].to(self.device), enc["attention_mask"].to(self.device)

    def act(self, observations: Sequence[str], temperature: float = 1.0,
            generator: Generators = None, memo: NextTokenMemo | None = None) -> list[tuple[str, str]]:
        """Sample one response per observation; temperature 0 is greedy.

        One batched forward pass per generated token. Returns (action, raw response) pairs.
        With a ``memo`` (valid while the weights do not change), next-token logits of prompts and
        response prefixes already scored are looked up instead of recomputed
        (:func:`sample_tokens_memo`); the random numbers drawn are the same either way.
        """
        if not observations:
            return []
        if memo is not None:
            tok = self.tokenizer
            new = [o for o in dict.fromkeys(observations) if o not in memo.prompts]
            if new:
                ids = tok([self.prompt(o) for o in new], add_special_tokens=False)["input_ids"]
                memo.prompts.update((o, tuple(q)) for o, q in zip(new, ids, strict=True))
            prompts = [memo.prompts[o] for o in observations]
            rows = sample_tokens_memo(self.model, prompts, self.max_new_tokens, self.stop_ids,
                                      temperature, generator, tok.pad_token_id, memo)
            return [self.parse(r) for r in rows]
        ids, mask = self.encode_prompts(observations)
        rows = sample_tokens(self.model, ids, mask, self.max_new_tokens, self.stop_ids,
                             temperature, generator, self.tokenizer.pad_token_id)
        return [self.parse(r) for r in rows]

    # -- scoring --------------------------------------------------------------------------------
    def response_logprobs(self, observations: Sequence[str], responses: Sequence[str],
                          temperature: float = 1.0) -> torch.Tensor:
        """Sum of log-probabilities of each response's tokens given its prompt, shape (B,).

        Differentiable (call under ``torch.no_grad()`` when only scoring).
        """
        if len(observations) != len(responses):
            raise ValueError("observations and responses must have the same length")
        tok = self.tokenizer
        prompts = tok([self.prompt(o) for o in observations], add_special_tokens=False)["input_ids"]
        answers = tok(list(responses), add_special_tokens=False)["input_ids"]
        width = max(len(p) + len(a) for p, a in zip(prompts, answers, strict=True))
        pad = tok.pad_token_id
        ids = torch.full((len(prompts), width), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        target = torch.zeros_like(ids, dtype=torch.bool)
        for i, (p, a) in enumerate(zip(prompts, answers, strict=True)):
            ids[i, : len(p) + len(a)] = torch.tensor(p + a)
            mask[i, : len(p) + len(a)] = 1
            target[i, len(p): len(p) + len(a)] = True
        ids, mask, target = ids.to(self.device), mask.to(self.device), target.to(self.device)
        logits = self.model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
        logp = torch.log_softmax(logits / max(temperature, 1e-6), dim=-1)
        picked = logp.gather(-1, ids[:, 1:, None]).squeeze(-1)
        return (picked * target[:, 1:]).sum(-1)

    def action_logprobs(self, observations: Sequence[str], actions: Sequence[str],
                        temperature: float = 1.0) -> torch.Tensor:
        """Log-probabilities of the canonical responses of semantic actions, shape (B,).

        For the tiny model that is log p(word) + log p(<eos> | word). ``invalid`` has no
        canonical response: score the raw response with :meth:`response_logprobs` instead.
        """
        responses = [self.canonical_response(a) for a in actions]
        return self.response_logprobs(observations, responses, temperature)


def _draw_uniforms(n_rows: int, rows: torch.Tensor, generator: Generators) -> torch.Tensor:
    """Uniform numbers for the rows being sampled (per-row generators draw only for their row)."""
    if generator is None or isinstance(generator, torch.Generator):
        return torch.rand(n_rows, generator=generator, dtype=torch.float64)[rows]
    out = torch.zeros(n_rows, dtype=torch.float64)
    for r in rows.tolist():
        out[r] = torch.rand(1, generator=generator[r], dtype=torch.float64)[0]
    return out[rows]


def choose_tokens(logits: torch.Tensor, temperature: float, live: torch.Tensor,
                  generator: Generators) -> torch.Tensor:
    """Next token per row: argmax at temperature 0, else inverse-CDF sampling of softmax(l/T)."""
    choice = torch.zeros(logits.shape[0], dtype=torch.long)
    rows = torch.nonzero(live).flatten()
    if rows.numel() == 0:
        return choice
    sub = logits[rows].double().cpu()
    if temperature <= 0:
        choice[rows] = sub.argmax(-1)
        return choice
    cdf = torch.softmax(sub / temperature, dim=-1).cumsum(-1)
    u = _draw_uniforms(logits.shape[0], rows, generator) * cdf[:, -1]
    picked = torch.searchsorted(cdf, u[:, None], right=True).squeeze(-1)
    choice[rows] = picked.clamp(max=logits.shape[-1] - 1)
    return choice


def _prefill(model, input_ids, attention_mask, position_ids):
    """Forward the prompts once per distinct prompt, then expand logits and cache to all rows.

    Episodes of one group often sit on the same anchor (always at the first step), so this saves
    most of the prompt compute of a group.
    """
    uniq, inverse = torch.unique(input_ids, dim=0, return_inverse=True)
    if uniq.shape[0] == input_ids.shape[0]:
        return model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                     use_cache=True, logits_to_keep=1)
    first = torch.zeros(uniq.shape[0], dtype=torch.long, device=input_ids.device)
    first.scatter_(0, inverse, torch.arange(len(inverse), device=input_ids.device))
    out = model(input_ids=input_ids[first], attention_mask=attention_mask[first],
                position_ids=position_ids[first], use_cache=True, logits_to_keep=1)
    out.cache.batch_select_indices(inverse)
    out.logits = out.logits[inverse]
    return out


@torch.inference_mode()
def sample_tokens(model, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                  max_new_tokens: int, stop_ids: Sequence[int], temperature: float,
                  generator: Generators, pad_id: int) -> list[list[int]]:
    """Batched autoregressive sampling with a KV cache; each row is cut after its stop token."""
    n = input_ids.shape[0]
    if generator is not None and not isinstance(generator, torch.Generator) and len(generator) != n:
        raise ValueError(f"got {len(generator)} generators for a batch of {n}")
    position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
    out = _prefill(model, input_ids, attention_mask, position_ids)
    stop = torch.tensor(list(stop_ids), dtype=torch.long)
    live = torch.ones(n, dtype=torch.bool)
    next_pos = position_ids[:, -1:] + 1
    rows: list[list[int]] = [[] for _ in range(n)]
    for step in range(max_new_tokens):
        tok = choose_tokens(out.logits[:, -1, :], temperature, live, generator)
        for r in torch.nonzero(live).flatten().tolist():
            rows[r].append(int(tok[r]))
        live &= ~torch.isin(tok, stop)
        if not live.any() or step == max_new_tokens - 1:
            break
        tok = torch.where(live, tok, torch.full_like(tok, pad_id)).to(input_ids.device)
        attention_mask = torch.cat([attention_mask, torch.ones_like(attention_mask[:, :1])], dim=1)
        out = model(input_ids=tok[:, None], attention_mask=attention_mask, position_ids=next_pos,
                    cache=out.cache, use_cache=True)
        next_pos = next_pos + 1
    return rows


class NextTokenMemo:
    """Next-token logits of token sequences one fixed model has already scored.

    A rollout batch revisits the same boards many times (16 x 8 Sokoban episodes take about
    1,700 steps on about 270 distinct boards): with the memo each distinct prompt is read once.
    After a new prompt, its ``speculate`` most likely first tokens are continued too (one decode
    step from the prompt's key/value cache), so the next token after a usual first token (for the
    tiny policy: ``<eos>`` after the action word) is already known. Only valid while the model's
    weights do not change: make one per rollout batch.
    """

    def __init__(self, speculate: int = 4):
        self.speculate = speculate
        self.table: dict[tuple[int, ...], torch.Tensor] = {}
        self.prompts: dict[str, tuple[int, ...]] = {}  #: prompt token ids of each observation seen
        self.forwards = 0  #: sequences the model actually read (prompts + continuations)

    def __len__(self) -> int:
        return len(self.table)

    def logprobs(self, prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]],
                 temperature: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
        """``log pi(response | prompt)`` from the stored logits, shape (n,) float32, and which
        ones are known (n,) bool: every prefix the model would read must be in the table (after a
        rollout that sampled the response, it is). Unknown entries are 0."""
        n = len(prompts)
        known = torch.ones(n, dtype=torch.bool)
        keys, tok, owner = [], [], []
        for i, (p, y) in enumerate(zip(prompts, responses, strict=True)):
            q = tuple(p)
            mine = []
            for t in y:
                if q not in self.table:
                    known[i] = False
                    break
                mine.append((q, int(t)))
                q = q + (int(t),)
            if known[i]:
                for key, t in mine:
                    keys.append(key)
                    tok.append(t)
                    owner.append(i)
        out = torch.zeros(n, dtype=torch.float32)
        if keys:
            logits = torch.stack([self.table[k] for k in keys]).float()
            logp = torch.log_softmax(logits / max(temperature, 1e-6), dim=-1)
            picked = logp.gather(-1, torch.tensor(tok, dtype=torch.long)[:, None]).squeeze(-1)
            out = out.index_add(0, torch.tensor(owner, dtype=torch.long), picked)
        return out, known


def _memo_fill(model, seqs: list[tuple[int, ...]], memo: NextTokenMemo, pad_id: int,
               continue_after: bool, stop: set[int]) -> None:
    """Score ``seqs`` (left-padded, one forward), store their next-token logits; with
    ``continue_after`` also those after each of their top ``memo.speculate`` non-stop tokens."""
    from crbc.policy import lean

    if lean.supports(model):
        _memo_fill_lean(model, seqs, memo, pad_id, continue_after, stop)
        return
    width = max(len(q) for q in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, q in enumerate(seqs):
        ids[i, width - len(q):] = torch.tensor(q, dtype=torch.long)
        mask[i, width - len(q):] = 1
    dev = next(model.parameters()).device
    ids, mask = ids.to(dev), mask.to(dev)
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
    spec = continue_after and memo.speculate > 0
    out = model(input_ids=ids, attention_mask=mask, position_ids=position_ids, use_cache=spec,
                logits_to_keep=1)
    rows, toks = _record_then_speculate(memo, seqs, out.logits[:, -1, :].float().cpu(), spec, stop)
    if not rows:
        return
    sel = torch.tensor(rows, dtype=torch.long, device=dev)
    out.cache.batch_select_indices(sel)
    nxt = model(input_ids=torch.tensor(toks, dtype=torch.long, device=dev)[:, None],
                attention_mask=torch.cat([mask[sel], torch.ones_like(mask[sel][:, :1])], dim=1),
                position_ids=position_ids[sel][:, -1:] + 1, cache=out.cache, use_cache=True)
    _record(memo, [seqs[i] + (t,) for i, t in zip(rows, toks, strict=True)], nxt.logits[:, -1, :].float().cpu())


def _record(memo: NextTokenMemo, keys: list[tuple[int, ...]], logits: torch.Tensor) -> None:
    """Keep the next-token logits of each token sequence in ``keys`` (row i of ``logits``) and
    count the rows the model read."""
    memo.forwards += len(keys)
    for i, q in enumerate(keys):
        memo.table[q] = logits[i]


def _record_then_speculate(memo: NextTokenMemo, seqs: list[tuple[int, ...]], logits: torch.Tensor,
                           spec: bool, stop: set[int]) -> tuple[list[int], list[int]]:
    """:func:`_record` the next-token ``logits`` of ``seqs``; then, with ``spec``, the (row,
    token) continuations to read next (:func:`_speculated`), else none."""
    _record(memo, seqs, logits)
    return _speculated(logits, seqs, memo, stop) if spec else ([], [])


def _speculated(logits: torch.Tensor, seqs: list[tuple[int, ...]], memo: NextTokenMemo,
                stop: set[int]) -> tuple[list[int], list[int]]:
    """(row, token) of the continuations to read after ``seqs``: each row's top
    ``memo.speculate`` tokens that do not stop and are not known yet."""
    k = min(memo.speculate, logits.shape[-1])
    rows, toks = [], []
    top = torch.topk(logits, k, dim=-1).indices.tolist()
    for i, q in enumerate(seqs):
        for t in top[i]:
            if t not in stop and q + (t,) not in memo.table:
                rows.append(i)
                toks.append(t)
    return rows, toks


def _memo_fill_lean(model, seqs: list[tuple[int, ...]], memo: NextTokenMemo, pad_id: int,
                    continue_after: bool, stop: set[int]) -> None:
    """:func:`_memo_fill` through the lean forward (:mod:`crbc.policy.lean`): the sequences
    right-padded in one forward, then all speculated continuations in one decode step."""
    from crbc.policy import lean

    spec = continue_after and memo.speculate > 0
    logits, prefix = lean.prefill(model, seqs, pad_id, keep=spec)
    rows, toks = _record_then_speculate(memo, seqs, logits.cpu(), spec, stop)
    if not rows:
        return
    _record(memo, [seqs[i] + (t,) for i, t in zip(rows, toks, strict=True)],
            lean.branch_logits(model, prefix, rows, toks).cpu())


@torch.inference_mode()
def sample_tokens_memo(model, prompts: Sequence[Sequence[int]], max_new_tokens: int,
                       stop_ids: Sequence[int], temperature: float, generator: Generators,
                       pad_id: int, memo: NextTokenMemo) -> list[list[int]]:
    """:func:`sample_tokens` with a :class:`NextTokenMemo`: the same sampling rule and the same
    random numbers (one uniform per live row per token, from its own generator), logits looked up
    where known and computed in one batched forward per token position where not."""
    n = len(prompts)
    if generator is not None and not isinstance(generator, torch.Generator) and len(generator) != n:
        raise ValueError(f"got {len(generator)} generators for a batch of {n}")
    stop = set(stop_ids)
    seqs = [p if isinstance(p, tuple) else tuple(int(t) for t in p) for p in prompts]
    rows: list[list[int]] = [[] for _ in range(n)]
    live = torch.ones(n, dtype=torch.bool)
    for step in range(max_new_tokens):
        live_rows = torch.nonzero(live).flatten().tolist()
        missing = list(dict.fromkeys(seqs[r] for r in live_rows if seqs[r] not in memo.table))
        if missing:
            _memo_fill(model, missing, memo, pad_id, step < max_new_tokens - 1, stop)
        known = torch.stack([memo.table[seqs[r]] for r in live_rows])
        logits = torch.zeros(n, known.shape[-1], dtype=known.dtype)
        logits[live_rows] = known
        tok = choose_tokens(logits, temperature, live, generator).tolist()
        for r in live_rows:
            t = tok[r]
            rows[r].append(t)
            seqs[r] = seqs[r] + (t,)
            if t in stop:
                live[r] = False
        if not live.any():
            break
    return rows
