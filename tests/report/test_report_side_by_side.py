"""The group report's backups side by side (crbc/report/side_by_side.py): the anchor chosen by
``--compare-at`` (id, label or text; default the most visited anchor with two or more actions),
the same lines the studio shows, a clear error for an anchor the group does not have, and the
command a studio notice gives run as written."""

from __future__ import annotations

import html as H
import shlex

import numpy as np
import pytest

from crbc.cli.main import main
from crbc.estimators.worker_job import command
from crbc.explain.anchor_names import anchor_labels, state_pairs
from crbc.explain.backups_side import choosable_anchors, side_by_side
from crbc.io.rollouts import read_rollouts, write_rollouts
from crbc.process import merge
from crbc.report import group_report
from tests.support.paths import ROOT

SOKOBAN = ROOT / "sample_rollouts" / "sokoban-weak.jsonl"


def _section(html: str) -> str:
    start = html.index('id="side-by-side"')
    return html[start:html.index('id="disagreements"', start)]


def _has_lines(section: str, sb) -> None:
    for m in sb.lines:
        assert H.escape(m.value_line, quote=True) in section, m.method
        for line in m.action_lines:
            assert H.escape(line, quote=True) in section, (m.method, line)


def test_the_default_anchor_is_the_busiest_whose_actions_the_closure_tells_apart():
    """On sokoban-strong's reported group the most visited anchor with two actions is a dead end
    (every A is 0); the section skips it for the next one where the closure's A differ."""
    from crbc.estimators import registry
    from crbc.report.build import pick_group

    groups = read_rollouts(ROOT / "sample_rollouts" / "sokoban-strong.jsonl")
    g = groups[pick_group(groups, None)]
    p = merge([g])
    a_SA = registry.compute("crbc", p, beta=0.98, depth=None, sigma_min=0.1).credit_SA
    busiest = choosable_anchors(p)
    assert np.ptp(a_SA[state_pairs(p, busiest[0])]) == 0  # the dead end the default skips
    s = next(s for s in busiest if np.ptp(a_SA[state_pairs(p, s)]) > 1e-9)
    section = _section(group_report(g, truth=False))
    assert f"Anchor {s} (" in section
    _has_lines(section, side_by_side(p, s))


@pytest.mark.parametrize("how", ["id", "label"])
def test_compare_at_names_the_anchor_by_id_or_label(how):
    g = read_rollouts(SOKOBAN)[1]
    p = merge([g])
    s = choosable_anchors(p)[-1]
    at = str(s) if how == "id" else anchor_labels(p)[s]
    section = _section(group_report(g, truth=False, compare_at=at))
    assert f"Anchor {s} (" in section
    _has_lines(section, side_by_side(p, s))


def test_the_notices_command_runs_and_a_wrong_anchor_says_what_the_group_has(tmp_path, capsys):
    groups = read_rollouts(SOKOBAN)[:3]
    src = tmp_path / "mine.jsonl"
    write_rollouts(src, groups)
    p = merge([groups[2]])
    s = choosable_anchors(p)[0]
    line = shlex.split(command("side_by_side", "crbc", {"state": s, "beta": 0.9, "sigma_min": 0.2, "group": 2}))
    out = tmp_path / line[line.index("-o") + 1]
    args = [str(src) if a == "FILE" else str(out) if a == "report.html" else a for a in line[3:]]
    assert main(args) == 0
    _has_lines(_section(out.read_text()), side_by_side(p, s, beta=0.9, sigma_min=0.2))
    assert main(["report", str(src), "-o", str(tmp_path / "x.html"), "--group", "2", "--compare-at", str(p.n_states)]) == 2
    assert f"the group has anchors 0..{p.n_states - 1}" in capsys.readouterr().err
    assert main(["report", str(src), "-o", str(tmp_path / "x.html"), "--group", "2", "--compare-at", "no such anchor"]) == 2
    assert "no anchor of the group has this id, label or text" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()
