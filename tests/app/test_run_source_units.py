"""The pieces behind a run as a source (issue 35), without a browser: the merge profile beyond the
first step, the audit reader and its drawing, the download table, the trainer's row in the cell
panel and on Disagreements, which paths a link may open, and ``studio.py --runs-dir``."""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd
import pytest

from crbc.errors import FormatError
from crbc.estimators import registry
from crbc.estimators.bootstrap import credit_intervals
from crbc.explain import disagreements as D
from crbc.io.anchor_keys import rekey
from crbc.io.audit_reader import find_audit, read_audit
from crbc.io.rollouts import Rollout, RolloutGroup, Step
from crbc.process import merge, merge_profile
from crbc.viz.audit import audit_grid_svg
from crbc.viz.downloads import COLUMNS, credit_table
from crbc.viz.step_detail import step_rows


def _history(n: int = 4, steps: int = 3) -> RolloutGroup:
    """Transcripts: step 0 the same prompt for everyone, then each rollout's own history, ending
    in the current room (a regex recovers it)."""
    rolls = []
    for i in range(n):
        hist, st = "prompt", []
        for t in range(steps):
            st.append(Step(f"{hist} | now: room {t}", "go" if (i + t) % 2 else "look", trainer_advantage=0.5 - i))
            hist += f" | said {i}.{t}"
        rolls.append(Rollout("h", i, tuple(st), i % 2 == 0))
    return RolloutGroup("h", tuple(rolls))


def test_the_merge_profile_sees_through_the_shared_first_step():
    g = _history()
    mp = merge_profile([g])
    assert mp.shared_share == pytest.approx(4 / 12) and mp.later_steps == 8 and mp.later_share == 0.0
    assert mp.merges_nothing
    assert mp.line() == "anchors 9 · steps at shared anchors 33% · steps beyond the first at shared anchors 0%"
    keyed = merge_profile(rekey([g], r"room (\d+)$"))
    assert keyed.later_share == 1.0 and not keyed.merges_nothing and keyed.n_anchors == 3
    one_step = RolloutGroup("o", (Rollout("o", 0, (Step("a", "x"),), True),))
    assert math.isnan(merge_profile([one_step]).later_share) and not merge_profile([one_step]).merges_nothing


def _audit_frame() -> pd.DataFrame:
    rows = []
    for it in (2, 0, 1):
        for est in ("gigpo", "crbc"):
            rows.append({"iteration": it, "estimator": est, "groups": 8, "rollouts": 64, "steps": 250,
                         "success_rate": 0.1 * it, "shared_step_share": 0.8, "anchors_per_group": 7.0,
                         "none_share": 0.9, "sure_share": 0.05, "trainer_spearman": 0.3 if est == "crbc" else 0.8,
                         "trainer_sign_agreement": 0.5, "seconds": 0.2})
    return pd.DataFrame(rows)


def test_an_audit_file_is_found_read_and_checked(tmp_path):
    assert find_audit(tmp_path) is None
    _audit_frame().to_parquet(tmp_path / "audit.parquet")
    assert find_audit(tmp_path) == tmp_path / "audit.parquet"
    frame = read_audit(tmp_path / "audit.parquet")
    assert frame["iteration"].tolist() == [0, 0, 1, 1, 2, 2] and frame["estimator"].tolist()[:2] == ["crbc", "gigpo"]
    bad = _audit_frame()
    bad["trainer_spearman"] = bad["trainer_spearman"].astype(object)
    bad.loc[3, "trainer_spearman"] = "high"
    bad.to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(FormatError, match=r"bad\.csv:4: trainer_spearman: must be a number, got 'high'"):
        read_audit(tmp_path / "bad.csv")
    _audit_frame().drop(columns="iteration").to_json(tmp_path / "no-it.jsonl", orient="records", lines=True)
    with pytest.raises(FormatError, match="iteration.*missing"):
        read_audit(tmp_path / "no-it.jsonl")
    (tmp_path / "broken.parquet").write_bytes(b"not parquet")
    with pytest.raises(FormatError, match="broken.parquet"):
        read_audit(tmp_path / "broken.parquet")


def test_the_audit_grid_draws_every_iteration_clickable():
    frame = _audit_frame().sort_values(["iteration", "estimator"])
    svg = audit_grid_svg(frame, selected=1)
    for title in ("success", "steps at shared anchors", "evidence: none / sure", "Spearman ρ, trainer ~ estimator",
                  "same sign as the trainer"):
        assert f">{title}" in svg, title
    for it in (0, 1, 2):
        assert f'data-pick="{it}"' in svg
    assert ">gigpo<" in svg and ">crbc<" in svg  # the legend
    assert audit_grid_svg(frame.iloc[:0]) == ""


def test_the_download_table_numbers_steps_from_0_and_carries_evidence_and_the_trainer():
    g = _history()
    p = merge([g])
    cs = {n: registry.compute(n, p) for n in ("crbc", "grpo")}
    ci = {"crbc": credit_intervals(p, "crbc", n_resamples=20, seed=0)}
    adv = np.array([s.trainer_advantage for r in g for s in r.steps])
    t = credit_table(cs, ci, adv)
    assert tuple(t.columns) == COLUMNS and len(t) == 2 * p.n_steps
    crbc = t[t.estimator == "crbc"]
    assert crbc["step"].tolist()[:3] == [0, 1, 2]
    assert set(crbc["evidence"]) <= {"sure", "unsure", "none"} and (t[t.estimator == "grpo"]["evidence"] == "").all()
    assert crbc["trainer_advantage"].tolist() == adv.tolist()
    assert np.isnan(t[t.estimator == "grpo"]["lo"]).all()


def test_the_cell_panel_has_the_trainers_row():
    g = _history()
    p = merge([g])
    cs = {"crbc": registry.compute("crbc", p)}
    adv = np.array([s.trainer_advantage for r in g for s in r.steps])
    rows = step_rows(cs, 4, trainer_N=adv)
    assert rows[-1] == {"estimator": "trainer (its advantage)", "A_S": "—", "A_final": f"{adv[4]:+.3f}",
                        "Q − V": "—", "evidence": "recorded"}
    adv[4] = np.nan  # a step without one: no row
    assert [r["estimator"] for r in step_rows(cs, 4, trainer_N=adv)] == ["crbc"]


def test_disagreements_compare_the_trainer_with_an_estimators_a_final():
    g = rekey([_history()], r"room (\d+)$")
    p = merge(g)
    crbc = registry.compute("crbc", p)
    same = D.disagreements(p, D.trainer_comparison("crbc"), trainer_N=crbc.advantage_N)
    assert same.comparison.value_name == "A" and max(abs(s.delta) for s in same.steps) < 1e-12
    shifted = D.disagreements(p, D.trainer_comparison("crbc"), trainer_N=crbc.advantage_N + 1.0)
    assert all(abs(s.delta - 1.0) < 1e-12 for s in shifted.steps)
    assert sorted({s.t for s in shifted.steps}) == [0, 1, 2]  # 0-based steps
    with pytest.raises(ValueError, match="no trainer advantage"):
        D.disagreements(p, D.trainer_comparison("crbc"))


def test_a_link_opens_only_run_folders_under_the_roots(tmp_path, monkeypatch):
    from ui.core import run_source, state

    (tmp_path / "mine" / "r1").mkdir(parents=True)
    (tmp_path / "mine" / "r1" / "run.json").write_text("{}")
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "run.json").write_text("{}")
    monkeypatch.setattr(state, "SAMPLES_DIR", tmp_path / "samples")
    monkeypatch.setenv(run_source.ENV, str(tmp_path / "mine"))
    assert run_source.resolve(str(tmp_path / "mine" / "r1")) == (tmp_path / "mine" / "r1").resolve()
    assert run_source.resolve(str(tmp_path / "mine" / "r1" / ".." / ".." / "secret")) is None
    assert run_source.resolve(str(tmp_path / "secret")) is None
    assert run_source.resolve("/etc") is None and run_source.resolve("") is None
    os.symlink(tmp_path / "secret", tmp_path / "mine" / "link")  # a link out of a root is followed, then refused
    assert run_source.resolve(str(tmp_path / "mine" / "link")) is None
    assert run_source.resolve(str(tmp_path / "mine")) is None  # a root without run.json is no run


def test_studio_runs_dir_flags():
    import studio

    assert studio.runs_dirs(["--runs-dir", "a", "--server.port", "1", "--runs-dir=b"]) == (["a", "b"],
                                                                                          ["--server.port", "1"])


def test_float_noise_between_the_trainer_and_crbc_is_agreement():
    """A crbc-trained run's advantage (float32) against crbc's (float64): no bar, no Δ, no ⚠
    (issue 55.5; the tolerance is the run review's too: crbc.explain.disagreements.snap)."""
    from crbc.viz.disagreement import disagreement_bars_html

    g = rekey([_history()], r"room (\d+)$")
    p = merge(g)
    crbc = registry.compute("crbc", p)
    noisy = crbc.advantage_N.astype(np.float32).astype(float) + 3e-8 * np.sin(np.arange(p.n_steps))
    assert np.any(noisy != crbc.advantage_N)
    dis = D.disagreements(p, D.trainer_comparison("crbc"), trainer_N=noisy)
    assert all(a.disagreement == 0 and a.max_abs == 0 and not a.ranks_differ for a in dis.anchors)
    assert all(s.delta == 0 for s in dis.steps) and all(q.delta == 0 for q in dis.pairs)
    html = disagreement_bars_html(dis)
    assert "They agree on every anchor" in html and "0.000" not in html
    real = D.disagreements(p, D.trainer_comparison("crbc"), trainer_N=crbc.advantage_N + 0.01)
    assert "They agree" not in disagreement_bars_html(real) and real.anchors[0].disagreement > 0
