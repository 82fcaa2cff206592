"""Every page load asked the server at the page's own address first (``/runs/_stcore/health``,
``/runs/_stcore/host-config``: two 404s); index.html now names the root (ui/core/nested_urls.py)."""

from __future__ import annotations

from pathlib import Path

from tests.support.paths import APP
from ui.core import nested_urls as N


def test_page_names_are_the_url_paths_of_app_py():
    text = Path(APP).read_text()
    urls = {line.split('"')[-2] for line in text.splitlines() if line.strip().startswith('("pages/')}
    assert urls == set(N.PAGE_NAMES)


def test_index_html_gets_the_script_first_in_its_head():
    html = "<!-- c --><!DOCTYPE html><html><head><script type=module src=x.js></script></head></html>"
    out = N.with_base_url(html)
    assert out.index("BACKEND_BASE_URL") < out.index("x.js")
    assert out.count("<head>") == 1 and '"runs"' in out


def test_the_script_takes_off_a_page_name_only():
    import subprocess

    node = subprocess.run(["which", "node"], capture_output=True, text=True).stdout.strip()
    if not node:  # the browser test checks it in Chromium (tests/browser/test_run_links.py)
        return
    body = N.base_url_script()[len("<script>"):-len("</script>")]
    for path, want in (("/", "/"), ("/runs", "/"), ("/prefix/runs", "/prefix/"), ("/prefix", "/prefix/"),
                       ("/prefix/", "/prefix/")):
        js = (f"var location={{pathname:{path!r},origin:'http://h'}};var window={{}};{body};"
              "console.log(window.__streamlit.BACKEND_BASE_URL)")
        out = subprocess.run([node, "-e", js], capture_output=True, text=True).stdout.strip()
        assert out == "http://h" + want, (path, out)
