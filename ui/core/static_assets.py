"""Files the studio serves itself: Streamlit's static serving (``server.enableStaticServing`` in
.streamlit/config.toml) publishes ``static/`` beside app.py at ``<base>/app/static/``.

The anchor graph's vis-network script and stylesheet (about 700 kB, vendored in crbc/viz/vendor;
:func:`crbc.viz.anchor_graph.vis_assets`) are copied there once per process, so a graph
view sends only its data and the browser fetches and compiles the library once. The folder is
generated (git ignores it); if it cannot be written, or static serving is off, pages fall back
to the self-contained graph (vis-network inlined).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import streamlit as st

from crbc.viz.anchor_graph import vis_assets
from ui.core.context import server

STATIC_DIR = Path(__file__).resolve().parents[2] / "static"


def publish(files: dict[str, Path], folder: Path = STATIC_DIR) -> None:
    """Copy ``files`` (name -> source) into ``folder`` where missing or different: each through a
    temporary name and an atomic rename, so a server never serves half a file."""
    folder.mkdir(exist_ok=True)
    for name, src in files.items():
        dst = folder / name
        if dst.exists() and dst.read_bytes() == src.read_bytes():
            continue
        tmp = folder / f".{name}.tmp"
        shutil.copyfile(src, tmp)
        tmp.replace(dst)


def vis_url() -> str | None:
    """URL prefix under which the browser finds vis-network's files (``/app/static``, behind
    ``server.baseUrlPath`` when one is set); None: inline them (static serving off, or the
    folder not writable). Published once per server (kept in its store)."""
    return server().kept("file", ("vis_url",), _publish_vis)


def _publish_vis() -> str | None:
    if not st.get_option("server.enableStaticServing"):
        return None
    try:
        publish(vis_assets())
    except OSError:
        return None
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}/app/static" if base else "/app/static"
