"""ui/core/static_assets.py: the studio serves vis-network itself, copied whole from crbc/viz/vendor."""

from __future__ import annotations

from crbc.viz.anchor_graph import vis_assets
from ui.core import static_assets


def test_publish_copies_each_file_whole_and_only_when_it_differs(tmp_path):
    files = vis_assets()
    out = tmp_path / "static"
    static_assets.publish(files, out)
    assert sorted(p.name for p in out.iterdir()) == sorted(files)  # no temporary file left
    for name, src in files.items():
        assert (out / name).read_bytes() == src.read_bytes()
    js = out / "vis-network.min.js"
    before = js.stat().st_mtime_ns
    static_assets.publish(files, out)  # unchanged: not rewritten
    assert js.stat().st_mtime_ns == before
    js.write_text("stale")  # a different file (another vis-network version) is replaced
    static_assets.publish(files, out)
    assert js.read_bytes() == files["vis-network.min.js"].read_bytes()


def test_the_studio_config_turns_static_serving_on():
    config = (static_assets.STATIC_DIR.parent / ".streamlit" / "config.toml").read_text()
    assert "enableStaticServing = true" in config
