"""The Lesson as a page a projector and a keyboard can use: its style, and a
link to a section (``/lesson#8-the-shortest-path-foil``) that lands on it.

- Style: captions and small print at 4.5:1 or more on white (WCAG AA: ``#555867`` is 7.4:1,
  Streamlit's own caption, its grey at 0.6 opacity, about 3.9:1), a visible focus ring on every control, table headers
  that wrap between words (never inside one), so that a table's columns fit a projector's width
  rather than hide behind a sideways scroll; button labels wrap rather than end in "..."; radio
  circles 20 px (Streamlit's are 16 px, their hit box 13 px) for a projector and a pointer.
- The sidebar stays open (folding it left a class that landed on the Lesson without a visible
  way to the other pages); at 1100 px or less it is 232 px wide (not 300) and the page's side
  margins 20 px (not 80), which gives the tables 190 px more at 1024 px; a teacher can still fold it.
  Printed, the page leaves out the sidebar and the toolbar.
- A section link: Streamlit scrolls to the header when it is drawn, but figures drawn later above
  it push it down (the link to section 8 landed in section 7), and tidying the query drops the
  ``#...`` from the address. :func:`land_on_hash` reads the hash of the page load and re-scrolls
  to the header until it has stayed in place for 4 s (90 s at most), and stops at the reader's
  first wheel, key, click or touch. A section drawn by another part (:mod:`ui.lesson.parts`)
  asks the server for that part first; a "next part" button lands on the new part's first header.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

CSS = """<style>
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p,
[data-testid="stWidgetLabel"] [data-testid="stCaptionContainer"], .crbc-svg-download { color: #555867 !important; opacity: 1 !important; }
[data-testid="stMain"] button:focus-visible, [data-testid="stMain"] input:focus-visible,
[data-testid="stMain"] [role="radio"]:focus-visible, [data-testid="stMain"] a:focus-visible,
[data-testid="stMain"] label:has(input:focus-visible), [data-testid="stMain"] [tabindex]:focus-visible,
[data-testid="stMain"] summary:focus-visible {
  outline: 3px solid #1f5fbf !important; outline-offset: 2px !important; border-radius: 4px; }
[data-testid="stMain"] button { min-height: 2rem; }
.crbc-table th { white-space: normal !important; word-break: normal !important; overflow-wrap: normal !important;
  hyphens: manual; vertical-align: bottom; }
.crbc-table td { word-break: normal; overflow-wrap: anywhere; }
[data-testid="stMain"] button div, [data-testid="stMain"] button p {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important; }
[data-testid="stMain"] [role="radiogroup"] label > div > div:first-child:not([data-testid]) {
  width: 20px !important; height: 20px !important; }
[data-testid="stMain"] [role="radiogroup"] label > div > div:first-child:not([data-testid]) > div {
  width: 8px !important; height: 8px !important; }
@media print {
  section[data-testid="stSidebar"], header[data-testid="stHeader"], [data-testid="stToolbar"] { display: none !important; }
  [data-testid="stMainBlockContainer"] { padding: 0 1rem !important; max-width: none !important; }
}
@media (max-width: 1100px) {
  section[data-testid="stSidebar"] { width: 232px !important; min-width: 232px !important; }
  [data-testid="stMainBlockContainer"] { padding-left: 1.25rem !important; padding-right: 1.25rem !important; }
  .crbc-table th, .crbc-table td { padding-left: 0.35rem !important; padding-right: 0.35rem !important; }
}
</style>"""

HASH_JS = """
export default function (component) {
  const { data, setTriggerValue } = component;
  if (!component.parentElement.querySelector(".crbc-no-drawing")) {  // mounted (devtools.apprunner.READY)
    const mark = document.createElement("span");
    mark.className = "crbc-no-drawing";
    mark.hidden = true;
    component.parentElement.appendChild(mark);
  }
  // keep the header of section `id` at the top until it has stayed there for 4 s (90 s at most),
  // or until the reader scrolls, types, clicks or touches
  const land = (id) => {
    clearInterval(window.__crbcLandTimer);
    let ticks = 0, still = 0;
    const timer = window.__crbcLandTimer = setInterval(() => {
      ticks += 1;
      const el = document.getElementById(id);
      if (el && Math.abs(el.getBoundingClientRect().top) > 4) { el.scrollIntoView({ block: "start" }); still = 0; }
      else if (el) still += 1;
      if (still >= 16 || ticks > 360) clearInterval(timer);
    }, 250);
    const stop = () => clearInterval(timer);
    for (const ev of ["wheel", "keydown", "touchstart", "mousedown"])
      window.addEventListener(ev, stop, { once: true, passive: true });
  };
  const goto = data && data.goto;  // a "next part" button: the new part's first section
  if (goto && goto.n && window.__crbcGoto !== goto.n) {
    window.__crbcGoto = goto.n;
    land(goto.id);
    return;
  }
  // Streamlit rewrites the address (dropping the #...) when it tidies the query, so the hash is
  // also read from the page load's own URL, while the reader is still on that page
  const nav = (performance.getEntriesByType("navigation")[0] || {}).name || "";
  let first = "";
  try { const u = new URL(nav); if (u.pathname === window.location.pathname) first = u.hash; } catch (e) {}
  const hash = decodeURIComponent((window.location.hash || first || "").slice(1));
  if (!hash || window.__crbcLanded === hash) return;
  window.__crbcLanded = hash;
  const part = data && data.parts ? data.parts[hash] : undefined;
  if (part && data.part !== "all" && part !== data.part) setTriggerValue("part", part);  // drawn by another part
  land(hash);
}
"""

_hash = st.components.v2.component("crbc_land_on_hash", js=HASH_JS, isolate_styles=False)


def style() -> None:
    """The Lesson's page setup: :data:`CSS`."""
    st.html(CSS)


def land_on_hash(part_of_anchor: dict[str, str], part: str, on_part: Callable[[str], None]) -> None:
    """Call once, near the top of the page: a link to a section header lands on it (see above).
    ``part_of_anchor``: each section's header id -> the part that draws it; ``part``: the part
    drawn now; ``on_part(key)``: called (before a rerun) when the link's section is in another
    part. A ``lesson_goto`` of ``(header id, n)`` in the session (a new n each time) scrolls to
    that header once it is drawn."""
    goto = st.session_state.get("lesson_goto")

    def _asked() -> None:
        state = st.session_state.get("lesson_land_on_hash")
        value = state.get("part") if hasattr(state, "get") else getattr(state, "part", None)
        if value in part_of_anchor.values():
            on_part(str(value))

    _hash(data={"parts": part_of_anchor, "part": part,
                "goto": {"id": goto[0], "n": goto[1]} if goto else None},
          key="lesson_land_on_hash", on_part_change=_asked)
