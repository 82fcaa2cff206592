"""The recorder's doctor counts as curves across runs (crbc.run_analysis.doctor_curves): checked by
hand on runs whose counts are known (tests/support/runs.py's DOCTOR_FLAGS)."""

from __future__ import annotations

import numpy as np
import pytest

from crbc.io.runs import read_run
from crbc.run_analysis import doctor_curves as D
from tests.support.runs import DOCTOR_FLAGS, write_doctor_runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("doc") / "exp"
    write_doctor_runs(root)
    return [read_run(root / n) for n in ("rec-s0", "rec-s1", "plain-s0")]


def test_flagged_reads_one_check_and_the_sum(runs):
    its, rows = D.flagged(runs[1].metrics, "singleton_groups")
    assert its.tolist() == [0, 1, 2] and rows.tolist() == list(DOCTOR_FLAGS[("rec-s1", "singleton_groups")])
    its, rows = D.flagged(runs[1].metrics, D.ALL)  # 1+0, 3+0, 0+5
    assert rows.tolist() == [1.0, 3.0, 5.0]
    assert D.flagged(runs[2].metrics, D.ALL)[0].size == 0


def test_a_later_line_of_an_iteration_replaces_an_earlier_and_info_checks_are_not_summed():
    lines = [{"iteration": 0, "crbc/doctor/singleton_groups": 2, "crbc/doctor/zero_variance_groups": 7},
             {"iteration": 0, "crbc/doctor/singleton_groups": 3}, {"iteration": 1, "loss": 0.1},
             {"iteration": True, "crbc/doctor/singleton_groups": 9}]
    its, rows = D.flagged(lines, D.ALL)
    assert its.tolist() == [0] and rows.tolist() == [3.0]
    assert D.flagged(lines, "zero_variance_groups")[1].tolist() == [7.0]


def test_checks_runs_and_curves(runs):
    from crbc.doctor.findings import CHECKS

    assert D.recorded_checks(runs) == (["singleton_groups", "no_shared_anchors"],
                                       [c for c in CHECKS if c not in ("singleton_groups", "no_shared_anchors")])
    assert [r.name for r in D.unrecorded(runs)] == ["plain-s0"]
    cs = D.doctor_curves(runs, "singleton_groups", by=lambda r: r.experiment, name=lambda r: r.label)
    (c,) = cs.values()  # the two recorded seeds of one experiment; plain-s0 has no points
    assert c.runs == ("exp/rec-s0", "exp/rec-s1")
    np.testing.assert_allclose(c.mean, [0.5, 3.5, 1.0])
    np.testing.assert_allclose(c.hi, [1, 4, 2])
    assert D.doctor_curves(runs[2:], D.ALL) == {}
    assert "singleton_groups (error)" in D.check_title("singleton_groups")
