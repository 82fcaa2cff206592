"""The Bellman backups page's "backups side by side": on a shipped sample with no truth (judged
against the closure), on a user's own file, and on a toy group with the exact truth."""

from __future__ import annotations

import json


def _codes(at) -> str:
    import html
    import re

    return "\n".join(html.unescape(re.sub(r"<[^>]+>", "", h.proto.body)) for h in at.get("html")
                     if "crbc-pre" in h.proto.body)


def _ask(at):
    return next(r for r in at.pills if r.key and r.key.startswith("backups_sbs_pred_"))


def test_on_the_worked_example_against_the_closure(app):
    at = app("pages/backups.py", sample="worked-example.jsonl")
    q = _ask(at)
    assert "most like the closure (this group has no exact truth)?" in q.label
    assert "crbc" not in q.options  # the closure is the reference, not a candidate
    codes = _codes(at)
    assert "V(s0) = Σ_a mu(a|s0) Q(s0,a) = 0.2 × 0.4802 + 0.8 × 0.3601 = 0.3842" in codes
    assert "d(s0) = 1 + min(d(s1) = 1, d(s2) = 1) = 2" in codes
    q.set_value("gigpo").run()
    assert not at.exception
    assert any("Right: gigpo orders them most like the closure" in s.value for s in at.success)


def test_on_a_users_own_file(app, tmp_path):
    rows = [{"schema": "crbc.rollout/1", "group": "mine", "rollout": i, "success": ok,
             "steps": [{"anchor": "hall", "action": act}, {"anchor": room, "action": "go"}]}
            for i, (act, room, ok) in enumerate([("left", "den", True), ("left", "den", False),
                                                  ("right", "attic", False), ("right", "attic", False)])]
    (tmp_path / "mine.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    at = app("pages/backups.py", samples=tmp_path, sample="mine.jsonl")
    assert not at.exception
    q = _ask(at)
    assert "hall" in q.label
    q.set_value("rewardflow").run()
    assert not at.exception
    assert "closure A(s,a)" in "\n".join(str(h.proto.body) for h in at.get("html"))


def test_an_anchors_arithmetic_is_computed_once_for_a_class(app, monkeypatch):
    """Two sessions on the same shipped sample: the second finds the side-by-side arithmetic
    kept (ui.core.context), the first computed it once; the same lines in both."""
    from crbc.explain import backups_side
    from ui.core.context import clear_shared

    clear_shared()
    calls = []
    real = backups_side.side_by_side
    monkeypatch.setattr(backups_side, "side_by_side", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = _codes(app("pages/backups.py", sample="worked-example.jsonl"))
    n = len(calls)
    second = _codes(app("pages/backups.py", sample="worked-example.jsonl"))
    assert n == 1 and len(calls) == 1, calls
    assert first == second and "V(s0)" in first
