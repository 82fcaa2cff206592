"""Every URL the studio writes, it reads back: a walk over every widget bound to the URL.

On each page, with a recorded run open in the sidebar (a run folder, an iteration, a group and an
anchor key), each widget whose proto carries a ``query_param_key`` is set to another value; the
address the browser would then show is built from every bound widget the way Streamlit's frontend
writes it (the option's label for a choice, the number, the text, ``true``/``false``); a fresh
session opened on that address must show the same value in every bound widget and no "Ignored URL
parameter" notice. The shared estimator parameters are not bound: the studio keeps them in the
address itself (ui/core/params.py), so their part of the address is what the session wrote, read
with the Parameters fold open. The browser twin of one such road is tests/browser/test_run_source.py.
"""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from devtools.textworld import alfworld_like_run  # noqa: E402
from ui.core import params, state  # noqa: E402

pytestmark = pytest.mark.slow
KINDS = ("selectbox", "radio", "slider", "number_input", "checkbox", "toggle", "text_input", "segmented_control")
PAGES = [("pages/rollouts.py", {}), ("pages/credits.py", {}), ("pages/disagreements.py", {}),
         ("pages/graph.py", {}), ("pages/backups.py", {}), ("pages/inspector.py", {}),
         ("pages/runs.py", {}), ("pages/runs.py", {"runs_kind": "Runs of crbc train"})]
SHARED = set(params.specs())  # kept in the address by the studio, drawn in the Parameters fold
SKIP = {"source"}  # another source is another view by design (tests/app/test_app_own_runs_and_intervals.py)


def _bound(at: AppTest) -> dict:
    """key -> widget, for every widget bound to the URL on the page and in the sidebar."""
    out = {}
    for tree in (at.main, at.sidebar):
        for kind in KINDS:
            for w in tree.get(kind):
                if (getattr(w.proto, "query_param_key", "") or w.key in SHARED) and w.key:
                    out[w.key] = w
    return out


def _url_value(w) -> str | list[str] | None:
    """What the frontend writes for the widget's current value."""
    t = type(w).__name__
    if t in ("Selectbox", "Radio"):
        return None if w.index is None else w.proto.options[w.index]
    if t == "ButtonGroup":
        return [w.proto.options[i].content for i in w.indices] if w.indices else None
    if t in ("Checkbox", "Toggle"):
        return "true" if w.value else "false"
    if t == "TextInput":
        return w.value or None
    v = w.value
    return None if v is None else (str(int(v)) if float(v).is_integer() and isinstance(v, int) else str(v))


def _other(w):
    """Another value of the widget, or None when it has none."""
    t = type(w).__name__
    if t in ("Selectbox", "Radio"):
        opts = w.options
        if len(opts) < 2:
            return None
        return w.options[((w.index or 0) + 1) % len(opts)]
    if t == "ButtonGroup":
        return None if len(w.options) < 2 else w.options[(w.indices[0] + 1) % len(w.options) if w.indices else 0]
    if t in ("Checkbox", "Toggle"):
        return not w.value
    if t == "TextInput":
        return r"(?s).*" if w.key == "anchor_key" else None
    lo, hi, step = w.min, w.max, w.step
    v = w.value
    if isinstance(v, tuple):
        return None
    nxt = v + step
    return nxt if hi is None or nxt <= hi else (lo if lo is not None and lo != v else None)


def _choose(w, label) -> None:
    """Set the widget as a click does. For a choice, ``label`` is the option as shown (the
    frontend sends the shown text, and the app maps it back through its own format_func): the
    widget's format_func is bypassed here so the label is sent as it is."""
    if type(w).__name__ in ("Selectbox", "Radio", "ButtonGroup"):
        w.__class__ = type("Shown" + type(w).__name__, (type(w),),
                           {"format_func": property(lambda self: (lambda v: v))})
    w.set_value(label).run()


def _notices(at: AppTest) -> list[str]:
    return [w.value for w in at.warning if "Ignored URL parameter" in str(w.value)]


def _open(app, query: dict, page: str) -> AppTest:
    at = app(run=False)
    at.query_params.update(query)
    at.run()
    at.switch_page(page).run()
    at.session_state[params.FOLD_KEY] = True  # the Parameters fold, opened
    return at.run()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("walk")
    alfworld_like_run(root / "runs" / "alf", iterations=2, groups=3, n_rollouts=4)
    return root


@pytest.mark.parametrize(("page", "extra"), PAGES)
def test_every_bound_widget_reads_back_from_the_url_it_writes(app, page, extra, run_dir, monkeypatch):
    monkeypatch.setattr(state, "SAMPLES_DIR", run_dir)
    start = {"source": "run", "run": str((run_dir / "runs" / "alf").resolve()), "run_iter": "1",
             "anchor_key": r"(?s)(.*)", **extra}
    at = _open(app, start, page)
    assert not at.exception, [e.message for e in at.exception]
    keys = [k for k in _bound(at) if k not in SKIP]
    if page != "pages/runs.py":  # AppTest shows no sidebar on Training runs (it ends in st.stop)
        # the run picker is not bound (run= keeps the path while the picker shows names; its
        # round trip: tests/app/test_run_picker_names.py)
        assert {"run_iter", "anchor_key", "group", "rollout", "estimator", "beta"} <= set(keys)
    walked = 0
    for key in keys:
        w = _bound(at).get(key)
        if w is None or (new := _other(w)) is None or getattr(w, "disabled", False):
            continue
        _choose(w, new)
        assert not at.exception, (key, [e.message for e in at.exception])
        walked += 1
        bound = _bound(at)
        query = {**start, **{k: v for k, w2 in bound.items()
                             if k not in SHARED and (v := _url_value(w2)) is not None},
                 **{k: at.query_params[k] for k in SHARED if k in at.query_params}}
        again = _open(app, query, page)
        assert not again.exception, (key, query)
        assert not _notices(again), (key, query, _notices(again))
        back = _bound(again)
        for k, w2 in bound.items():
            assert k in back, (key, k)
            assert _url_value(back[k]) == _url_value(w2), (key, k, query)
    assert walked >= (1 if page == "pages/runs.py" else 6), walked
