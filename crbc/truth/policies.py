"""Exact action probabilities pi(a|s) of a policy on boards (docs/MATH.md section 9).

A *scorable policy* is any callable ``probs(boards) -> array (B, 5)`` over
``up, down, left, right, invalid`` whose rows sum to 1. Three kinds are provided:

* :class:`TinyModelProbs` reads a shipped tiny checkpoint exactly. Its reply is one action-word
  token then ``<eos>`` (``crbc.policy.tiny``), and ``Policy.act`` samples token by token from
  ``softmax(logits / T)`` with at most three tokens, so at temperature T > 0

      pi(a|s) = p_T(word_a | prompt) * p_T(<eos> | prompt, word_a)          (a a move)
      pi(invalid|s) = 1 - sum_a pi(a|s)

  and at T = 0 (greedy) pi puts mass 1 on the argmax path's parse. One batched forward pass of
  the prompts with a key/value cache, then one pass of the four action words for every prompt.
* :func:`uniform_policy`: 1/4 on each move, 0 on ``invalid``.
* any callable (tabular test policies): rows of 4 get ``invalid`` = the rest of the mass.

A chat-format model cannot be scored exactly (its reply spans many tokens and the parse accepts
many spellings): :func:`scorable_policy` refuses it with a clear message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from crbc.truth.space import TRUTH_ACTIONS, TruthError

__all__ = [
    "check_probs", "load_scorable_model", "load_tiny_checked", "ProbsFn", "scorable_policy",
    "ScorablePolicy", "TinyModelProbs", "uniform_policy"
]

ProbsFn = Callable[[Sequence[str]], Any]


@dataclass(frozen=True)
class ScorablePolicy:
    """A policy whose exact pi(a|s) can be read: ``probs(boards) -> (B, 5)``, plus its name."""

    probs_fn: ProbsFn  #: boards -> (B, 4) or (B, 5) probabilities (see :func:`check_probs`)
    name: str = "callable"  #: written into crbc.truth/1 as ``policy``
    temperature: float | None = None  #: sampling temperature (None: not a sampled LM)
    batch_size: int = field(default=4096)  #: boards per call

    def probs(self, boards: Sequence[str]) -> np.ndarray:
        """pi(a|s) for each board, shape (B, 5), rows summing to 1 (float64)."""
        out = []
        for lo in range(0, len(boards), self.batch_size):
            chunk = list(boards[lo: lo + self.batch_size])
            out.append(check_probs(self.probs_fn(chunk), len(chunk), self.name))
        return np.concatenate(out) if out else np.zeros((0, len(TRUTH_ACTIONS)))


def check_probs(raw: Any, n: int, name: str = "policy") -> np.ndarray:
    """Validate (B, 4) or (B, 5) probabilities; a (B, 4) row's missing mass goes to ``invalid``."""
    p = np.asarray(raw, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] != n or p.shape[1] not in (4, 5):
        raise TruthError(f"{name}: expected action probabilities of shape ({n}, 4 or 5), got {p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < -1e-12):
        raise TruthError(f"{name}: action probabilities must be finite and non-negative")
    total = p.sum(1)
    if np.any(total > 1 + 1e-6) or (p.shape[1] == 5 and np.any(np.abs(total - 1) > 1e-6)):
        raise TruthError(f"{name}: action probabilities must sum to 1 over "
                         f"{', '.join(TRUTH_ACTIONS)} (or to at most 1 over the four moves)")
    p = np.clip(p, 0.0, None)
    if p.shape[1] == 4:
        p = np.concatenate([p, np.clip(1.0 - p.sum(1, keepdims=True), 0.0, None)], axis=1)
    return p / p.sum(1, keepdims=True)


def uniform_policy() -> ScorablePolicy:
    """The uniform random policy over the four moves (never ``invalid``)."""
    return ScorablePolicy(lambda boards: np.full((len(boards), 4), 0.25), name="uniform")


class TinyModelProbs:
    """Exact pi(a|s) of a tiny-format :class:`~crbc.policy.tiny.TinyPolicy` at a temperature."""

    def __init__(self, policy: Any, temperature: float = 1.0):
        if not (temperature >= 0 and np.isfinite(temperature)):
            raise TruthError(f"temperature must be a finite number >= 0, got {temperature!r}")
        self.policy, self.temperature = policy, float(temperature)
        tok = policy.tokenizer
        self.word_ids = tok.convert_tokens_to_ids(list(TRUTH_ACTIONS[:4]))
        self.eos_id = tok.convert_tokens_to_ids("<eos>")
        if tok.unk_token_id in self.word_ids or self.eos_id == tok.unk_token_id:
            raise TruthError(f"{policy.name}: the tokenizer lacks the action-word tokens")

    def __call__(self, boards: Sequence[str]) -> np.ndarray:
        import torch

        if not boards:
            return np.zeros((0, 5))
        with torch.inference_mode():
            ids, mask = self.policy.encode_prompts(list(boards))
            pos = (mask.long().cumsum(-1) - 1).clamp(min=0)
            out = self.policy.model(input_ids=ids, attention_mask=mask, position_ids=pos,
                                    use_cache=True, logits_to_keep=1)
            first = out.logits[:, -1, :].double()  # (B, V)
            b, k = ids.shape[0], len(self.word_ids)
            cache = out.cache
            cache.batch_repeat_interleave(k)  # rows b*k .. b*k+k-1 continue prompt b
            words = torch.tensor(self.word_ids, dtype=torch.long).repeat(b)[:, None]
            mask2 = torch.cat([mask.repeat_interleave(k, 0),
                               torch.ones(b * k, 1, dtype=mask.dtype)], dim=1)
            pos2 = pos[:, -1:].repeat_interleave(k, 0) + 1
            second = self.policy.model(input_ids=words, attention_mask=mask2, position_ids=pos2,
                                       cache=cache, use_cache=True
                                       ).logits[:, -1, :].double().reshape(b, k, -1)
        return self._combine(first, second)

    def _combine(self, first, second) -> np.ndarray:
        """pi over (moves, invalid) from first-token logits (B, V) and second (B, 4, V)."""
        import torch

        wid = torch.tensor(self.word_ids)
        if self.temperature <= 0:  # greedy: one path, mass 1
            pick_first = first.argmax(-1)  # (B,)
            pick_second = second.argmax(-1)  # (B, 4)
            p = torch.zeros(first.shape[0], 5, dtype=torch.float64)
            for j in range(4):
                p[:, j] = ((pick_first == wid[j]) & (pick_second[:, j] == self.eos_id)).double()
            p[:, 4] = 1.0 - p[:, :4].sum(1)
            return p.numpy()
        p1 = torch.softmax(first / self.temperature, dim=-1)[:, wid]  # (B, 4)
        p2 = torch.softmax(second / self.temperature, dim=-1)[..., self.eos_id]  # (B, 4)
        moves = p1 * p2
        return torch.cat([moves, (1.0 - moves.sum(1, keepdim=True)).clamp(min=0.0)], 1).numpy()


def load_tiny_checked(path: str | Path) -> Any:
    """Load a tiny checkpoint folder; refuse a missing folder and a chat-format model."""
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"model folder not found: {path}")
    from crbc.policy.tiny import is_tiny_folder

    if not is_tiny_folder(folder):
        raise TruthError(
            f"{path}: not a tiny-format policy (no crbc_policy.json). A chat-format model writes "
            "many-token replies that the parser reads loosely, so its action probabilities cannot "
            "be read exactly and the truth cannot be computed for it")
    from crbc.policy import load_policy

    return load_policy(folder)


def load_scorable_model(path: str | Path, temperature: float = 1.0, name: str | None = None
                        ) -> ScorablePolicy:
    """A shipped tiny checkpoint as a scorable policy; refuse missing folders and chat models."""
    return scorable_policy(load_tiny_checked(path), temperature, name=name or str(path))


def scorable_policy(policy: Any, temperature: float | None = None, name: str | None = None
                    ) -> ScorablePolicy:
    """Normalise a policy: ``"uniform"``, a model folder path, a loaded tiny policy, a callable."""
    if isinstance(policy, ScorablePolicy):
        return policy
    if isinstance(policy, str) and policy == "uniform":
        return uniform_policy()
    if isinstance(policy, (str, Path)):
        return load_scorable_model(policy, 1.0 if temperature is None else temperature, name)
    cls = type(policy).__name__
    if cls == "ChatPolicy":
        raise TruthError(
            f"{getattr(policy, 'name', 'policy')}: a chat-format model cannot be scored exactly "
            "(its many-token replies are parsed loosely); use a tiny-format checkpoint")
    if hasattr(policy, "tokenizer") and hasattr(policy, "model"):
        t = 1.0 if temperature is None else float(temperature)
        return ScorablePolicy(TinyModelProbs(policy, t), name=name or policy.name, temperature=t,
                              batch_size=1024)
    if callable(policy):
        return ScorablePolicy(policy, name=name or getattr(policy, "__name__", "callable"),
                              temperature=temperature)
    raise TruthError(f"cannot score a policy of type {cls}: give 'uniform', a tiny model folder, "
                     "a loaded tiny policy or a callable boards -> probabilities")
