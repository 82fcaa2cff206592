"""AppTest: the Lesson, Inspector and Disagreements pages and their widgets.

AppTest cannot render plotly or iframes; the numbers checked here are in static tables and code
blocks (the browser test covers the rest).
"""

from __future__ import annotations

import html
import re
from urllib.parse import parse_qsl

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.html_tables import grid_rows, tables


def _tables(at: AppTest) -> str:
    return "\n".join(t.value.to_string() for t in tables(at))


def _codes(at: AppTest) -> str:
    """The text of the pages' monospace blocks (pages.widgets.pre: html <pre class="crbc-pre">)."""
    out = []
    for h in at.get("html"):
        m = re.search(r'<pre class="crbc-pre"[^>]*>(.*)</pre>', h.proto.body, re.S)
        if m:
            out.append(html.unescape(m.group(1)))
    return "\n".join(out)


def _md(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


# ---- lesson ----------------------------------------------------------------------------------


@pytest.fixture()
def lesson(app) -> AppTest:
    """The Lesson with every section on one page (the parts are tested in test_lesson_parts.py)."""
    return app("pages/lesson.py", sample="worked-example.jsonl", lesson_part="all")


def test_lesson_truth_section_shows_rewardflow_beside_the_truth(lesson):
    md = _md(lesson)
    assert "rewardflow" in _tables(lesson)
    # the shipped truth group (sokoban-weak) has a tie under the maximum: s0 (3 of 8) and s5 (1 of 4)
    assert "RewardFlow gives **s0** and **s5** the same value" in md
    assert "The truth agrees with the closure's order here: V = 0.3038 against 0.0487" in md
    assert "true V (mean over visits)" in _tables(lesson)


def test_lesson_walks_through_every_section(lesson):
    heads = [h.value for h in lesson.main.header]  # the sidebar has headers too
    assert [h.split(" · ")[0] for h in heads] == [str(i) for i in range(1, 13)]
    assert "GRPO" in heads[1] and "linear system" in heads[4] and "shortest-path" in heads[7]
    assert "Which estimate is right" in heads[8] and "different backups" in heads[9]
    assert "Luck against skill" in heads[10] and "When the pipeline is wrong" in heads[11]


@pytest.mark.parametrize(("preset", "check"), [
    ("one group id per rollout", "singleton_groups"),
    ("only the last step trained", "zero_step_advantage"),
    ("a baseline over step rows", "length_weighted_baseline"),
    ("advantages per turn index", "estimator_mismatch"),
])
def test_each_planted_bug_changes_the_advantages_and_the_doctor_names_it(lesson, preset, check):
    md = _md(lesson)
    assert "Nothing to report: every check passes." in " ".join(x.value for x in lesson.success)
    assert "worked example with retries" in "\n".join(c.value for c in lesson.caption)  # equal lengths here
    lesson.pills(key="lesson_bug").set_value(preset).run()
    assert not lesson.exception
    md = _md(lesson)
    assert f"**{preset.capitalize()}**" in md and "step advantages" in md
    assert f"`{check}`" in md
    assert "buggy" in _tables(lesson)


def test_luck_against_skill_asks_then_shows_each_credit_beside_the_truth(lesson):
    pytest.importorskip("gymnasium")
    pick = next(r for r in lesson.pills if r.key and r.key.startswith("lesson_pred_luck"))
    assert "both chose **down** at s6" in pick.label
    before = _tables(lesson)
    assert "the ice moved it" in before and "gigpo credit" not in before  # predict first
    pick.set_value(pick.options[1]).run()  # "more to the step that reached the goal"
    assert not lesson.exception
    said = " ".join(x.value for x in lesson.warning)
    assert "Not quite: the answer is **the same credit" in said
    shown = _tables(lesson)
    for column in ("realised return", "gigpo credit", "rewardflow credit", "closure Q − V", "true A_t",
                   "group's P̂(x|s,a)", "true P(x|s,a)"):
        assert column in shown, column
    md = _md(lesson)
    assert "A realised return credits the slip" in md and "The closure credits the choice" in md


def test_the_backups_side_by_side_asks_then_reveals_against_the_truth(lesson):
    """Section 10 starts at the anchor where the methods put different actions first (s1 of the
    Sokoban group), asks which one the truth puts first, then shows every method's scores in small
    multiples and one sentence per wrong method."""
    pick = next(r for r in lesson.pills if r.key and r.key.startswith("lesson_pred_sbs"))
    assert "The methods disagree at s1" in pick.label and "hgpo puts **right** first" in pick.label
    assert "Which action does the exact truth put first?" in pick.label
    codes = _codes(lesson)
    for start in ("V_rf(", "Q(s", "mean discounted return G", "δ(s1,"):
        assert start in codes, start
    assert "(no path" not in codes  # s1 has a path to success
    assert "graphgpo stands for both" in "\n".join(c.value for c in lesson.caption)
    pick.set_value("right").run()
    assert not lesson.exception
    said = " ".join(x.value for x in lesson.warning)
    assert "Not quite: the answer is **left**" in said
    assert "truth A(s,a)" in _tables(lesson)
    md = _md(lesson)
    assert "**hgpo** puts **right** first where the truth puts **left** first" in md
    assert "Why the others order them differently" in md
    assert "clusters of (s1, right): k = 1: 5 of its 5 steps in clusters of 38 steps" in _codes(lesson)


def test_lesson_shows_the_worked_example_numbers_of_crbc_md(lesson):
    code, shown = _codes(lesson), _tables(lesson)
    # closure (docs/MATH.md section 8, K = infinity)
    assert "Q(s0,a) = 0.98 × (1 × V(s1)) = 0.98 × (1 × 0.4900) = 0.4802" in code
    assert "Q(s0,b) = 0.98 × (0.25 × V(s1) + 0.75 × V(s2)) = 0.98 × (0.25 × 0.4900 + 0.75 × 0.3267) = 0.3601" in code
    assert "V(s0) = Σ_a mu(a|s0) Q(s0,a) = 0.2 × 0.4802 + 0.8 × 0.3601 = 0.3842" in code
    assert "A(s0,a) = Q - V = 0.4802 - 0.3842 = +0.0960" in code
    # K = 0: section 7 runs on one group, the worked example with retries (its backups move)
    assert "Q^(0)(s0,a) = realised return 0.9224" in code
    assert "(0.0000 + 0.0000 + 0.0000 + 0.9604) / 4 = 0.2401" in code
    for number in ("0.4900", "0.3267", "0.3842", "+0.0960"):
        assert number in shown, number
    assert "A(s0, a) = +0.5762 at K = 0 and +0.0960 from K = 1 on" in _md(lesson)
    # section 7's bound beside its error: why it looks flat, with the numbers (retry loop: 64x at K = 1)
    assert "from 64× the error at K = 1 to 2692× at K = 6, which on a log axis looks flat" in _md(lesson)
    assert "not visited: none of the first G rollouts took this action here" in "\n".join(c.value for c in lesson.caption)
    # the dense system's solution column
    sys_table = next(t.value for t in tables(lesson) if "b" in t.value.columns and "V" in t.value.columns)
    assert sys_table["V"].tolist() == ["0.3842", "0.4900", "0.3267"]
    # GRPO: (s0, b) credited both ways
    assert "-0.730, -0.730, -0.730, +1.095" in _md(lesson)


def test_flipping_an_outcome_changes_every_table(lesson):
    before = _tables(lesson)
    lesson.selectbox(key="lesson_flip_r").set_value("rollout 1 (failure)")  # the second rollout of the worked example
    lesson.button(key="lesson_flip").click().run()
    assert not lesson.exception
    assert "rollout 1: outcome flipped to success" in "\n".join(c.value for c in lesson.caption)
    sys_table = next(t.value for t in tables(lesson) if "b" in t.value.columns and "V" in t.value.columns)
    # s1 now always succeeds: V(s1) = beta
    assert sys_table["V"].tolist()[1] == "0.9800"
    assert _tables(lesson) != before
    lesson.button(key="lesson_reset").click().run()
    sys_table = next(t.value for t in tables(lesson) if "b" in t.value.columns and "V" in t.value.columns)
    assert sys_table["V"].tolist() == ["0.3842", "0.4900", "0.3267"]


def _edit(lesson, rollout: str, t: int, field: str, value: str) -> None:
    """Fill the Lesson's edit form (``field``: "anchor" or "action") and apply it (the form's fold
    opened first, as a reader does)."""
    if "lesson_edit_open" not in lesson.session_state or not lesson.session_state["lesson_edit_open"]:
        lesson.session_state["lesson_edit_open"] = True
        lesson.run()
    lesson.selectbox(key="lesson_edit_r").set_value(rollout)
    lesson.number_input(key="lesson_edit_t").set_value(t)
    lesson.text_input(key=f"lesson_edit_{field}").input(value)
    lesson.button(key="lesson_edit").click().run()
    assert not lesson.exception


def test_editing_a_step(lesson):
    _edit(lesson, "rollout 0 (success)", 0, "action", "b")  # its first step: step 0, as the files number it
    assert "rollout 0, step 0: action b" in "\n".join(c.value for c in lesson.caption)
    # only b is observed at s0 now: the gate closes there
    assert "only 1 action observed: gate closed" in _codes(lesson)
    # every step table follows: rollout 0 now starts with s0 -b-> s1
    assert "s0 -b-> s1 -c-> z+" in _tables(lesson)


def test_a_long_new_anchor_is_refused_rather_than_renaming_every_anchor(lesson):
    _edit(lesson, "rollout 0 (success)", 1, "anchor", "a room with a very long description")
    assert any("would rename every anchor" in e.value for e in lesson.error)
    assert "s0 -a-> s1 -c-> z+" in _tables(lesson)  # the group and its names unchanged


def test_lesson_on_the_rare_route_sample(lesson):
    lesson.radio(key="lesson_start").set_value("rare route").run()
    assert not lesson.exception
    foil = next(r for r in lesson.pills if r.key and r.key.startswith("lesson_pred_foil"))
    foil.set_value("s1").run()  # predict first: the reveal follows the answer
    md = _md(lesson)
    assert any("Right:" in s.value for s in lesson.success)
    why = " ".join(s.value for s in lesson.success)
    assert "3 of the 4 rollouts through s1 succeeded and 1 of 4 through s2" in why
    assert "V = 0.7277 against 0.2450" in why
    assert "the closure prefers **up** while shortest path gives every action there the same credit" in md
    # RewardFlow's maximum: the rare route lifts s2 as high as the reliable s1
    assert "RewardFlow gives **s1** and **s2** the same value, V = 8.91" in md
    assert "3 of the 4 rollouts through s1 succeeded, and only 1 of 4 through s2" in md
    assert "V = 0.7277 against 0.245" in md


def test_lesson_edits_do_not_touch_the_shared_source(lesson):
    lesson.button(key="lesson_flip").click().run()
    assert lesson.session_state["sample"] == "worked-example.jsonl"
    lesson.switch_page("pages/inspector.py")
    lesson.run()
    # the inspector reads the shared (unedited) group
    assert "Q(s0,a) = 0.98 × (1 × V(s1)) = 0.98 × (1 × 0.4900) = 0.4802" in _codes(lesson)


# ---- inspector --------------------------------------------------------------------------------


def test_inspector_arithmetic_at_the_closure_and_at_depth(app):
    at = app("pages/inspector.py", sample="worked-example.jsonl")
    assert at.subheader[0].value == "Anchor s0 · K = ∞ (closure)"
    code = _codes(at)
    assert "A_S(s0,a) = +0.9604" in code and "gate open" in code
    actions = tables(at)[1].value  # [0]: how sure each action's credit is (the intervals)
    assert actions["Q(s,a)"].tolist() == ["0.4802", "0.3601"]
    succ = tables(at)[2].value
    assert succ[["action", "successor", "P(x|s,a)", "V(x)"]].values.tolist() == [
        ["a", "s1", "1.0000", "0.4900"], ["b", "s1", "0.2500", "0.4900"], ["b", "s2", "0.7500", "0.3267"]]
    at.select_slider(key="inspect_K").set_value("0").run()
    assert at.subheader[0].value == "Anchor s0 · K = 0"
    assert tables(at)[1].value["Q(s,a)"].tolist() == ["0.9604", "0.2401"]
    assert tables(at)[1].value["A(s,a)"].tolist() == ["+0.5762", "-0.1441"]
    at.select_slider(key="inspect_K").set_value("1").run()
    assert "V^(0)(s1)" in _codes(at)
    at.selectbox(key="inspect").set_value("s2").run()
    assert at.subheader[0].value == "Anchor s2 · K = 1"
    # depth table: one row per K and the closure
    depth_rows = tables(at)[-1].value
    assert depth_rows["K"].tolist()[-1] == "∞" and list(depth_rows.columns) == ["K", "A(s2,e)", "A(s2,g)"]


def test_inspector_lists_anchors_by_disagreement(app):
    at = app("pages/inspector.py", sample="rare-route.jsonl")
    at.segmented_control(key="inspect_sort").set_value("disagreement").run()
    assert not at.exception
    sel = at.selectbox(key="inspect")
    assert sel.options[0] == "s0"
    assert "s0: mean |Δ A_S| 1.000 (8 visits)" in "\n".join(c.value for c in at.caption)
    at.selectbox(key="inspect_cmp").set_value("K = 0 vs closure").run()
    assert not at.exception


def test_inspector_takes_an_anchor_from_another_page(app):
    at = app("pages/inspector.py", sample="worked-example.jsonl")
    at.session_state["inspect_anchor"] = {"group": "worked-example", "anchor": "s2"}
    at.run()
    assert at.subheader[0].value.startswith("Anchor s2")
    assert "inspect_anchor" not in at.session_state


# ---- disagreements -------------------------------------------------------------------------------


def _follow(app, link, sample: str = "worked-example.jsonl") -> AppTest:
    """Open a page link the way a browser does: its page with its query string added to the
    current URL (which carries the sidebar's sample)."""
    at = app(run=False)
    at.query_params["sample"] = sample
    for k, v in parse_qsl(link.proto.query_string):
        at.query_params[k] = v
    at.switch_page(f"pages/{link.proto.page}.py")
    at.run()
    assert not at.exception, at.exception
    return at


def test_disagreements_rank_and_inspect_in_one_click(app):
    at = app("pages/disagreements.py", sample="rare-route.jsonl")
    md = _md(at)
    assert "**crbc** against **shortest_path** on group rare-route." in md
    # first ranked anchor: the fork s0, where crbc prefers up and shortest path sees a tie
    rows = grid_rows(at.main)
    assert rows[0][:2] == ["anchor", "visits"]  # the header row, then the ranked anchors
    assert rows[1][0] == "s0" and rows[1][-1].endswith("(tie) ⚠"), rows[1]
    links = [x for x in at.get("page_link") if x.value == "Inspect"]
    assert len(links) >= 4
    assert dict(parse_qsl(links[0].proto.query_string)) == {
        "source": "sample", "sample": "rare-route.jsonl", "beta": "0.98", "depth": "inf", "sigma_min": "0.1",
        "inspect": "s0", "inspect_sort": "disagreement", "inspect_cmp": "crbc vs shortest_path"}
    ins = _follow(app, links[0], "rare-route.jsonl")
    assert ins.title[0].value == "Anchor inspector"
    assert ins.subheader[0].value == "Anchor s0 · K = ∞ (closure)"
    assert ins.segmented_control(key="inspect_sort").value == "disagreement"
    assert "Q(s0,up) = 0.98 × (1 × V(s1)) = 0.98 × (1 × 0.7277) = 0.7132" in _codes(ins)
    # the second ranked anchor's link opens that anchor
    assert _follow(app, links[1], "rare-route.jsonl").subheader[0].value.startswith("Anchor s1")


def test_disagreements_other_comparisons_and_steps(app):
    at = app("pages/disagreements.py", sample="worked-example.jsonl")
    for name in ("crbc vs gigpo", "K = 0 vs closure"):
        at.selectbox(key="dis_cmp").set_value(name).run()
        assert not at.exception
    assert "**visit_local** against **crbc**" in _md(at)
    links = [x for x in at.get("page_link") if x.value == "Inspect"]
    assert len(links) == 3 + 6  # 3 anchors, then the 10 steps grouped into 6 (anchor, action) rows
    step_link = dict(parse_qsl(links[3].proto.query_string))
    assert step_link["inspect_cmp"] == "K = 0 vs closure" and step_link["inspect"] == "s0"
    ins = _follow(app, links[3])
    assert ins.subheader[0].value.startswith("Anchor s0")
    assert ins.selectbox(key="inspect_cmp").value == "K = 0 vs closure"


def test_an_out_of_range_step_is_refused_with_a_message_not_clamped(lesson):
    # rollout 0 of the worked example has steps 0 and 1: step 9 must not edit step 1
    _edit(lesson, "rollout 0 (success)", 9, "action", "zzz")
    assert any("rollout 0 has steps 0 to 1 (numbered from 0); there is no step 9" in e.value
               for e in lesson.error)
    assert "s0 -a-> s1 -c-> z+" in _tables(lesson)  # the group unchanged
    assert "zzz" not in _tables(lesson)
    assert "none — this is the original group." in "\n".join(c.value for c in lesson.caption)


def test_the_lesson_state_round_trips_through_the_url(app, lesson):
    """Edits, K and answers go into the URL (``ls``); a fresh session opening it gets them back."""
    lesson.selectbox(key="lesson_flip_r").set_value("rollout 1 (failure)")
    lesson.button(key="lesson_flip").click().run()
    _edit(lesson, "rollout 0 (success)", 1, "action", "zz")
    lesson.slider(key="lesson_K").set_value(3).run()
    foil = next(r for r in lesson.pills if r.key and r.key.startswith("lesson_pred_foil"))
    foil.set_value(foil.options[1]).run()
    assert not lesson.exception
    shared = lesson.query_params.get("ls")
    shared = shared[0] if isinstance(shared, list) else shared
    assert shared, "the state is in the URL"
    assert not [c for c in lesson.code if "ls=" in c.value]  # the link box is folded until opened
    lesson.session_state["lesson_share_open"] = True
    lesson.run()
    link = next(c.value for c in lesson.code if "ls=" in c.value)
    assert shared in link and "lesson_start=worked+example" in link
    assert "lesson_part=all" in link  # the link opens the part it was made on
    fresh = app("pages/lesson.py", sample="worked-example.jsonl", ls=shared, lesson_part="all")
    assert not fresh.exception
    caps = "\n".join(c.value for c in fresh.caption)
    assert "rollout 1: outcome flipped to success" in caps and "rollout 0, step 1: action zz" in caps
    assert fresh.slider(key="lesson_K").value == 3
    again = next(r for r in fresh.pills if r.key and r.key.startswith("lesson_pred_foil"))
    assert again.value == foil.options[1]
    assert _tables(fresh) == _tables(lesson)
    # opened on the first part (no K slider, no foil question drawn), the link keeps them: the
    # state written back to the address still holds K and the answer
    first = app("pages/lesson.py", sample="worked-example.jsonl", ls=shared)
    assert not first.exception and not [s for s in first.slider if s.key == "lesson_K"]
    kept = first.query_params.get("ls")
    assert (kept[0] if isinstance(kept, list) else kept) == shared


def test_a_broken_shared_link_is_said_and_ignored(app):
    at = app("pages/lesson.py", sample="worked-example.jsonl", ls="not-a-lesson")
    assert not at.exception
    assert any("Ignored URL parameter" in w.value and "ls=" in w.value for w in at.warning)
    assert "none — this is the original group." in "\n".join(c.value for c in at.caption)


def test_the_handout_download_is_offered(lesson):
    # the handout's contents are tested in tests/core/test_lesson_teaching.py; its box is folded
    assert not any(b.label == "Handout with answer key" for b in lesson.get("download_button"))
    lesson.session_state["lesson_share_open"] = True
    lesson.run()
    assert any(b.label == "Handout with answer key" for b in lesson.get("download_button"))
