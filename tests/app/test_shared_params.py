"""The shared estimator parameters (ui/core/params.py): folded, their value and address kept by the
studio, not by Streamlit's binding of a drawn widget."""

from __future__ import annotations

SAMPLE = "worked-example.jsonl"


def _main_text(at) -> str:
    return "\n".join(str(m.value) for m in at.main.markdown) + "\n".join(str(c.value) for c in at.main.caption)


def _open(at):
    at.session_state["params_open"] = True
    return at.run()


def test_a_link_value_reaches_the_page_while_the_fold_is_closed(app):
    at = app("pages/graph.py", sample=SAMPLE, beta="0.9")
    assert not at.exception
    assert "beta" not in {s.key for s in at.slider}  # folded: the widget is not drawn
    assert "β = 0.9" in _main_text(at)  # the page computed at the link's beta
    assert at.query_params["beta"] == "0.9"  # and the address keeps it
    assert any("Changed:" in c.value and "0.9" in c.value for c in at.sidebar.caption)


def test_a_rerun_and_a_page_change_keep_the_value_in_the_address(app):
    at = app("pages/graph.py", sample=SAMPLE, beta="0.9")
    at.selectbox(key="rollout").set_value(1).run()  # a rerun that draws no parameter widget
    assert at.query_params["beta"] == "0.9"
    at.switch_page("pages/backups.py").run()
    assert not at.exception
    assert at.query_params["beta"] == "0.9"


def test_the_open_fold_starts_from_the_link_and_writes_changes(app):
    at = app("pages/graph.py", sample=SAMPLE, beta="0.9", depth="3")
    _open(at)
    assert at.slider(key="beta").value == 0.9 and at.selectbox(key="depth").value == "3"
    at.slider(key="beta").set_value(0.95).run()
    assert at.query_params["beta"] == "0.95" and "β = 0.95" in _main_text(at)
    at.slider(key="beta").set_value(0.98).run()  # the default: it leaves the address
    assert "beta" not in at.query_params and at.query_params["depth"] == "3"
    at.session_state["params_open"] = False  # folded again: the value stays
    at.run()
    assert at.query_params["depth"] == "3" and "depth K = 3" in _main_text(at)


def test_a_new_address_value_replaces_an_open_widgets_value(app):
    at = app("pages/graph.py", sample=SAMPLE)
    _open(at)
    at.slider(key="beta").set_value(0.95).run()
    at.query_params["beta"] = "0.9"  # the browser's Back to an older address
    at.run()
    assert at.slider(key="beta").value == 0.9 and "β = 0.9" in _main_text(at)


def test_a_value_no_widget_can_take_gets_a_notice_and_the_default(app):
    at = app("pages/graph.py", sample=SAMPLE, beta="2.5")
    assert not at.exception
    assert any("beta=2.5" in w.value for w in at.warning)
    assert "beta" not in at.query_params and "β = 0.98" in _main_text(at)


def test_step_credits_opens_the_fold_until_the_reader_closes_it(app):
    at = app("pages/graph.py", sample=SAMPLE)
    assert "beta" not in {s.key for s in at.slider}  # closed elsewhere
    at.switch_page("pages/credits.py").run()
    assert "beta" in {s.key for s in at.slider}  # open on Step credits, coming from another page
    at.session_state["_crbc_params_fold_touched"] = True  # the reader closes it (its callback)
    at.session_state["params_open"] = False
    at.run()
    at.switch_page("pages/graph.py").run()
    at.switch_page("pages/credits.py").run()
    assert "beta" not in {s.key for s in at.slider}  # closed by the reader: it stays closed
