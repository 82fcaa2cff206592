"""The token strip (crbc.viz.token_strip): one cell per response token coloured by its advantage,
masked tokens hatched and named, the summary line, the cap, escaping."""

from __future__ import annotations

import re

import numpy as np
import pytest

from crbc.viz.core.style import signed_color
from crbc.viz.token_strip import MASKED_FILL, strip_summary, token_strip_html


def cells(html: str) -> list[str]:
    return re.findall(r'<span class="crbc-tk"[^>]*title="token [^"]*"[^>]*>[^<]*</span>', html)


def fill(cell: str) -> str:
    return re.search(r"background:([^;\"]+)", cell).group(1)


def test_masked_tokens_are_hatched_and_named():
    a = np.array([0.5, 0.5, 0.5, 0.5, 0.5])
    m = np.array([True, True, False, False, True])
    html = token_strip_html(a, m, ["I", " go", "<obs>", "\n", "up"])
    cs = cells(html)
    assert len(cs) == 5
    assert [('data-masked="1"' in c) for c in cs] == [False, False, True, True, False]
    assert all(fill(c) == MASKED_FILL for c in cs[2:4]) and fill(cs[0]) != MASKED_FILL
    assert "masked: not trained" in html  # the legend
    assert "masked: not trained (the loss never reads it)" in cs[2]  # the hover title
    assert "2 masked (not trained), 3 trained" in html
    assert "&lt;obs&gt;" in html and "<obs>" not in html  # token text escaped
    assert ">↵<" in cs[3] and ">·go<" in cs[1]  # whitespace made visible inside the cell


def test_the_colour_follows_the_value():
    a = np.array([1.0, -1.0, 0.0, 0.25])
    m = np.ones(4, dtype=bool)
    base = cells(token_strip_html(a, m, zmax=1.0))
    assert [fill(c) for c in base] == signed_color(a, 1.0)
    planted = a.copy()
    planted[3] = -0.75
    moved = cells(token_strip_html(planted, m, zmax=1.0))
    assert fill(moved[3]) != fill(base[3]) and fill(moved[3]) == signed_color(np.array([-0.75]), 1.0)[0]
    assert [fill(c) for c in moved[:3]] == [fill(c) for c in base[:3]]  # the other cells unchanged
    assert 'data-a="-0.75"' in moved[3] and "A = -0.7500" in moved[3]


def test_summary_tells_one_value_from_per_token_values():
    m = np.array([True, True, False, True])
    grpo = strip_summary([0.3, 0.3, -9.0, 0.3], m)  # a masked token's value does not count
    assert grpo.constant is True and (grpo.lo, grpo.hi) == (pytest.approx(0.3), pytest.approx(0.3))
    assert "same value" in grpo.line() and "GRPO-style" in grpo.line()
    gae = strip_summary([0.3, 0.1, 0.0, -0.2], m)
    assert gae.constant is False and gae.lo == pytest.approx(-0.2) and gae.hi == pytest.approx(0.3)
    assert "GAE-style" in gae.line()
    assert strip_summary([0.1], [True]).constant is None  # one trained token: nothing to tell
    odd = strip_summary([np.nan, 1.0, 2.0], [True, True, True])
    assert odd.nonfinite == 1 and odd.lo == 1.0 and "non-finite" in odd.line()


def test_long_responses_are_capped_and_say_so():
    a = np.linspace(-1, 1, 300)
    html = token_strip_html(a, np.ones(300, dtype=bool), length=1000, max_tokens=100)
    assert len(cells(html)) == 100
    assert "1,000 response tokens (300 stored), the first 100 of 1,000 shown" in html
    assert "<script" not in html and "http" not in html  # self-contained, nothing fetched


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="must both be"):
        token_strip_html([0.1, 0.2], [True])
    with pytest.raises(ValueError, match="token texts"):
        token_strip_html([0.1, 0.2], [True, True], ["a"])
    assert "has no token" in token_strip_html([], [])
