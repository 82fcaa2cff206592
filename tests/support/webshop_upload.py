"""A WebShop-like group with long text actions (a 100-character search, an 80-character item id
without a space) and long pages, uploaded through the sidebar of a browser page at 1140 px."""

from __future__ import annotations

from pathlib import Path

ACTIONS = ["search[cotton shirt for men, machine wash, short sleeve, classic fit, size medium, under 40 dollars]",
           "click[B09QWERTYUIOPASDFGHJKLZXCVBNMQWERTYUIOPASDFGHJKLZXCVBNM_cotton_shirt_men_size_M]",
           "click[Next >]", "buy now with the cheapest shipping option available for this item please"]


def write_webshop_long(folder: Path) -> Path:
    """``folder/webshop-long.jsonl``: one group of 6 rollouts of 5 steps over 3 long pages."""
    from crbc.io.rollouts import Rollout, RolloutGroup, Step, write_rollouts

    pages = [f"[Back to Search] Page {k} (Total results: 50)\n" + "item " * 300 for k in range(3)]
    rs = tuple(Rollout("webshop/long", i, tuple(Step(pages[(i + t) % 3], ACTIONS[(i * 7 + t) % 4]) for t in range(5)),
                       i % 3 == 0) for i in range(6))
    path = folder / "webshop-long.jsonl"
    write_rollouts(path, [RolloutGroup("webshop/long", rs)])
    return path


def upload_webshop_long(page, app_url: str, folder: Path) -> None:
    """Open the studio at 1140 px on the upload source and upload the group; returns once the
    sidebar names the file."""
    path = write_webshop_long(folder)
    page.set_viewport_size({"width": 1140, "height": 900})
    page.goto(f"{app_url}/?source=upload")
    page.locator("[data-testid=stFileUploaderDropzoneInput]").set_input_files(str(path))
    page.wait_for_function("() => document.querySelector('[data-testid=stSidebar]').innerText.includes('webshop-long')",
                           timeout=60_000)
