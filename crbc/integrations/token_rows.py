"""The response tokens of a few steps of a verl batch, for the recorder's token file
(:mod:`crbc.io.tokens`, ``crbc.tokens/1``).

Which steps (bounded: at most ``max_rows`` per iteration): the distinct steps of the batch
(:class:`crbc.integrations.recorder.BatchSteps`, copies once) ranked by (rollout index inside its
group, group, step t), the first ``max_rows`` kept: rollout 0 of every group first, then rollout
1 of every group, and so on, so the cap spreads over the groups. Per kept step, from its batch
row b (``B`` rows, ``L`` response tokens):

* ``M_b`` response tokens: 1 + the last position l with ``attention_mask[b, P + l] != 0``
  (``P`` = prompt width, the response part of verl's attention mask; right padding is not a
  token), else 1 + the last l with ``response_mask[b, l] != 0``; 0 when there is none;
* the first ``min(M_b, max_tokens)`` tokens: ``advantages[b, l]``, ``response_mask[b, l] != 0``
  (else the response part of ``attention_mask``, verl's ``compute_response_mask``),
  ``responses[b, l]`` (token ids, when present) and their texts when a tokenizer is given.

Only the kept rows are copied off the device (``S x L`` numbers, never the ``B x L`` block).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from crbc.integrations.step_rows import batch_field
from crbc.io.tokens import StepTokens

__all__ = ["batch_tokens", "check_tokenizer", "pick_steps", "token_texts"]


def pick_steps(rollout_K: np.ndarray, group_K: np.ndarray, t_K: np.ndarray, max_rows: int) -> np.ndarray:
    """Indices into the K steps of the kept ones (module docstring), in the steps' own order.
    rollout_K, t_K: (K,) int; group_K: (K,) group ids (any sortable)."""
    if max_rows <= 0 or len(t_K) == 0:
        return np.zeros(0, dtype=np.int64)
    _, g_code = np.unique(np.asarray(group_K, dtype=object).astype(str), return_inverse=True)
    order = np.lexsort((np.arange(len(t_K)), np.asarray(t_K), g_code.ravel(), np.asarray(rollout_K)))
    return np.sort(order[:max_rows]).astype(np.int64)


def _rows(x: Any, rows: np.ndarray, width: int | None = None) -> np.ndarray:
    """``x[rows, :width]`` of a (B, L) tensor or array as numpy (only those rows leave the device)."""
    if type(x).__module__.split(".")[0] == "torch":
        import torch

        sel = x.detach()[torch.as_tensor(rows, dtype=torch.long, device=x.device)]
        if width is not None:
            sel = sel[:, :width]
        if sel.dtype.is_floating_point:
            sel = sel.float()
        return sel.cpu().numpy()
    a = np.asarray(x)[rows]
    return a if width is None else a[:, :width]


def check_tokenizer(tokenizer: Any) -> None:
    """Refuse, at the recorder's construction, a ``tokenizer`` that can give no token text:
    it must have ``batch_decode`` (a Hugging Face tokenizer: verl's ``self.tokenizer``) or be a
    callable ``ids -> list of str``."""
    if tokenizer is not None and not hasattr(tokenizer, "batch_decode") and not callable(tokenizer):
        raise TypeError("RunRecorder(tokenizer=...) must have batch_decode (a Hugging Face tokenizer) or be "
                        f"a callable list[int] -> list[str], got {type(tokenizer).__name__}")


def token_texts(tokenizer: Any, ids: Sequence[Sequence[int]]) -> list[list[str]]:
    """The text of every token of each row of ``ids``: a Hugging Face tokenizer decodes each id
    alone (one ``batch_decode`` call for all rows); a callable is called once per row and must
    return one string per id (ValueError otherwise)."""
    if hasattr(tokenizer, "batch_decode"):
        flat = tokenizer.batch_decode([[int(i)] for row in ids for i in row], skip_special_tokens=False)
        out, k = [], 0
        for row in ids:
            out.append([str(x) for x in flat[k:k + len(row)]])
            k += len(row)
        return out
    out = []
    for row in ids:
        texts = list(tokenizer([int(i) for i in row]))
        if len(texts) != len(row) or not all(isinstance(x, str) for x in texts):
            raise ValueError(f"the tokenizer callable returned {len(texts)} values for {len(row)} token ids "
                             "(it must return one str per id)")
        out.append(texts)
    return out


def _lengths(data: Any, rows: np.ndarray, mask_S: np.ndarray, width: int) -> np.ndarray:
    """(S,) M_b of the kept rows (module docstring)."""
    attn = batch_field(data, "attention_mask")
    use = mask_S
    if attn is not None and attn.shape[1] >= width:
        use = _rows(attn, rows)[:, attn.shape[1] - width:] != 0
    has = use.any(axis=1)
    last = width - np.argmax(use[:, ::-1], axis=1)
    return np.where(has, last, 0).astype(np.int64)


def batch_tokens(data: Any, group_K: np.ndarray, rollout_K: np.ndarray, t_K: np.ndarray, row_K: np.ndarray,
                 max_rows: int, max_tokens: int,
                 tokenizer: Any = None) -> list[StepTokens] | None:
    """The stored tokens of the kept steps of a ``DataProto`` (module docstring); None when the
    batch has no ``advantages``. ``group_K``, ``rollout_K``, ``t_K``: each distinct step's group,
    rollout index and step; ``row_K``: its batch row."""
    adv = batch_field(data, "advantages")
    if adv is None:
        return None
    width = int(adv.shape[1])
    mask = batch_field(data, "response_mask")
    if mask is None:
        mask = data.batch["attention_mask"][:, -width:]
    keep = pick_steps(rollout_K, group_K, t_K, max_rows)
    rows = np.asarray(row_K, dtype=np.int64)[keep]
    mask_S = _rows(mask, rows) != 0
    length_S = _lengths(data, rows, mask_S, width)
    n = min(width, max(int(length_S.max(initial=0)), 0), max_tokens)
    adv_S = _rows(adv, rows, n).astype(np.float64)
    ids = batch_field(data, "responses")
    ids_S = _rows(ids, rows, n).astype(np.int64) if ids is not None and ids.shape[1] == width else None
    cut = np.minimum(length_S, max_tokens)
    text = (token_texts(tokenizer, [ids_S[i, :c].tolist() for i, c in enumerate(cut.tolist())])
            if tokenizer is not None and ids_S is not None else None)
    out = []
    for i, k in enumerate(keep.tolist()):
        c = int(cut[i])
        out.append(StepTokens(str(group_K[k]), int(rollout_K[k]), int(t_K[k]), int(rows[i]), int(length_S[i]),
                              adv_S[i, :c], mask_S[i, :c], None if ids_S is None else ids_S[i, :c],
                              None if text is None else tuple(text[i])))
    return out

