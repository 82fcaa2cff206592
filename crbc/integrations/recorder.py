"""The run recorder: one verl-agent training batch (a ``DataProto``) -> one iteration of a
``crbc.run/1`` folder, cheap enough to leave on (docs/VERL.md: the one line in ``fit``).

Per row of the batch (``B`` rows, ``L`` response tokens): ``uid`` the group, ``traj_uid`` the
trajectory, ``step_index`` the position (``add_step_index``; without it the row order, which is
only right before ``_balance_batch``), ``anchor_obs`` the anchor (text as is; bytes decoded as
UTF-8 or hashed; arrays, e.g. images, hashed stably as ``array:<shape>:<digest>`` with the shape,
dtype and an 8x8 thumbnail in the rollout's ``meta.anchor_arrays``), ``action``
(``is_action_valid`` False gives ``invalid``), ``rewards``, ``success`` (or
``success_threshold`` on the score), ``episode_rewards`` the score, and ``trainer_advantage`` =
``advantages[b, first response token]`` (``response_mask``, else the response part of
``attention_mask``: verl-agent's ``compute_response_mask``). Copies from
``adjust_batch(mode="copy")`` share (uid, traj_uid, step_index) and are written once.

With an anchor key (``RunRecorder(anchor=regex or callable)``, :mod:`crbc.io.anchor_keys`) each
step's anchor is the key of its ``anchor_obs`` text and the text itself is kept as the step's
``obs``. :meth:`RunRecorder.record` returns the iteration's credit health for the trainer's
logger (:mod:`crbc.integrations.trainer_metrics`, docs/FORMATS.md "Trainer metrics").

With ``RunRecorder(tokens=S)`` (S > 0) each iteration also keeps, for at most S of its steps,
the advantage on each response token and the loss mask (the first ``token_limit`` tokens of
each; token ids, and their texts with ``tokenizer=``) in ``rollouts/iter-NNNN.tokens.parquet``
(:mod:`crbc.io.tokens`, :mod:`crbc.integrations.token_rows` says which steps).
"""

from __future__ import annotations

import logging
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from crbc.actions import INVALID_ACTION
from crbc.integrations.anchor_text import anchor_text
from crbc.integrations.run_meta import run_name, trainer_facts
from crbc.integrations.step_rows import batch_field, column, key_anchors
from crbc.integrations.trainer_metrics import describe_key, trainer_metrics
from crbc.io.anchor_keys import AnchorKeySpec, anchor_key
from crbc.io.rollouts import Rollout, RolloutGroup, Step
from crbc.io.run_writer import RunWriter, json_clean
from crbc.io.runs import ROLLOUTS_DIR, RUN_FILE, read_run, rollouts_name
from crbc.run_analysis.health import unknown_params

__all__ = ["batch_steps", "BatchSteps", "first_token_values", "RunRecorder", "steps_groups", "steps_table"]

log = logging.getLogger("crbc")


def first_token_values(adv: Any, mask: Any) -> np.ndarray:
    """(B,) ``adv[b, l_b]`` with ``l_b`` the first response token of row b (NaN for a row with
    none). adv, mask: (B, L) tensors or arrays; only B values are copied, never the (B, L) block."""
    m = column(mask, "response_mask", None)
    has = m != 0  # (B, L) bool
    first_B = has.argmax(axis=1)
    rows_B = np.arange(len(first_B))
    if type(adv).__module__.split(".")[0] == "torch":
        import torch

        out = adv.detach()[torch.as_tensor(rows_B), torch.as_tensor(first_B, device=adv.device)]
        out = out.cpu().double().numpy()
    else:
        out = np.asarray(adv)[rows_B, first_B].astype(np.float64)
    out[~has.any(axis=1)] = np.nan
    return out


@dataclass(frozen=True, eq=False)
class BatchSteps:
    """The distinct steps of a batch in output order (K steps, R rollouts): groups sorted by
    uid, rollouts by traj_uid, steps by step index; copies dropped.

    group, traj: (K,) object str. rollout: (K,) int64 index inside the group. t: (K,) int64
    step inside the rollout. anchor, action: (K,) object str. response: (K,) object or None.
    reward, advantage, score: (K,) float64, NaN where absent. success: (K,) bool.
    starts: (R + 1,) first step of each rollout, then K. notes: array anchor -> note.
    obs: (K,) object str, the observation text an anchor key was taken from (None without a key).
    row: (K,) int64 the batch row of each step (the first of its copies).
    """

    group: np.ndarray
    traj: np.ndarray
    rollout: np.ndarray
    t: np.ndarray
    anchor: np.ndarray
    action: np.ndarray
    response: np.ndarray | None
    reward: np.ndarray
    advantage: np.ndarray
    score: np.ndarray
    success: np.ndarray
    starts: np.ndarray
    notes: dict[str, dict[str, Any]]
    obs: np.ndarray | None = None
    row: np.ndarray | None = None

    def metas(self, step: int | None) -> list[str]:
        """(R,) the rollouts' meta as JSON text (sorted keys, as the Parquet writer stores it)."""
        import json

        out = []
        for a, b in zip(self.starts[:-1].tolist(), self.starts[1:].tolist(), strict=True):
            meta: dict[str, Any] = {"traj_uid": self.traj[a]}
            if step is not None:
                meta["iteration"] = int(step)
            if self.notes:
                mine = {k: self.notes[k] for k in self.anchor[a:b].tolist() if k in self.notes}
                if mine:
                    meta["anchor_arrays"] = mine
            out.append(json.dumps(meta, ensure_ascii=False, allow_nan=False, sort_keys=True))
        return out


def _floats(x: Any, name: str, n: int) -> np.ndarray:
    if x is None:
        return np.full(n, np.nan)
    return column(x, name, n).astype(np.float64)


def batch_steps(data: Any, success_threshold: float | None = None, warn: bool = True,  # noqa: C901
                anchor: AnchorKeySpec = None, anchor_similarity: float | None = None) -> BatchSteps:
    """The :class:`BatchSteps` of a ``DataProto`` of step rows (see the module docstring);
    ``anchor``: an anchor key for text observations (None: the text itself);
    ``anchor_similarity``: TAU, anchors then merged per group as ``compute_advantage`` merges
    them (the group's rows in batch order, :func:`crbc.integrations.step_rows.key_anchors`)."""
    n = len(data)
    need = {k: batch_field(data, k) for k in ("uid", "traj_uid", "anchor_obs")}
    for k, v in need.items():
        if v is None:
            raise KeyError(f"DataProto has no field {k!r}; fields: {', '.join(sorted(data.non_tensor_batch))}")
    uid_B = np.array([str(x) for x in column(need["uid"], "uid", n).tolist()], dtype=object)
    traj_B = np.array([str(x) for x in column(need["traj_uid"], "traj_uid", n).tolist()], dtype=object)
    uid_names, uid_code = np.unique(uid_B, return_inverse=True)
    _, traj_code = np.unique(traj_B, return_inverse=True)
    key_B = uid_code.ravel().astype(np.int64) * n + traj_code.ravel()
    idx = batch_field(data, "step_index")
    if idx is None:
        if warn:
            warnings.warn("the batch has no step_index: steps are taken in row order, which "
                          "_balance_batch scrambles (call crbc.integrations.verl.add_step_index "
                          "after the rollout loop)", stacklevel=4)
        by_key = np.argsort(key_B, kind="stable")
        new = np.r_[True, key_B[by_key][1:] != key_B[by_key][:-1]]
        first = np.maximum.accumulate(np.where(new, np.arange(n), 0))
        idx_B = np.empty(n, dtype=np.int64)
        idx_B[by_key] = np.arange(n) - first
    else:
        idx_B = column(idx, "step_index", n).astype(np.int64)
    perm = np.lexsort((idx_B, key_B))
    k_s, i_s = key_B[perm], idx_B[perm]
    keep = np.r_[True, (k_s[1:] != k_s[:-1]) | (i_s[1:] != i_s[:-1])]  # copies share key and index
    perm, k_s, i_s = perm[keep], k_s[keep], i_s[keep]
    new_r = np.r_[True, k_s[1:] != k_s[:-1]]
    gap = ~new_r & (np.r_[0, np.diff(i_s)] != 1)
    if gap.any():
        b = perm[np.flatnonzero(gap)[0]]
        raise ValueError(f"trajectory {traj_B[b]!r} of group {uid_B[b]!r} misses a step before "
                         f"step_index {idx_B[b]}: rows were dropped")
    starts = np.r_[np.flatnonzero(new_r), len(perm)]
    r_of_k = np.cumsum(new_r) - 1
    g_r = uid_code.ravel()[perm][starts[:-1]]
    new_g = np.r_[True, g_r[1:] != g_r[:-1]]
    first_r = np.maximum.accumulate(np.where(new_g, np.arange(len(g_r)), 0))
    rollout_r = np.arange(len(g_r)) - first_r
    notes: dict[str, dict[str, Any]] = {}
    obs_K = None
    if anchor is not None or anchor_similarity is not None:
        key_B, text_B = key_anchors(column(need["anchor_obs"], "anchor_obs", n), anchor, "anchor_obs",
                                    similarity=anchor_similarity, group=uid_B, group_name="uid")
        anchor_K, obs_K = key_B[perm], text_B[perm]
    else:
        anchors = column(need["anchor_obs"], "anchor_obs", n)
        anc = anchors.tolist() if anchors.ndim == 1 else list(anchors)
        anchor_K = np.array([anc[b] if type(anc[b]) is str else anchor_text(anc[b], notes)
                             for b in perm.tolist()], dtype=object)
    act = batch_field(data, "action")
    action_K = (np.array([str(x) for x in column(act, "action", n)[perm].tolist()], dtype=object)
                if act is not None else np.full(len(perm), "", dtype=object))
    valid = batch_field(data, "is_action_valid")
    if valid is not None:
        action_K[~column(valid, "is_action_valid", n)[perm].astype(bool)] = INVALID_ACTION
    resp = batch_field(data, "response")
    score_B = _floats(batch_field(data, "episode_rewards"), "episode_rewards", n)
    ok = batch_field(data, "success")
    if ok is None:
        if success_threshold is None or batch_field(data, "episode_rewards") is None:
            raise KeyError("DataProto has no field 'success': store it in the rollout loop, or "
                           "give RunRecorder(success_threshold=X) to read success = episode_rewards >= X")
        ok_B = score_B >= success_threshold
    else:
        ok_B = column(ok, "success", n).astype(bool)
    adv = batch_field(data, "advantages")
    if adv is not None:
        mask = batch_field(data, "response_mask")
        if mask is None:
            mask = data.batch["attention_mask"][:, -adv.shape[1]:]
        adv_B = first_token_values(adv, mask)
    else:
        adv_B = np.full(n, np.nan)
    first_of_r = perm[starts[:-1]][r_of_k]  # each step's rollout's first row: outcome and score
    return BatchSteps(
        group=uid_B[perm], traj=traj_B[perm], rollout=rollout_r[r_of_k], t=i_s - i_s[starts[:-1]][r_of_k],
        anchor=anchor_K, action=action_K,
        response=None if resp is None else np.array([str(x) for x in column(resp, "response", n)[perm].tolist()],
                                                    dtype=object),
        reward=_floats(batch_field(data, "rewards"), "rewards", n)[perm], advantage=adv_B[perm],
        score=score_B[first_of_r], success=ok_B[first_of_r], starts=starts, notes=notes, obs=obs_K,
        row=perm.astype(np.int64))


def _opt(x: float) -> float | None:
    return None if x != x else x


def steps_groups(st: BatchSteps, step: int | None = None) -> list[RolloutGroup]:
    """The rollout groups of :class:`BatchSteps` (Step objects: the JSON Lines path)."""
    import json

    resp = st.response.tolist() if st.response is not None else [None] * len(st.anchor)
    obs = st.obs.tolist() if st.obs is not None else [None] * len(resp)
    steps = list(map(Step, st.anchor.tolist(), st.action.tolist(), obs, resp,
                     map(_opt, st.reward.tolist()), map(_opt, st.advantage.tolist())))
    groups: dict[str, list[Rollout]] = {}
    for a, b, meta in zip(st.starts[:-1].tolist(), st.starts[1:].tolist(), st.metas(step), strict=True):
        g = st.group[a]
        groups.setdefault(g, []).append(Rollout(g, int(st.rollout[a]), tuple(steps[a:b]), bool(st.success[a]),
                                                False, _opt(float(st.score[a])), json.loads(meta)))
    return [RolloutGroup(g, tuple(rs)) for g, rs in groups.items()]


def steps_table(st: BatchSteps, step: int | None = None):
    """The Parquet rollout Table of :class:`BatchSteps` (:mod:`crbc.io.parquet_rollouts`)."""
    from crbc.io.parquet_rollouts import columns_table

    k = len(st.anchor)
    lens = np.diff(st.starts)
    return columns_table({
        "group": st.group, "rollout": st.rollout, "step": st.t, "anchor": st.anchor,
        "action": st.action, "obs": st.obs if st.obs is not None else np.full(k, None, dtype=object),
        "response": st.response if st.response is not None else np.full(k, None, dtype=object),
        "reward": st.reward, "trainer_advantage": st.advantage, "success": st.success,
        "truncated": np.zeros(k, dtype=bool), "score": st.score,
        "meta": np.repeat(np.array(st.metas(step), dtype=object), lens)})


def _token_caps(tokens: int, token_limit: int, tokenizer: Any) -> tuple[int, int, Any] | None:
    """``(rows, tokens per row, tokenizer)`` of ``RunRecorder(tokens=..., token_limit=...,
    tokenizer=...)``, None when no tokens are kept; bad values raise naming the argument."""
    from crbc.integrations.token_rows import check_tokenizer

    for name, v in (("tokens", tokens), ("token_limit", token_limit)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"RunRecorder({name}=...) must be a whole number >= 0, got {v!r}")
    check_tokenizer(tokenizer)
    if not tokens:
        return None
    if not token_limit:
        raise ValueError("RunRecorder(token_limit=0) keeps no token: give a positive number, or tokens=0")
    return int(tokens), int(token_limit), tokenizer


def _warm_parquet() -> None:
    """pyarrow imports pandas at its first array conversion (about 1.2 s, which made the first
    ``record`` cost 1.3-2.4 s): done here, in a thread started with the recorder, while the
    trainer loads its model and generates the first batch."""
    try:
        import pyarrow as pa

        pa.array([0.0])
    except Exception:  # noqa: BLE001 - a warm-up never fails the recorder; record() says what is wrong
        pass


class RunRecorder:
    """Records verl training batches into a run folder, one iteration per training step, and
    returns each iteration's credit health for the trainer's logger.

    ``RunRecorder(run_dir, meta=None, format="parquet", success_threshold=None, anchor=None,
    estimators=("crbc", "gigpo"), bootstrap=0, seed=0, params=None, trainer_config=None, doctor=True,
    expect=None, anchor_similarity=None, tokens=0, token_limit=1024, tokenizer=None)``; then
    ``metrics.update(recorder.record(batch, step))`` after ``compute_advantage``. ``anchor``: an
    anchor key (a regex or a callable ``text -> str``, as ``compute_advantage(anchor=...)``);
    ``anchor_similarity``: TAU in (0, 1), as ``compute_advantage(anchor_similarity=...)``: the
    steps are written with the merged anchors (the text as ``obs``) and run.json's
    ``config.anchor_similarity`` says so;
    ``estimators``, ``bootstrap``, ``seed``, ``params``: what :func:`crbc.run_analysis.health.iteration_health`
    compares with the trainer's advantage (``bootstrap`` > 0 adds ``crbc/sure_share``).
    ``doctor``: run the advantage doctor (:mod:`crbc.integrations.doctor_steps` on the steps it read, ``expect``
    its expected estimator) on every batch: ``crbc/doctor/<check>`` = rows flagged, one ``crbc``
    log line the first time a check warns or errs, the findings in ``self.findings``; a doctor
    that fails is logged once and never stops training.
    ``tokens``: S, the steps per iteration whose response tokens are kept (0, the default: none;
    rollout 0 of every group first), ``token_limit``: the tokens kept per step (the first ones,
    default 1024), ``tokenizer``: verl's ``self.tokenizer`` (or a callable ``ids -> list of str``)
    to store each token's text beside its id; written to ``rollouts/iter-NNNN.tokens.parquet``
    (docs/FORMATS.md, "Token advantages"; needs pyarrow); a failure there is logged once and
    never stops training.
    ``format="parquet"`` needs pyarrow (``pip install "crbc[parquet]"``); ``"jsonl"`` does not.
    ``trainer_config``: the trainer's config (verl's ``self.config``, an OmegaConf or a dict):
    its ``trainer.project_name``, ``trainer.experiment_name`` and seed name the run
    (:func:`trainer_facts`); without it the run is named after its folder (:func:`run_name`).
    An existing run is continued; recording a step at or before the last one recorded (a resumed
    trainer) first forgets the iterations from that step on.
    """

    def __init__(self, run_dir: str | Path, meta: dict[str, Any] | None = None, format: str = "parquet",
                 success_threshold: float | None = None, anchor: AnchorKeySpec = None,
                 estimators: tuple[str, ...] = ("crbc", "gigpo"), bootstrap: int = 0, seed: int = 0,
                 params: dict[str, Any] | None = None, trainer_config: Any = None, doctor: bool = True,
                 expect: str | None = None, anchor_similarity: float | None = None, tokens: int = 0,
                 token_limit: int = 1024, tokenizer: Any = None):
        from crbc.io.similarity import check_similarity

        self.anchor_similarity = check_similarity(anchor_similarity, "RunRecorder(anchor_similarity=...)")
        self.path = Path(run_dir)
        self.doctor, self.expect, self.findings = doctor, expect, []
        self._fired: set[str] = set()
        self._doctor_failed = False
        self.format, self.success_threshold = format, success_threshold
        rollouts_name(0, format)  # refuses an unknown format now, not at the first step
        self.tokens = _token_caps(tokens, token_limit, tokenizer)
        self._tokens_failed = False
        if format == "parquet" or self.tokens:
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                raise ImportError('RunRecorder(format="parquet") and RunRecorder(tokens=...) need pyarrow: '
                                  'pip install "crbc[parquet]" (verl\'s own requirements include it), or record '
                                  'format="jsonl" without tokens') from None
            import threading

            threading.Thread(target=_warm_parquet, name="crbc-recorder-warm-up", daemon=True).start()
        anchor_key(anchor)  # a bad key (not a regex or a callable, a bad pattern) fails now
        bad = unknown_params(tuple(estimators), dict(params or {}))  # unknown estimator names raise here
        if bad:
            raise ValueError(f"RunRecorder(params=...): no estimator of {', '.join(estimators)} has a "
                             f"parameter {', '.join(bad)}")
        self.anchor = anchor
        self.health = {"estimators": tuple(estimators), "bootstrap": bootstrap, "seed": seed,
                       "params": dict(params or {})}
        self.last_path: Path | None = None
        if (self.path / RUN_FILE).exists():
            self.writer = RunWriter.open(self.path)
            run = read_run(self.path)
            self._last = max([run.last_iteration, *run.iterations_with_rollouts], default=-1)
        else:
            meta = dict(meta or {})
            config = {"estimator": "trainer", "source": "verl recorder", **trainer_facts(trainer_config),
                      **meta.pop("config", {})}
            if anchor is not None:
                config.setdefault("anchor_key", getattr(anchor, "pattern", None) or
                                  (anchor if isinstance(anchor, str) else getattr(anchor, "__name__", "callable")))
            if self.anchor_similarity is not None:
                config.setdefault("anchor_similarity", self.anchor_similarity)
            self.writer = RunWriter.create(self.path, {
                "name": meta.pop("name", None) or run_name(self.path, config), "config": config,
                "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **meta})
            self._last = -1
        self._warned = False

    def steps(self, data: Any) -> BatchSteps:
        st = batch_steps(data, self.success_threshold, warn=not self._warned, anchor=self.anchor,
                         anchor_similarity=self.anchor_similarity)
        self._warned = self._warned or batch_field(data, "step_index") is None
        return st

    def _diagnose(self, st: BatchSteps, data: Any, step: int) -> dict[str, float]:
        """``{"crbc/doctor/<check>": rows flagged}`` of the batch; {} when the doctor fails."""
        try:
            from crbc.doctor import counts
            from crbc.integrations import doctor_steps

            self.findings = doctor_steps.diagnose_steps(st, data, step, self.expect, self.health["params"])
        except Exception as e:  # noqa: BLE001 - the doctor never stops training
            self.findings = []
            if not self._doctor_failed:
                self._doctor_failed = True
                log.warning("crbc doctor: could not examine iteration %d (%s: %s); training goes on",
                            step, type(e).__name__, e)
            return {}
        for f in self.findings:
            if f.serious and f.check not in self._fired:
                self._fired.add(f.check)
                log.warning("crbc doctor: iteration %d: %s %s on %d rows (e.g. %s): %s", step, f.severity,
                            f.check, f.rows, ", ".join(map(str, f.examples)), f.message)
        return {"crbc/" + k: v for k, v in counts(self.findings).items()}

    def _keep_tokens(self, data: Any, st: BatchSteps, step: int) -> None:
        """Write the iteration's token file (:mod:`crbc.io.tokens`); a failure is logged once."""
        from crbc.integrations.token_rows import batch_tokens
        from crbc.io.tokens import tokens_path, tokens_table, write_tokens

        rows, limit, tokenizer = self.tokens
        try:
            kept = batch_tokens(data, st.group, st.rollout, st.t, st.row, rows, limit, tokenizer)
            if kept is not None:
                write_tokens(tokens_path(self.path, step), tokens_table(kept, rows, limit))
        except Exception as e:  # noqa: BLE001 - the token view never stops training
            if not self._tokens_failed:
                self._tokens_failed = True
                log.warning("crbc recorder: could not keep the tokens of iteration %d (%s: %s); training goes on",
                            step, type(e).__name__, e)

    def groups(self, data: Any, step: int | None = None) -> list[RolloutGroup]:
        """The batch as rollout groups: groups sorted by uid, rollouts by traj_uid (so the order
        does not depend on how ``_balance_batch`` shuffled the rows)."""
        return steps_groups(self.steps(data), step)

    def record(self, data: Any, step: int, metrics: dict[str, Any] | None = None) -> dict[str, float]:
        """Write iteration ``step`` (rollouts, then its metrics line: ``metrics`` and the credit
        health) and return the credit health as ``{"crbc/<name>": float}`` (docs/FORMATS.md,
        "Trainer metrics", plus ``crbc/merge_warning`` and ``crbc/record_seconds``, the time this
        call took). The rollout file written is ``self.last_path``."""
        t0 = time.perf_counter()
        step = int(step)
        st = self.steps(data)
        key_name = describe_key(self.anchor)
        health = trainer_metrics(st, key_name=key_name, **self.health)
        if self.doctor:
            health.update(self._diagnose(st, data, step))
        if step <= self._last:
            self.writer.truncate(step - 1)
        if self.format == "parquet":
            from crbc.io.parquet_rollouts import write_parquet_rollouts

            path = write_parquet_rollouts(self.path / ROLLOUTS_DIR / rollouts_name(step, "parquet"),
                                          steps_table(st, step))
        else:
            path = self.writer.write_rollouts(step, steps_groups(st, step), format=self.format)
        if self.tokens:
            self._keep_tokens(data, st, step)
        health["crbc/record_seconds"] = time.perf_counter() - t0
        record = {k: v for k, v in json_clean({**dict(metrics or {}), **health}).items()
                  if isinstance(v, (int, float, str, bool)) or v is None}
        self.writer.append_metrics({**record, "iteration": step})
        self._last, self.last_path = step, path
        return health
