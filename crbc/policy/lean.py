"""A lean forward of a transformers Llama causal LM: the same weights and the same math, without
the mask, cache and dispatch machinery, and with each prompt read once however many responses
are scored or sampled after it.

Used where the tiny policy spends its time: scoring the PPO pairs (:func:`score_responses`, by
``crbc.train.ppo.pair_logprobs``) and the rollout's next-token memo (:func:`prefill` and
:func:`branch_logits`, by ``crbc.policy.base``). Any other model falls back to the transformers
forward (:func:`supports`).

**Packed rows with branches.** A row is one prompt x (right-padded) followed by *branch* tokens:
the distinct response prefixes to continue. A branch for the prefix y_1 .. y_j sits at position
``len(x) + j - 1``, attends to all of x, to the branches of its shorter prefixes and to itself,
so its output predicts y_{j+1} exactly as in the sequence x y_1 .. y_j. The prompt's last
position predicts y_1. One forward per row gives every response's log-probability; for the tiny
policy (responses ``word<eos>``) that is the prompt plus one branch per distinct action word.

**Per layer** (transformers' ``LlamaDecoderLayer``; the norms, projections and rotary tables
are the model's own modules)::

    h = h + o_proj(attention(rope(q_proj(n1(h))), rope(k_proj(n1(h))), v_proj(n1(h)), mask))
    h = h + down_proj(silu(gate_proj(n2(h))) * up_proj(n2(h)))

In the last layer only the positions whose output is read are computed past the key/value
projections (the last prompt position and the branches), and the final norm and ``lm_head``
run on those alone. The tests check log-probabilities against transformers' forward of each
full sequence and gradients against the per-pair twin (tests/policy/test_lean.py, tests/train/test_ppo.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = [
    "branch_logits", "forward_rows", "prefill", "Prefix", "prompt_rows", "Rows", "score_responses",
    "supports"
]


def supports(model) -> bool:
    """True for a transformers Llama causal LM this module reproduces exactly (plain RoPE, SiLU
    MLP, no biases, no grouped key/value heads, no dropout in training)."""
    cfg = getattr(model, "config", None)
    if cfg is None or getattr(cfg, "model_type", None) != "llama":
        return False
    rope = getattr(cfg, "rope_parameters", None) or {}
    inner = getattr(model, "model", None)
    return (inner is not None and hasattr(inner, "rotary_emb") and hasattr(model, "lm_head")
            and getattr(cfg, "hidden_act", None) == "silu"
            and not getattr(cfg, "attention_bias", False) and not getattr(cfg, "mlp_bias", False)
            and getattr(cfg, "pretraining_tp", 1) in (None, 1)
            and rope.get("rope_type", "default") == "default"
            and cfg.num_key_value_heads == cfg.num_attention_heads
            and (not model.training or not getattr(cfg, "attention_dropout", 0.0))
            and getattr(inner.rotary_emb, "attention_scaling", 1.0) == 1.0)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """transformers' ``apply_rotary_pos_emb`` for one tensor; x (B, heads, L, d), cos/sin (B, L, d)."""
    return x * cos[:, None] + _rotate_half(x) * sin[:, None]


@dataclass
class Rows:
    """A packed batch (B rows of width W) and the positions whose outputs are read.

    ``ids``, ``pos`` (B, W) token ids and positions; ``allowed`` (B, W, W) which keys each query
    attends to (every position at least attends to itself, so padding stays finite);
    ``read`` (B, Q) the columns whose outputs are wanted (padded by repeating a column).
    """

    ids: torch.Tensor
    pos: torch.Tensor
    allowed: torch.Tensor
    read: torch.Tensor


def _tables(model, width: int, device):
    """cos, sin of every position below ``width`` (the model's rotary module), shape (1, W, d)."""
    inner = model.model
    pos = torch.arange(width, device=device)[None]
    probe = inner.embed_tokens.weight[:1]
    with torch.no_grad():
        cos, sin = inner.rotary_emb(probe, pos)
    return cos, sin


def _attn(layer, h_q, h_kv, cos_q, sin_q, cos_kv, sin_kv, mask, n_heads, head_dim):
    att = layer.self_attn
    b, lq, _ = h_q.shape
    lk = h_kv.shape[1]
    q = att.q_proj(h_q).view(b, lq, n_heads, head_dim).transpose(1, 2)
    k = att.k_proj(h_kv).view(b, lk, n_heads, head_dim).transpose(1, 2)
    v = att.v_proj(h_kv).view(b, lk, n_heads, head_dim).transpose(1, 2)
    q, k = _rope(q, cos_q, sin_q), _rope(k, cos_kv, sin_kv)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None],
                                                           scale=att.scaling)
    return att.o_proj(out.transpose(1, 2).reshape(b, lq, n_heads * head_dim)), k, v


def _mlp(layer, h):
    m = layer.mlp
    return m.down_proj(torch.nn.functional.silu(m.gate_proj(h)) * m.up_proj(h))


def forward_rows(model, rows: Rows, keep_kv: bool = False):
    """Final-normed hidden states at ``rows.read``, shape (B, Q, H); with ``keep_kv`` also the
    per-layer (keys, values) after RoPE, each (B, heads, W, d), for :func:`branch_logits`."""
    inner, cfg = model.model, model.config
    n_heads, head_dim = cfg.num_attention_heads, getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    cos_t, sin_t = _tables(model, int(rows.pos.max()) + 1, rows.ids.device)
    cos, sin = cos_t[0][rows.pos], sin_t[0][rows.pos]  # (B, W, d)
    h = inner.embed_tokens(rows.ids)
    b_idx = torch.arange(rows.ids.shape[0], device=rows.ids.device)[:, None]
    kv = []
    layers = list(inner.layers)
    for li, layer in enumerate(layers):
        n1 = layer.input_layernorm(h)
        if li < len(layers) - 1:
            a, k, v = _attn(layer, n1, n1, cos, sin, cos, sin, rows.allowed, n_heads, head_dim)
            h = h + a
            h = h + _mlp(layer, layer.post_attention_layernorm(h))
        else:  # the last layer: queries, output projection and MLP only where read
            read = rows.read
            a, k, v = _attn(layer, n1[b_idx, read], n1, cos[b_idx, read], sin[b_idx, read], cos, sin,
                            rows.allowed[b_idx, read], n_heads, head_dim)
            h = h[b_idx, read] + a
            h = h + _mlp(layer, layer.post_attention_layernorm(h))
        if keep_kv:
            kv.append((k, v))
    h = inner.norm(h)
    return (h, kv) if keep_kv else h


def prompt_rows(prompts: Sequence[Sequence[int]], pad: int, branches: Sequence[Sequence[tuple[int, int]]] | None = None,
                device=None) -> tuple[Rows, torch.Tensor]:
    """Pack prompts (right-padded) with optional branches into :class:`Rows`.

    ``branches[b]`` lists row b's branch tokens as (token, parent) pairs in order, parent -1 for
    a branch right after the prompt, else the index of an earlier branch of that row.
    Read columns: 0 = the prompt's last position, 1 + i = branch i. Returns the rows and the
    (B,) prompt lengths.
    """
    import numpy as np

    n = len(prompts)
    branches = branches if branches is not None else [()] * n
    lp = np.array([len(p) for p in prompts], dtype=np.int64)
    nb = max((len(x) for x in branches), default=0)
    width_p = int(lp.max()) if n else 1
    width = max(width_p + nb, 1)
    ids = np.full((n, width), pad, dtype=np.int64)
    col = np.arange(width)
    pos = np.broadcast_to(col, (n, width)).copy()  # padding: any position, it attends to itself
    valid = col[None] < lp[:, None]  # real prompt keys
    allowed = np.tril(np.ones((width, width), dtype=bool))[None] & valid[:, None, :]  # causal prompt
    allowed |= np.eye(width, dtype=bool)[None]
    read = np.repeat(lp[:, None] - 1, 1 + nb, axis=1)
    for r, p in enumerate(prompts):
        L = len(p)
        ids[r, :L] = p
        depth: list[int] = []
        for i, (tok, parent) in enumerate(branches[r]):
            c = width_p + i
            ids[r, c] = tok
            depth.append(0 if parent < 0 else depth[parent] + 1)
            pos[r, c] = L + depth[-1]
            allowed[r, c, :L] = True  # the whole prompt, its ancestors and itself
            q = parent
            while q >= 0:
                allowed[r, c, width_p + q] = True
                q = branches[r][q][1]
            read[r, 1 + i] = c
    t = lambda a: torch.from_numpy(a).to(device)  # noqa: E731
    return Rows(t(ids), t(pos), t(allowed), t(read)), torch.from_numpy(lp)


def score_responses(model, prompts: Sequence[Sequence[int]], row_of: Sequence[int],
                    responses: Sequence[Sequence[int]], pad: int, temperature: float = 1.0) -> torch.Tensor:
    """``log pi(response | prompt)`` of each (row_of[i], responses[i]), shape (len(responses),).

    One packed forward: each prompt once, each distinct proper prefix of its responses as a
    branch. Differentiable (wrap in ``torch.no_grad()`` to only score); an empty response
    scores 0.
    """
    dev = next(model.parameters()).device
    n_rows = len(prompts)
    branches: list[list[tuple[int, int]]] = [[] for _ in range(n_rows)]
    node: list[dict[tuple[int, ...], int]] = [{} for _ in range(n_rows)]
    # for every response token: (row, read column, target token)
    g_row, g_read, g_tok, g_pair = [], [], [], []
    for i, (r, y) in enumerate(zip(row_of, responses, strict=True)):
        parent = -1
        for j, t in enumerate(y):
            g_row.append(r)
            g_read.append(0 if j == 0 else 1 + parent)
            g_tok.append(int(t))
            g_pair.append(i)
            if j == len(y) - 1:
                break
            key = tuple(y[: j + 1])
            if key not in node[r]:
                node[r][key] = len(branches[r])
                branches[r].append((int(t), parent))
            parent = node[r][key]
    rows, _ = prompt_rows(prompts, pad, branches, dev)
    hid = forward_rows(model, rows)  # (B, Q, H)
    out = torch.zeros(len(responses), device=dev, dtype=torch.float32)
    if not g_row:
        return out + hid.sum() * 0  # keep the graph
    idx_r = torch.tensor(g_row, dtype=torch.long, device=dev)
    idx_q = torch.tensor(g_read, dtype=torch.long, device=dev)
    logits = model.lm_head(hid[idx_r, idx_q]).float()
    logp = torch.log_softmax(logits / max(temperature, 1e-6), dim=-1)
    picked = logp.gather(-1, torch.tensor(g_tok, dtype=torch.long, device=dev)[:, None]).squeeze(-1)
    return out.index_add(0, torch.tensor(g_pair, dtype=torch.long, device=dev), picked)


@dataclass
class Prefix:
    """What :func:`prefill` keeps of its rows for :func:`branch_logits`: per layer the keys and
    values after RoPE (B, heads, W, d), and each row's length (B,)."""

    kv: list[tuple[torch.Tensor, torch.Tensor]]
    lengths: torch.Tensor


def prefill(model, seqs: Sequence[Sequence[int]], pad: int, keep: bool = True):
    """Next-token logits after each sequence, (B, V) float32, and (with ``keep``) the
    :class:`Prefix` to continue them. No gradient."""
    dev = next(model.parameters()).device
    rows, lengths = prompt_rows(seqs, pad, None, dev)
    with torch.no_grad():
        if keep:
            hid, kv = forward_rows(model, rows, keep_kv=True)
        else:
            hid, kv = forward_rows(model, rows), []
        logits = model.lm_head(hid[:, 0]).float()
    return logits, Prefix(kv, lengths.to(dev))


def branch_logits(model, prefix: Prefix, row: Sequence[int], token: Sequence[int]) -> torch.Tensor:
    """Next-token logits after ``seqs[row[i]] + (token[i],)`` for the rows of a :func:`prefill`,
    (n, V) float32: each token one branch after its row's sequence, all in one decode step
    that reads the kept keys and values (no copy of a row per branch). No gradient."""
    inner, cfg = model.model, model.config
    n_heads = cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // n_heads
    dev = prefix.lengths.device
    uniq = sorted(set(row))
    slot_of = {r: i for i, r in enumerate(uniq)}
    counts = [0] * len(uniq)
    where = []
    for r in row:
        s = slot_of[r]
        where.append((s, counts[s]))
        counts[s] += 1
    k_max = max(counts)
    tok = torch.zeros((len(uniq), k_max), dtype=torch.long)
    for (s, j), t in zip(where, token, strict=True):
        tok[s, j] = int(t)
    tok = tok.to(dev)
    sel = torch.tensor(uniq, dtype=torch.long, device=dev)
    lengths = prefix.lengths[sel]
    width = prefix.kv[0][0].shape[2]
    pos = lengths[:, None].expand(len(uniq), k_max)  # every branch sits right after its sequence
    mask = torch.zeros((len(uniq), k_max, width + k_max), dtype=torch.bool, device=dev)
    mask[:, :, :width] = (torch.arange(width, device=dev)[None] < lengths[:, None])[:, None, :]
    mask[:, :, width:] = torch.eye(k_max, dtype=torch.bool, device=dev)[None]
    with torch.no_grad():
        cos_t, sin_t = _tables(model, int(pos.max()) + 1, dev)
        cos, sin = cos_t[0][pos], sin_t[0][pos]
        whole = len(uniq) == prefix.kv[0][0].shape[0]
        h = inner.embed_tokens(tok)
        b, lq = tok.shape
        for li, layer in enumerate(inner.layers):
            att = layer.self_attn
            n1 = layer.input_layernorm(h)
            q = _rope(att.q_proj(n1).view(b, lq, n_heads, head_dim).transpose(1, 2), cos, sin)
            k = _rope(att.k_proj(n1).view(b, lq, n_heads, head_dim).transpose(1, 2), cos, sin)
            v = att.v_proj(n1).view(b, lq, n_heads, head_dim).transpose(1, 2)
            k0, v0 = prefix.kv[li]
            if not whole:
                k0, v0 = k0[sel], v0[sel]
            out = torch.nn.functional.scaled_dot_product_attention(
                q, torch.cat([k0, k], 2), torch.cat([v0, v], 2), attn_mask=mask[:, None], scale=att.scaling)
            h = h + att.o_proj(out.transpose(1, 2).reshape(b, lq, n_heads * head_dim))
            h = h + _mlp(layer, layer.post_attention_layernorm(h))
        h = inner.norm(h)
        s_idx = torch.tensor([s for s, _ in where], dtype=torch.long, device=dev)
        j_idx = torch.tensor([j for _, j in where], dtype=torch.long, device=dev)
        return model.lm_head(h[s_idx, j_idx]).float()
