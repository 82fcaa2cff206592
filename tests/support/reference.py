"""Slow, obvious twins of the estimators: one group at a time, dictionaries and loops, dense solves.

Written from docs/MATH.md directly and on purpose sharing no code with ``crbc`` (only the data classes).
The fast batched implementation must agree with these to 1e-9.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque

import numpy as np

from crbc.io.rollouts import Rollout, RolloutGroup, Step

ZP, ZM = "<z+>", "<z->"


def transitions(group: RolloutGroup):
    """Yield (rollout index, t (1-based), s, a, x) for every step."""
    for i, r in enumerate(group.rollouts):
        ok = r.success and not r.truncated
        for t, st in enumerate(r.steps, start=1):
            x = r.steps[t].anchor if t < len(r.steps) else (ZP if ok else ZM)
            yield i, t, st.anchor, st.action, x


def counts(group: RolloutGroup):
    n_sax = defaultdict(int)
    for _, _, s, a, x in transitions(group):
        n_sax[(s, a, x)] += 1
    n_sa = defaultdict(int)
    n_s = defaultdict(int)
    for (s, a, _), c in n_sax.items():
        n_sa[(s, a)] += c
        n_s[s] += c
    return n_sax, n_sa, n_s


def mu_p(group):
    n_sax, n_sa, n_s = counts(group)
    mu = {(s, a): c / n_s[s] for (s, a), c in n_sa.items()}
    p = {(s, a, x): c / n_sa[(s, a)] for (s, a, x), c in n_sax.items()}
    return mu, p


def actions_at(group):
    acts = defaultdict(set)
    for _, _, s, a, _ in transitions(group):
        acts[s].add(a)
    return acts


def visit_local(group, beta):
    """Q0(s,a) = mean over occurrences of beta^(T-t+1) R; V0(s) = mean over visits."""
    qs, vs = defaultdict(list), defaultdict(list)
    for i, t, s, a, _ in transitions(group):
        r = group.rollouts[i]
        g = beta ** (len(r.steps) - t + 1) * (1.0 if (r.success and not r.truncated) else 0.0)
        qs[(s, a)].append(g)
        vs[s].append(g)
    return {s: sum(v) / len(v) for s, v in vs.items()}, {k: sum(v) / len(v) for k, v in qs.items()}


def closure_values(group, beta):
    """Dense solve of (I - beta M) V = b."""
    mu, p = mu_p(group)
    states = sorted({s for (s, _) in mu})
    idx = {s: k for k, s in enumerate(states)}
    m = np.zeros((len(states), len(states)))
    b = np.zeros(len(states))
    for (s, a, x), pr in p.items():
        w = mu[(s, a)] * pr
        if x == ZP:
            b[idx[s]] += beta * w
        elif x != ZM:
            m[idx[s], idx[x]] += w
    v = np.linalg.solve(np.eye(len(states)) - beta * m, b)
    return {s: float(v[idx[s]]) for s in states}


def q_backup(group, values, beta):
    mu, p = mu_p(group)
    ext = dict(values)
    ext[ZP], ext[ZM] = 1.0, 0.0
    q = defaultdict(float)
    for (s, a, x), pr in p.items():
        q[(s, a)] += beta * pr * ext[x]
    return dict(q)


def v_backup(group, values, beta):
    mu, _ = mu_p(group)
    q = q_backup(group, values, beta)
    v = defaultdict(float)
    for (s, a), m in mu.items():
        v[s] += m * q[(s, a)]
    return dict(v)


def cor3_bound(group, beta, depth):
    """Cor. 3: ||A_inf - A^(K)||_inf <= 2 beta^K / (1 - beta) * ||T V0 - V0||_inf, K >= 1
    (the slow twin of ``DepthSweep.bound_K``)."""
    if beta >= 1:
        return math.inf
    v0 = visit_local(group, beta)[0]
    tv0 = v_backup(group, v0, beta)
    gap = max((abs(tv0[s] - v0[s]) for s in v0), default=0.0)
    return 2.0 * beta ** depth / (1.0 - beta) * gap


def depth_k(group, beta, depth):
    """(V, Q) at depth K (None = closure)."""
    if depth is None:
        v = closure_values(group, beta)
        return v, q_backup(group, v, beta)
    v, q = visit_local(group, beta)
    for _ in range(depth):
        q = q_backup(group, v, beta)
        v = v_backup(group, v, beta)
    return v, q


def group_advantage(group):
    scores = [r.effective_score for r in group.rollouts]
    n = len(scores)
    if n < 2 or max(scores) == min(scores):
        return [0.0] * n
    mean = sum(scores) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in scores) / (n - 1))
    return [(x - mean) / (std + 1e-6) for x in scores]


def crbc_credits(group, beta=0.98, depth=None, sigma_min=0.1, w_group=1.0, w_step=5.0, norm="grpo"):
    """Per rollout, per step: (value, q, credit, step_advantage, advantage); plus A_G list
    (``norm``: the ``group_norm`` option)."""
    v, q = depth_k(group, beta, depth)
    mu, _ = mu_p(group)
    acts = actions_at(group)
    a = {(s, x): q[(s, x)] - v[s] for (s, x) in q}
    sigma = defaultdict(float)
    for (s, x), m in mu.items():
        sigma[s] += m * a[(s, x)] ** 2
    a_g = group_norm(group, norm)
    out = []
    for i, r in enumerate(group.rollouts):
        rows = []
        for st in r.steps:
            s, x = st.anchor, st.action
            gate = len(acts[s]) >= 2
            a_s = a[(s, x)] / max(math.sqrt(sigma[s]), sigma_min) if gate else 0.0
            rows.append((v[s], q[(s, x)], a[(s, x)], a_s, w_group * a_g[i] + w_step * a_s))
        out.append(rows)
    return out, a_g


def _stats(xs):
    """(mean, std with N-1, count); std 0 for one value."""
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
    return m, sd, len(xs)


def verl_grpo(group, norm_by_std=True, eps=1e-6):
    """docs/MATH.md section 7, grpo: over the group's trajectories; a group of one: mean 0, std 1."""
    scores = [r.effective_score for r in group.rollouts]
    m, sd, n = _stats(scores)
    if n == 1:
        m, sd = 0.0, 1.0
    return [(x - m) / (sd + eps) if norm_by_std else x - m for x in scores]


def group_norm(group, kind, eps=1e-6):
    """A_G of crbc / visit_local by ``group_norm`` (docs/MATH.md section 7)."""
    scores = [r.effective_score for r in group.rollouts]
    n = len(scores)
    if kind == "grpo":
        return group_advantage(group)
    if kind == "drgrpo":
        return verl_grpo(group, norm_by_std=False)
    if kind == "rloo":
        return [x - (sum(scores) - x) / (n - 1) if n > 1 else x for x in scores]
    if kind == "steps":
        rows = [r.effective_score for r in group.rollouts for _ in r.steps]
        m, sd, k = _stats(rows)
        if k == 1:
            m, sd = 0.0, 1.0
        return [(x - m) / (sd + eps) for x in scores]
    raise ValueError(kind)


def step_rewards(group):
    """r_{i,t}: the step's reward; in a group without any, 10 * R_i on the last step."""
    any_reward = any(st.reward is not None for r in group.rollouts for st in r.steps)
    out = []
    for r in group.rollouts:
        if any_reward:
            out.append([st.reward or 0.0 for st in r.steps])
        else:
            out.append([0.0] * (len(r.steps) - 1) + [10.0 if (r.success and not r.truncated) else 0.0])
    return out


def episode_scores(group):
    """S_i: the rollout's score if given, else the sum of its step rewards."""
    return [r.score if r.score is not None else sum(rw) for r, rw in zip(group.rollouts, step_rewards(group),
                                                                         strict=True)]


def step_return_credits(group, returns, mode="mean_std_norm", w_group=1.0, w_step=1.0, eps=1e-6,
                        invalid_penalty=0.1):
    """GiGPO's combination (docs/MATH.md section 7) of raw step returns: the penalty on invalid rows'
    return and episode score, the episode term over the group's rows, the step term over each
    anchor's occurrences. Per rollout, per step: (value, q, credit, step_advantage, advantage);
    plus the episode term of each rollout's valid rows."""
    scores = episode_scores(group)
    pen = [[invalid_penalty if st.action == "invalid" else 0.0 for st in r.steps] for r in group.rollouts]
    q = [[g - c for g, c in zip(gs, cs, strict=True)] for gs, cs in zip(returns, pen, strict=True)]
    row_scores = [scores[i] - c for i in range(len(scores)) for c in pen[i]]
    m_e, sd_e, n_e = _stats(row_scores)
    if n_e == 1:
        m_e, sd_e = 0.0, 1.0

    def a_e(x):
        return x - m_e if mode == "mean_norm" else (x - m_e) / (sd_e + eps)

    by_anchor = defaultdict(list)
    for i, r in enumerate(group.rollouts):
        for t, st in enumerate(r.steps):
            by_anchor[st.anchor].append(q[i][t])
    stats = {s: _stats(xs) for s, xs in by_anchor.items()}
    out = []
    for i, r in enumerate(group.rollouts):
        rows = []
        for t, st in enumerate(r.steps):
            m, sd, n = stats[st.anchor]
            g = q[i][t]
            if n < 2:
                a_s = 0.0
            elif mode == "mean_std_norm":
                a_s = (g - m) / (sd + eps)
            else:
                a_s = g - m
            rows.append((m, g, g - m, a_s, w_group * a_e(scores[i] - pen[i][t]) + w_step * a_s))
        out.append(rows)
    return out, [a_e(x) for x in scores]


def gigpo_returns(group, gamma=0.95):
    """Discounted step returns of :func:`step_rewards` (before the penalty)."""
    out = []
    for rew in step_rewards(group):
        g, acc = [0.0] * len(rew), 0.0
        for t in range(len(rew) - 1, -1, -1):
            acc = rew[t] + gamma * acc
            g[t] = acc
        out.append(g)
    return out


def hop_distances(group):
    """BFS from z+ over reversed observed edges."""
    preds = defaultdict(set)
    for _, _, s, _, x in transitions(group):
        preds[x].add(s)
    dist = {ZP: 0}
    queue = deque([ZP])
    while queue:
        x = queue.popleft()
        for s in preds[x]:
            if s not in dist:
                dist[s] = dist[x] + 1
                queue.append(s)
    return dist


def shortest_path_returns(group, gamma_g=0.8, scale=10.0):
    dist = hop_distances(group)
    out = []
    for r in group.rollouts:
        row = []
        for t, _ in enumerate(r.steps):
            ok = r.success and not r.truncated
            x = r.steps[t + 1].anchor if t + 1 < len(r.steps) else (ZP if ok else ZM)
            row.append(scale * gamma_g ** dist[x] if x in dist else 0.0)
        out.append(row)
    return out


def random_group(rng: np.random.Generator, name: str = "g", max_rollouts: int = 8,
                 max_len: int = 12, n_anchors: int | None = None, n_actions: int | None = None,
                 rewards: bool | None = None, scores: bool | None = None,
                 p_invalid: float = 0.0) -> RolloutGroup:
    """A random group with cycles, self-loops, truncations and single-action anchors; with
    ``p_invalid`` > 0, that share of the actions is ``invalid`` (the state does not change)."""
    n_r = int(rng.integers(1, max_rollouts + 1))
    n_anchors = n_anchors or int(rng.integers(1, 7))
    n_actions = n_actions or int(rng.integers(1, 4))
    rewards = bool(rng.random() < 0.4) if rewards is None else rewards
    scores = bool(rng.random() < 0.3) if scores is None else scores
    rollouts = []
    for i in range(n_r):
        length = int(rng.integers(1, max_len + 1))
        steps = []
        s = 0 if rng.random() < 0.8 else int(rng.integers(n_anchors))
        for _ in range(length):
            a = int(rng.integers(n_actions))
            rew = float(rng.choice([0.0, -0.1, 1.0, 10.0])) if rewards else None
            if p_invalid > 0 and rng.random() < p_invalid:
                steps.append(Step(f"s{s}", "invalid", reward=rew))
                continue
            steps.append(Step(f"s{s}", f"a{a}", reward=rew))
            # deterministic-ish dynamics with noise: self-loops and cycles happen
            s = (s + a) % n_anchors if rng.random() < 0.7 else int(rng.integers(n_anchors))
        truncated = bool(rng.random() < 0.2)
        success = (not truncated) and bool(rng.random() < 0.45)
        score = float(rng.choice([0.0, 1.0, 2.5, -1.0])) if scores else None
        rollouts.append(Rollout(name, i, tuple(steps), success, truncated, score))
    return RolloutGroup(name, tuple(rollouts))


def check_solver(v_S: np.ndarray, p, groups: list[RolloutGroup], beta: float) -> None:
    """Assert that ``v_S`` (a solver's values of the process ``p`` merged from ``groups``) is
    :func:`closure_values` of every group, anchor by anchor, to 1e-9."""
    want = {(g.group, s): v for g in groups for s, v in closure_values(g, beta).items()}
    got = {(p.group_ids[p.state_group[k]], p.state_anchor[k]): v_S[k] for k in range(p.n_states)}
    assert got.keys() == want.keys()
    np.testing.assert_allclose([got[k] for k in want], list(want.values()), rtol=0, atol=1e-9)
