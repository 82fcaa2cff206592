"""The Lesson in five parts: which sections a run draws, the part picker, and the way on.

Twelve sections on one page took a browser 2.4 s to draw (5,500 elements, 63 drawings) and
every edit redrew all of them; a part is a screenful or a few, drawn in about the time of the
studio's lightest page. The part is a widget bound to the address (``?lesson_part=7-8``), so a
link keeps it; ``all`` draws every section on one page (to read straight through or to print).
A link to a section header (``/lesson#8-the-shortest-path-foil``) opens the part that holds it
(:func:`ui.lesson.page.land_on_hash` asks for it with :data:`PART_OF_ANCHOR`).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from ui.core import url


@dataclass(frozen=True)
class Part:
    """One part: its key in the address, its title, and its sections (numbers, in order)."""

    key: str
    title: str
    sections: tuple[int, ...]


PARTS: tuple[Part, ...] = (
    Part("1-2", "The group and GRPO", (1, 2)),
    Part("3-6", "The closure, step by step", (3, 4, 5, 6)),
    Part("7-8", "Finite depth and the foil", (7, 8)),
    Part("9-10", "Which estimate is right?", (9, 10)),
    Part("11-12", "Luck, and a wrong pipeline", (11, 12)),
)
ALL = "all"
KEY = "lesson_part"
BY_KEY = {p.key: p for p in PARTS}

#: each section's header anchor (the ``#...`` of a link to it); the headers use these ids
ANCHORS: dict[int, str] = {
    1: "1-the-group", 2: "2-grpo", 3: "3-anchors", 4: "4-counts-mu-and-p",
    5: "5-one-linear-system", 6: "6-from-values-to-step-credit", 7: "7-finite-depth",
    8: "8-the-shortest-path-foil", 9: "9-which-estimate-is-right", 10: "10-one-graph-different-backups",
    11: "11-luck-against-skill", 12: "12-when-the-pipeline-is-wrong",
}
#: section anchor -> the key of the part that draws it
PART_OF_ANCHOR: dict[str, str] = {ANCHORS[s]: p.key for p in PARTS for s in p.sections}
TITLES: dict[int, str] = {
    1: "the group", 2: "GRPO", 3: "anchors", 4: "counts, mu and P", 5: "one linear system",
    6: "step credit", 7: "finite depth", 8: "the shortest-path foil", 9: "which is right",
    10: "different backups", 11: "luck against skill", 12: "a wrong pipeline",
}


@dataclass(frozen=True)
class Shown:
    """The part this run draws (``key``: a part's key or :data:`ALL`)."""

    key: str

    def shows(self, section: int) -> bool:
        """Whether ``section`` (1-12) is drawn in this run."""
        return self.key == ALL or section in BY_KEY[self.key].sections

    def first_section(self) -> int:
        return 1 if self.key == ALL else BY_KEY[self.key].sections[0]


def _label(key: str) -> str:
    if key == ALL:
        return "every section"
    part = BY_KEY[key]
    return f"{part.sections[0]}–{part.sections[-1]} · {part.title}"


def _contents() -> str:
    """The parts in one line: each part's sections by name."""
    return " · ".join(f"**{p.sections[0]}–{p.sections[-1]}** " + ", ".join(TITLES[s] for s in p.sections)
                      for p in PARTS) + " · **all**: every section on one page (slower to draw)"


def picker() -> Shown:
    """The part control (bound to ``?lesson_part=``) and the parts' contents in one line; an
    unknown value in a link is said and the first part shown."""
    options = [p.key for p in PARTS] + [ALL]
    url.check_choice(KEY, options, "the lesson's part is one of " + ", ".join(options))
    if st.session_state.get(KEY) not in options:
        st.session_state[KEY] = PARTS[0].key
    key = st.segmented_control(
        "Part of the lesson", options, key=KEY, required=True, bind="query-params",
        help="The lesson in five parts, each a screenful or a few; your changes to the group, K and "
             "your answers stay when you move between parts.")
    st.caption(_contents())
    return Shown(str(key or PARTS[0].key))


def show(key: str) -> None:
    """Callback: draw part ``key`` in the next run (a link's section is in it; the link's own
    landing scrolls)."""
    st.session_state[KEY] = key


def go_to(key: str) -> None:
    """Callback: show part ``key`` and scroll to its first section once it is drawn."""
    show(key)
    st.session_state["lesson_goto"] = (ANCHORS[Shown(key).first_section()],
                                       st.session_state.get("lesson_goto", ("", 0))[1] + 1)


def way_on(shown: Shown) -> None:
    """Under the last section of a part: buttons to the previous and the next part."""
    if shown.key == ALL:
        return
    i = [p.key for p in PARTS].index(shown.key)
    before = PARTS[i - 1] if i > 0 else None
    after = PARTS[i + 1] if i + 1 < len(PARTS) else None
    c1, c2 = st.columns(2)
    if before is not None:
        c1.button(f"Back to {_label(before.key)}", on_click=go_to, args=(before.key,),
                  key="lesson_part_back", icon=":material/arrow_back:")
    if after is not None:
        c2.button(f"Next: {_label(after.key)}", on_click=go_to, args=(after.key,),
                  key="lesson_part_next", icon=":material/arrow_forward:", type="primary")
    else:
        c2.caption("This is the last part. *Every section* above shows the whole lesson on one page.")
