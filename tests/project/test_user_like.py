"""The user-like groups of devtools/user_like.py have the properties benchmarks and screenshots rely on."""

from __future__ import annotations

import crbc
from devtools import user_like as U


def _lengths(groups):
    return [len(s.anchor) for g in groups for r in g.rollouts for s in r.steps]


def test_user_like_groups_look_like_users_runs(tmp_path):
    paths = U.write_all(tmp_path)
    alf, web, big, many = (crbc.read_rollouts(paths[k]) for k in ("alfworld", "webshop", "big", "many"))
    assert 300 <= min(_lengths(alf)) and max(_lengths(alf)) <= 1000 and "\n" in alf[0].rollouts[0].steps[0].anchor
    assert set(_lengths(web)) == {2000} and "$23.99" in web[0].rollouts[0].steps[0].anchor
    assert crbc.merge_stats(big).n_anchors >= 150 and len(big[0]) == 16
    assert len(many) == 64
    for groups in (alf, web, big):  # mixed outcomes: there is step credit to show
        assert 0 < sum(r.success for r in groups[0].rollouts) < len(groups[0])
        assert crbc.merge_stats(groups).shared_step_share > 0.5
