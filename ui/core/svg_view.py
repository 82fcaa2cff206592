"""Server-built SVG on a page, optionally clickable, with no charting library.

``st.html`` sanitises its input with the HTML profile, which removes ``<svg>`` entirely, so the
SVG drawings of :mod:`crbc.viz` are shown by a tiny ``st.components.v2`` component
instead: its script puts the SVG into the page and, when the reader clicks an element that
carries ``data-pick="..."``, sends that value back as the trigger ``picked`` (one rerun, like a
widget's change). The component runs trusted code with the page's rights, so only SVG whose
every user string was escaped on the server (as :mod:`crbc.viz` does) may be passed.
Nothing is fetched: the script and style are inline strings. There is no shadow root
(``isolate_styles=False``): the drawing is part of the page's DOM, in the page's fonts, and
tests query it like any element; the style above is scoped by its class.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import streamlit as st

JS = """
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let box = parentElement.querySelector(".crbc-svg-view");
  if (!box) {
    box = document.createElement("div");
    box.className = "crbc-svg-view";
    parentElement.appendChild(box);
  }
  if (box.dataset.svgId !== data.id) {  // a rerun with the same drawing keeps the DOM as it is
    box.innerHTML = data.svg;
    box.dataset.svgId = data.id;
  }
  let link = parentElement.querySelector(".crbc-svg-download");
  if (data.download && !link) {
    link = document.createElement("a");
    link.className = "crbc-svg-download";
    link.textContent = "Download SVG";
    parentElement.appendChild(link);
  }
  if (link) {  // the drawing as a standalone file, made in the browser (nothing is requested)
    link.download = data.download + ".svg";
    link.onclick = () => {
      const file = data.svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ');
      link.href = URL.createObjectURL(new Blob([file], { type: "image/svg+xml" }));
    };
  }
  box.onclick = (event) => {
    const hit = event.target.closest("[data-pick]");
    if (hit && box.contains(hit)) setTriggerValue("picked", hit.getAttribute("data-pick"));
  };
}
"""

CSS = """
.crbc-svg-view svg { display: block; }
.crbc-svg-view [data-pick] { cursor: pointer; }
.crbc-svg-view [data-pick]:hover circle, .crbc-svg-view [data-pick]:hover rect { stroke-width: 2.5; }
.crbc-svg-download { font-size: 0.75rem; color: #808495; cursor: pointer; text-decoration: underline; }
"""

_component = st.components.v2.component("crbc_svg_view", js=JS, css=CSS, isolate_styles=False)


def svg_view(svg: str, key: str, on_pick: Callable[[str], None] | None = None,
             download: str | None = None) -> None:
    """Show ``svg`` (escaped on the server; see the module docstring). With ``on_pick``, a click
    on an element with ``data-pick`` calls ``on_pick(value)`` before the rerun it causes. With
    ``download`` (a file name without extension), a "Download SVG" link under the drawing saves
    it as a standalone file, built in the browser."""
    sid = hashlib.blake2b(svg.encode(), digest_size=8).hexdigest()

    def _picked() -> None:
        state = st.session_state.get(key)
        value = state.get("picked") if hasattr(state, "get") else getattr(state, "picked", None)
        if on_pick is not None and value is not None:
            on_pick(str(value))

    _component(data={"svg": svg, "id": sid, "download": download}, key=key, on_picked_change=_picked)
