"""crbc.rollout/1 lines for the readers' tests: one good record, edits of it, and every bad
input docs/FORMATS.md names with the line and field its error must point at."""

from __future__ import annotations

import json

GOOD = {"schema": "crbc.rollout/1", "group": "g", "rollout": 0,
        "steps": [{"anchor": "#P_#", "action": "right", "obs": "o", "response": "right", "reward": -0.1}],
        "success": False, "truncated": True, "score": -0.1, "meta": {"seed": 3}}
DELETE = object()  # with_(field=DELETE) drops the field


def lines(*records):
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n"


def with_(**changes):
    rec = json.loads(json.dumps(GOOD))
    for k, v in changes.items():
        if v is DELETE:
            rec.pop(k)
        else:
            rec[k] = v
    return rec


# (why, record, line, field): the error names ``line`` and ``field``
BAD = [
    ("not json", "{nope", 1, "(line)"),
    ("missing group", with_(group=DELETE), 1, "group"),
    ("missing steps", with_(steps=DELETE), 1, "steps"),
    ("missing success", with_(success=DELETE), 1, "success"),
    ("group not a string", with_(group=3), 1, "group"),
    ("success not bool", with_(success=1), 1, "success"),
    ("truncated not bool", with_(truncated="no"), 1, "truncated"),
    ("success and truncated", with_(success=True, truncated=True), 1, "truncated"),
    ("empty steps", with_(steps=[]), 1, "steps"),
    ("steps not a list", with_(steps={}), 1, "steps"),
    ("step missing anchor", with_(steps=[{"action": "up"}]), 1, "steps[0].anchor"),
    ("step missing action", with_(steps=[{"anchor": "x"}]), 1, "steps[0].action"),
    ("anchor not a string", with_(steps=[{"anchor": 1, "action": "up"}]), 1, "steps[0].anchor"),
    ("reward not a number", with_(steps=[{"anchor": "x", "action": "up", "reward": "1"}]), 1, "steps[0].reward"),
    ("obs not a string", with_(steps=[{"anchor": "x", "action": "up", "obs": 2}]), 1, "steps[0].obs"),
    ("score not a number", with_(score="high"), 1, "score"),
    ("rollout negative", with_(rollout=-1), 1, "rollout"),
    ("rollout not int", with_(rollout=1.5), 1, "rollout"),
    ("meta not an object", with_(meta=[1]), 1, "meta"),
    ("wrong schema", with_(schema="crbc.rollout/2"), 1, "schema"),
    ("not an object", "[1, 2]", 1, "(record)"),
    ("NaN", '{"group": "g", "steps": [{"anchor": "x", "action": "u", "reward": NaN}], "success": false}', 1, "(line)"),
    ("Infinity score", '{"group": "g", "steps": [{"anchor": "x", "action": "u"}], "success": false, "score": Infinity}', 1, "(line)"),
    ("huge number overflows to inf", '{"group": "g", "steps": [{"anchor": "x", "action": "u"}], "success": false, "score": 1e999}', 1, "score"),
]
