"""The report's HTML page: one self-contained file (style, drawings and its own small script
inline; nothing fetched from any host).

The page carries a Content-Security-Policy that allows no request at all (``default-src
'none'``) and only its own script (by its SHA-256 hash), so even a user string that slipped
through escaping could neither run script nor load anything. The script and style are static
assets of this package (``report.js``, ``report.css``).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from crbc.viz.core.text import esc

__all__ = ["asset", "csp", "json_for_script", "page", "render", "SCHEMA", "script_hash", "Section"]

SCHEMA = "crbc.report/1"  #: written into the page's <meta name="generator">


def asset(name: str) -> str:
    """The text of a static asset of this package (``report.js``, ``report.css``)."""
    return resources.files("crbc.report").joinpath(name).read_text(encoding="utf-8")


def script_hash(js: str) -> str:
    """The CSP source of an inline script: ``'sha256-<base64 of SHA-256 of its exact text>'``."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode() + "'"


def csp(js: str) -> str:
    """No request of any kind; inline style; the one inline script named by its hash."""
    return (f"default-src 'none'; script-src {script_hash(js)}; style-src 'unsafe-inline'; "
            "img-src data:; font-src 'none'; connect-src 'none'; form-action 'none'; base-uri 'none'")


@dataclass(frozen=True)
class Section:
    """One part of the page: ``anchor`` (its id, for links), ``title`` (plain text, escaped
    here) and ``body`` (HTML whose user strings are already escaped)."""

    anchor: str
    title: str
    body: str
    level: int = 2
    css_class: str = ""


def json_for_script(obj) -> str:
    """JSON for a ``<script type="application/json">`` element: ``<``, ``>`` and ``&`` as
    ``\\u`` escapes, so no text inside can close the element."""
    import json

    text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(s: Section) -> str:
    """One section as ``<section id=..><hN>title</hN>body</section>``."""
    cls = f' class="{esc(s.css_class)}"' if s.css_class else ""
    return f'<section id="{esc(s.anchor)}"{cls}><h{s.level}>{esc(s.title)}</h{s.level}>{s.body}</section>'


def page(title: str, sections: Sequence[Section], *, subtitle: str = "", toc: bool = True) -> str:
    """The whole file: ``title`` (plain text), an optional ``subtitle`` line (HTML, escaped by the
    caller), a table of contents linking every level-2 section, the sections in order, the
    style and the script. The result starts with ``<!DOCTYPE html>`` and references no URL; it
    carries no date, so the same input gives the same bytes."""
    js, css = asset("report.js"), asset("report.css")
    links = " ".join(f'<a href="#{esc(s.anchor)}">{esc(s.title)}</a>' for s in sections if s.level == 2)
    body = [render(s) for s in sections]
    return ("<!DOCTYPE html>\n"
            f'<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{esc(csp(js))}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="generator" content="{SCHEMA}">'
            f"<title>{esc(title)}</title><style>{css}</style></head><body><main>"
            f"<h1>{esc(title)}</h1>"
            + (f'<p class="note">{subtitle}</p>' if subtitle else "")
            + (f'<nav class="toc">{links}</nav>' if toc and links else "")
            + "".join(body)
            + f'<p class="note">Made by crbc report ({SCHEMA}). A self-contained file: it '
            "loads nothing from any host and needs no server.</p>"
            f"</main><script>{js}</script></body></html>\n")
