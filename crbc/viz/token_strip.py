"""A step's response as a strip of tokens coloured by the advantage the trainer put on each one.

:func:`token_strip_html` draws one cell per response token l = 0 .. L-1, in reading order,
wrapped into lines: the cell's colour is ``A[l]`` on the diverging credit scale
(:func:`crbc.viz.core.style.signed_color`: point ``0.5 + 0.5 * clip(A[l] / zmax, -1, 1)`` of
RdBu, blue positive, red negative, white 0; ``zmax`` default: the largest |A| over the trained
tokens); a token outside the loss mask (``mask[l]`` False) is hatched grey whatever its value,
and the legend says "masked: not trained". Hovering a cell shows its position, its text and its
value (the ``title``); a token text of at most :data:`INSIDE_CHARS` characters is also written
inside its cell (spaces as ``·``, line breaks as ``↵``). At most ``max_tokens`` cells are drawn
("the first N of M tokens"). A summary line (:func:`strip_summary`) gives the tokens, the masked
ones, the range of A over the trained tokens and whether they all carry one value (one
advantage per response: GRPO, GiGPO, crbc broadcast over the mask) or vary (per-token: GAE).

Plain HTML with inline style and no script: it is shown as it is by ``st.html`` in the studio and
inside the report's file (no request to any host).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from crbc.viz.core.style import signed_color
from crbc.viz.core.text import esc

__all__ = ["INSIDE_CHARS", "MAX_SHOWN", "MASKED_FILL", "strip_summary", "StripSummary", "token_strip_html"]

MAX_SHOWN = 512  #: cells drawn at most; the rest is counted in the summary
INSIDE_CHARS = 4  #: a token text this short is written inside its cell
TITLE_CHARS = 80  #: characters of a token's text in its hover title
MASKED_FILL = "repeating-linear-gradient(135deg,#eceef0 0 3px,#c3c7cb 3px 5px)"  #: hatched grey
_RELATIVE_TOL = 1e-6  #: trained values within this (relative to max(1, |A|)) count as one value

_STYLE = ("<style>.crbc-tokens{font:13px 'Source Sans',sans-serif;color:#31333f;margin:0 0 .8rem}"
          ".crbc-tokens .crbc-tk-lines{display:flex;flex-wrap:wrap;gap:1px;max-width:100%}"
          ".crbc-tk{display:inline-block;box-sizing:border-box;width:30px;height:18px;line-height:18px;"
          "font:10px monospace;text-align:center;white-space:pre;overflow:hidden;border-radius:2px;"
          "border:1px solid rgba(0,0,0,.08)}"
          ".crbc-tk-legend{display:flex;flex-wrap:wrap;gap:12px;align-items:center;font-size:12px;"
          "color:#555;margin:.3rem 0}.crbc-tk-legend .crbc-tk{margin-right:4px;vertical-align:middle}</style>")


@dataclass(frozen=True)
class StripSummary:
    """What the strip's summary line says. n: tokens stored (L); length: the response's tokens
    (M >= L); masked: stored tokens outside the mask; trained: inside it; lo, hi: min and max of
    A over the trained tokens with a finite value (NaN when none); constant: all of them carry
    one value (None with fewer than two); nonfinite: stored tokens whose A is NaN or infinite."""

    n: int
    length: int
    masked: int
    trained: int
    lo: float
    hi: float
    constant: bool | None
    nonfinite: int

    def line(self, shown: int | None = None) -> str:
        """The summary as one sentence of plain text (``shown``: cells drawn, when fewer than n)."""
        head = f"{self.length:,} response tokens"
        if self.n < self.length:
            head += f" ({self.n:,} stored)"
        if shown is not None and shown < self.length:
            head += f", the first {shown:,} of {self.length:,} shown"
        parts = [head, f"{self.masked:,} masked (not trained), {self.trained:,} trained"]
        if np.isfinite(self.lo):
            parts.append(f"A on trained tokens {self.lo:+.4g} … {self.hi:+.4g}" if self.lo != self.hi
                         else f"A on trained tokens {self.lo:+.4g}")
        if self.constant is True:
            parts.append("every trained token carries the same value (one advantage per response: GRPO-style)")
        elif self.constant is False:
            parts.append("the value varies from token to token (per-token advantages: GAE-style)")
        if self.nonfinite:
            parts.append(f"{self.nonfinite:,} non-finite value(s)")
        return "; ".join(parts) + "."


def _arrays(advantage: Sequence[float], mask: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(advantage, dtype=np.float64)
    m = np.asarray(mask)
    if a.ndim != 1 or m.shape != a.shape:
        raise ValueError(f"advantage {a.shape} and mask {m.shape} must both be (L,), one entry per token")
    return a, m.astype(bool)


def strip_summary(advantage: Sequence[float], mask: Sequence[bool], length: int | None = None) -> StripSummary:
    """The :class:`StripSummary` of one step: ``advantage`` (L,), ``mask`` (L,); ``length`` M
    (default L). constant: ``max - min <= 1e-6 * max(1, |min|, |max|)`` over the trained finite values."""
    a, m = _arrays(advantage, mask)
    ok = np.isfinite(a)
    v = a[m & ok]
    lo, hi = (float(v.min()), float(v.max())) if len(v) else (float("nan"), float("nan"))
    const = None if len(v) < 2 else bool(hi - lo <= _RELATIVE_TOL * max(1.0, abs(lo), abs(hi)))
    n = len(a)
    return StripSummary(n, max(int(length if length is not None else n), n), int((~m).sum()), int(m.sum()),
                        lo, hi, const, int((~ok).sum()))


def _shown_text(token: str) -> str:
    """A token's text as drawn: spaces as ``·``, line breaks as ``↵``, tabs as ``→``."""
    return token.replace(" ", "·").replace("\n", "↵").replace("\r", "").replace("\t", "→")


def _cell(i: int, a: float, trained: bool, color: str, zmax: float, token: str | None) -> str:
    """One token's ``<span>``: background colour (or the hatch), title, short text inside."""
    shown = _shown_text(token) if token is not None else ""
    val = f"{a:+.4f}" if np.isfinite(a) else "non-finite"
    what = f" {shown[:TITLE_CHARS]!r}" if token is not None else ""
    title = f"token {i}{what}: A = {val}" + ("" if trained else " · masked: not trained (the loss never reads it)")
    inner = esc(shown) if token is not None and 0 < len(shown) <= INSIDE_CHARS else ""
    if not trained:
        return (f'<span class="crbc-tk" data-masked="1" style="background:{MASKED_FILL};color:#5d6166" '
                f'title="{esc(title)}">{inner}</span>')
    dark = np.isfinite(a) and abs(a) / zmax > 0.6
    fill = color if np.isfinite(a) else "#d5d8dc"
    return (f'<span class="crbc-tk" data-a="{a:.6g}" style="background:{fill};color:{"#fff" if dark else "#31333f"}" '
            f'title="{esc(title)}">{inner}</span>')


def _legend(zmax: float) -> str:
    """The scale's swatches (−zmax, −zmax/2, 0, +zmax/2, +zmax) and the masked hatch."""
    stops = [-zmax, -zmax / 2, 0.0, zmax / 2, zmax]
    sw = "".join(f'<span><span class="crbc-tk" style="background:{c}"></span>{v:+.3g}</span>' if v else
                 f'<span><span class="crbc-tk" style="background:{c}"></span>0</span>'
                 for v, c in zip(stops, signed_color(np.array(stops), zmax), strict=True))
    return (f'<div class="crbc-tk-legend">A on the token: {sw}'
            f'<span><span class="crbc-tk" style="background:{MASKED_FILL}"></span>masked: not trained</span></div>')


def token_strip_html(advantage: Sequence[float], mask: Sequence[bool], tokens: Sequence[str] | None = None, *,
                     length: int | None = None, max_tokens: int = MAX_SHOWN, zmax: float | None = None,
                     caption: str = "") -> str:
    """The strip of one step (module docstring). ``advantage``: (L,) the trainer's advantage on
    each stored response token; ``mask``: (L,) True where the token is trained; ``tokens``: L
    texts (or None: cells without text); ``length``: M, the response's tokens when only the first
    L were stored; ``max_tokens``: cells drawn at most; ``zmax``: the colour scale's end
    (default: the largest finite |A| over the trained tokens, 1 when there is none);
    ``caption``: a line of plain text above the strip (escaped here)."""
    a, m = _arrays(advantage, mask)
    if tokens is not None and len(tokens) != len(a):
        raise ValueError(f"{len(tokens)} token texts for {len(a)} advantages (one per token)")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    s = strip_summary(a, m, length)
    trained = a[m & np.isfinite(a)]
    z = float(zmax) if zmax else (float(np.abs(trained).max()) if len(trained) else 0.0) or 1.0
    shown = min(len(a), max_tokens)
    colors = signed_color(a[:shown], z) if shown else []
    cells = "".join(_cell(i, float(a[i]), bool(m[i]), colors[i], z, None if tokens is None else str(tokens[i]))
                    for i in range(shown))
    head = f'<div class="crbc-tk-caption"><b>{esc(caption)}</b></div>' if caption else ""
    body = (f'<div class="crbc-tk-lines">{cells}</div>' if shown
            else '<div class="crbc-tk-empty">(the response has no token)</div>')
    return (f'{_STYLE}<div class="crbc-tokens">{head}<div class="crbc-tk-summary">{esc(s.line(shown))}</div>'
            f'{_legend(z)}{body}</div>')
