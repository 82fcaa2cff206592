"""The merged empirical process of one group as an interactive vis-network page.

The page is this module's own template (:data:`_PAGE`) around vis-network 9.1.2, vendored in
``crbc/viz/vendor/`` (its licence header kept: Apache-2.0 or MIT). Positions come from
:func:`crbc.viz.core.graph_layout.layout` and physics is off, so the graph never moves between reruns. The
page is offline: vis-network is inlined (or, for the studio, loaded from its own server:
``assets_url``), and user text is never HTML (node and edge data reach the page as JSON with
``<``, ``>``, ``&`` and ``'`` escaped; tooltips are built with ``textContent``).
"""

from __future__ import annotations

import functools
import html
import json
import math
import re
from pathlib import Path

import numpy as np

from crbc.explain.anchor_names import anchor_labels
from crbc.process import Process
from crbc.viz.board import DOORKEY, GRID, LAKE, board_palette
from crbc.viz.core.graph_layout import LABEL_ALL_MAX, Drawn, check_single, drawn, rollout_edges, transitions
from crbc.viz.core.scales import symmetric_range
from crbc.viz.core.style import (
    BOARD_UNKNOWN,
    EDGE_COLOR,
    HIGHLIGHT,
    Z_MINUS_COLOR,
    Z_PLUS_COLOR,
    signed_color,
    v_color,
)
from crbc.viz.core.text import cut, fmt_value

__all__ = ["anchor_graph_html", "external_urls", "VENDOR", "vis_assets"]

VENDOR = Path(__file__).resolve().parent / "vendor"  #: vis-network.min.js and vis-network.css

# the page: {assets} vis-network's script and stylesheet (inline or linked), {style} this page's
# CSS, {body} the legend and the search box, {nodes} / {edges} / {options} JSON, {script} _TOOLTIP_JS
_PAGE = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
{assets}
{style}
</head>
<body>{body}
<div id="mynetwork"></div>
<script type="text/javascript">
var nodes = new vis.DataSet({nodes});
var edges = new vis.DataSet({edges});
var container = document.getElementById('mynetwork');
var options = {options};
var network = new vis.Network(container, {{nodes: nodes, edges: edges}}, options);
{script}
</script>
</body>
</html>
"""

_TOOLTIP_JS = """
(function () {
  var COLORS = %(colors)s, UNKNOWN = %(unknown)s;
  function tooltip(n) {
    var box = document.createElement('div');
    box.style.cssText = 'font: 12px sans-serif; max-width: 360px; white-space: normal';
    (n.info || '').split('\\n').forEach(function (line) {
      var d = document.createElement('div'); d.textContent = line; box.appendChild(d);
    });
    if (n.board) {
      var rows = n.board.split('\\n');
      var colors = COLORS[n.palette || 'grid'] || {};
      var status = n.palette === 'doorkey' ? rows.pop() : null;
      var t = document.createElement('table');
      t.style.cssText = 'border-collapse: collapse; margin-top: 4px';
      rows.forEach(function (row) {
        var tr = document.createElement('tr');
        Array.from(row).forEach(function (ch) {
          var td = document.createElement('td');
          td.style.cssText = 'width:14px;height:14px;padding:0;border:1px solid #fff;background:' +
            (colors[ch] || UNKNOWN);
          tr.appendChild(td);
        });
        t.appendChild(tr);
      });
      box.appendChild(t);
      if (status) {
        var st = document.createElement('div'); st.textContent = status;
        st.style.cssText = 'font: 12px monospace'; box.appendChild(st);
      }
    } else if (n.text) {
      var pre = document.createElement('pre'); pre.textContent = n.text;
      pre.style.cssText = 'margin: 4px 0 0 0'; box.appendChild(pre);
    }
    return box;
  }
  var upd = [];
  nodes.forEach(function (n) { upd.push({id: n.id, title: tooltip(n)}); });
  nodes.update(upd);
  var eupd = [];
  edges.forEach(function (e) {
    if (e.info) { var d = document.createElement('div'); d.textContent = e.info;
      d.style.cssText = 'font: 12px sans-serif'; eupd.push({id: e.id, title: d}); }
  });
  edges.update(eupd);
  // labels stay readable at the zoom that fits the whole graph: below MIN_LABEL_PX on screen,
  // the fonts are enlarged by 1 / scale (zooming in then makes them larger still)
  var MIN_LABEL_PX = %(min_px)d;
  function readable() {
    var s = network.getScale();
    if (!(s > 0) || s * 13 >= MIN_LABEL_PX) return false;
    var f = MIN_LABEL_PX / s, nu = [], eu = [];
    nodes.forEach(function (n) { nu.push({id: n.id, font: {size: f, color: (n.font || {}).color}}); });
    edges.forEach(function (e) { eu.push({id: e.id, font: {size: 0.92 * f, align: 'middle',
      color: '#222', background: 'white', strokeWidth: 0}}); });
    nodes.update(nu); edges.update(eu);
    return true;
  }
  var byName = {};
  nodes.forEach(function (n) { if (n.name) byName[n.name.toLowerCase()] = n.id; });
  var box = document.getElementById('crbc-search'), msg = document.getElementById('crbc-search-msg');
  function find() {
    var q = (box.value || '').trim().toLowerCase();
    if (!q) { msg.textContent = ''; network.unselectAll(); return; }
    var id = byName[q];
    if (id === undefined) {  // else the first anchor whose key contains the text
      nodes.forEach(function (n) {
        if (id === undefined && n.name && ((n.board || n.text || '') + ' ' + n.name).toLowerCase().indexOf(q) >= 0) id = n.id;
      });
    }
    if (id === undefined) { msg.textContent = 'no anchor matches'; return; }
    var n = nodes.get(id);
    nodes.update({id: id, label: n.name});
    network.selectNodes([id]);
    network.focus(id, {scale: Math.max(network.getScale(), 1.0), animation: {duration: 250}});
    msg.textContent = n.name + ' (' + (n.info || '').split('\\n')[0].split(': ')[1] + ')';
    document.body.setAttribute('data-search-hit', String(id));
  }
  if (box) { box.addEventListener('change', find);
    box.addEventListener('keydown', function (ev) { if (ev.key === 'Enter') find(); }); }
  window.crbcGraphReady = false;
  network.once('afterDrawing', function () {
    var changed = readable();
    function ready() { window.crbcGraphReady = true; document.body.setAttribute('data-graph-ready', '1'); }
    if (changed) { network.once('afterDrawing', ready); network.redraw(); } else { ready(); }
  });
})();
"""


def _loop_angle(p_xy: tuple[float, float], others: list[tuple[float, float]]) -> float:
    """Direction (radians, counter-clockwise from +x, screen y down: vis-network's self-loop
    angle) of the widest gap between the node's edges, its label below it counting as taken."""
    taken = [math.atan2(-(oy - p_xy[1]), ox - p_xy[0]) for ox, oy in others] + [-math.pi / 2]
    best, best_gap = math.pi / 2, -1.0
    for k in range(24):  # candidates every 15 degrees, starting straight up
        a = math.pi / 2 + k * math.pi / 12
        gap = min(abs((a - t + math.pi) % (2 * math.pi) - math.pi) for t in taken)
        if gap > best_gap + 1e-9:
            best, best_gap = a, gap
    return (best + math.pi) % (2 * math.pi) - math.pi


def anchor_graph_html(p: Process, value_S: np.ndarray, *, highlight_rollout: int | None = None,
                      height_px: int = 640, max_edge_labels: int = 60,
                      value_name: str = "V", min_label_px: int = 12, signed: bool = False,
                      assets_url: str | None = None) -> str:
    """The merged process as an offline vis-network page (``<!DOCTYPE html>`` ... ``</html>``).

    Nodes: anchors sized by visits N(s), coloured by ``value_S`` on the V scale, plus the two
    absorbing boundaries. Edges: one per pair of nodes, labelled by every action seen between
    them with its frequency (``right 2/3``: 2 of the 3 times ``right`` was taken there), on every
    edge of a small graph and only on the highlighted path of a big one. Beyond
    :data:`LABEL_ALL_MAX` anchors, node labels too are shown on the path only (hover names every
    node). Self-loops point into the widest free gap around their node; two edges between the
    same nodes in opposite directions bend apart. A search box (top right) finds an anchor by
    label or by a piece of its key. Fonts are enlarged when the fitted zoom would draw them
    below ``min_label_px`` pixels. ``signed``: colour a signed quantity (e.g. estimate - truth)
    on the diverging credit scale instead of the V scale. Beyond
    :data:`~crbc.viz.core.graph_layout.MAX_DRAWN` anchors the drawing is cut to the highlighted
    path and the busiest anchors (:func:`~crbc.viz.core.graph_layout.drawn_anchors`), and the
    legend's title says how many of how many are drawn.

    ``assets_url``: None (default) inlines vis-network's script and stylesheet (about 700 kB), so
    the page stands alone; a URL prefix (the studio's ``/app/static``) makes the page load
    ``vis-network.min.js`` and ``vis-network.css`` (:func:`vis_assets`) from there instead, so a
    browser fetches and compiles them once, not with every graph it is sent.
    """
    check_single(p)
    n = p.n_states
    steps = rollout_edges(p, highlight_rollout) if highlight_rollout is not None else []
    path = set(steps)
    d = drawn(p, keep=[a for a, _, _ in steps])  # in the rollout's order: a path longer than the cap keeps its start
    lay, is_shown = d.layout, d.mask
    labels = anchor_labels(p)
    colors = signed_color(value_S) if signed else v_color(value_S)
    n_max = max(int(p.n_s.max()), 1)
    on_path_nodes = {a for a, _, _ in path} | {x for _, _, x in path}
    label_all = n <= LABEL_ALL_MAX
    nodes: list[dict] = []
    edges: list[dict] = []
    xs = np.concatenate([lay.x_S, lay.x_B])
    ys = np.concatenate([lay.y_S, lay.y_B])
    for s in d.shown.tolist():
        text = p.state_anchor[s]
        palette = board_palette(text)
        board = text if palette is not None else ""
        info = (f"{labels[s]}: {value_name} = {fmt_value(value_S[s])}\nvisits N(s) = {int(p.n_s[s])}, "
                f"actions seen = {int(p.n_actions[s])}, layer {int(lay.layer_S[s])}")
        nodes.append(dict(id=int(s), label=labels[s] if (label_all or s in on_path_nodes) else " ",
                          name=labels[s], x=float(xs[s]), y=float(ys[s]),
                          size=float(8 + 22 * np.sqrt(p.n_s[s] / n_max)), color=colors[s],
                          physics=False, fixed=True, shape="dot", info=info, board=board,
                          palette=palette.name if palette else "grid",
                          text="" if board else cut(text), font={"size": 13}, borderWidth=1))
    for b, (name, col) in enumerate([("z+ success", Z_PLUS_COLOR), ("z- failure", Z_MINUS_COLOR)]):
        nodes.append(dict(id=n + b, label=name, x=float(lay.x_B[b]), y=float(lay.y_B[b]), shape="box",
                          color=col, physics=False, fixed=True, font={"color": "white", "size": 15},
                          info=f"{name}: absorbing boundary, V = {1 - b}", board="", text=""))
    n_sa = {(int(p.sa_state[i]), int(p.sa_action[i])): int(p.n_sa[i]) for i in range(len(p.n_sa))}
    merged = _merged_transitions(p, is_shown)
    neighbours: dict[int, list[tuple[float, float]]] = {}
    for a, x in merged:
        if a != x:
            neighbours.setdefault(a, []).append((xs[x], ys[x]))
            neighbours.setdefault(x, []).append((xs[a], ys[a]))
    show_all = len(merged) <= max_edge_labels
    for i, ((a, x), acts) in enumerate(merged.items()):
        xname = "z+" if x == n else "z-" if x == n + 1 else labels[x]
        parts, infos, on_path, total = [], [], False, 0
        for act, c in acts:
            name, m = p.action_names[act], n_sa[(a, act)]
            parts.append(f"{name} {c}" if c == m else f"{name} {c}/{m}")
            infos.append(f"{labels[a]} --{name}--> {xname}: seen {c} times; P(x|s,a) = {c / m:.2f}, "
                         f"mu(a|s) = {m / p.n_s[a]:.2f}")
            on_path = on_path or (a, act, x) in path
            total += c
        opts = dict(id=f"e{i}", label="\n".join(parts) if (show_all or on_path) else "",
                    info="\n".join(infos),
                    width=(4.0 if on_path else 1.0 + 3.0 * np.sqrt(min(total / n_max, 1.0))),
                    color=HIGHLIGHT if on_path else EDGE_COLOR, arrows="to",
                    font={"size": 13, "align": "middle", "color": "#222", "background": "white",
                          "strokeWidth": 0})
        if a == x:
            opts["selfReference"] = {"size": 16, "angle": _loop_angle((xs[a], ys[a]), neighbours.get(a, [])),
                                     "renderBehindTheNode": True}
        elif (x, a) in merged:  # two-way: curvedCW bends each direction to its own side
            opts["smooth"] = {"enabled": True, "type": "curvedCW", "roundness": 0.2}
        else:
            opts["smooth"] = {"enabled": False}
        edges.append({"from": int(a), "to": int(x), **opts})
    options = {
        "physics": {"enabled": False},
        "interaction": {"hover": True, "tooltipDelay": 80, "navigationButtons": False},
        "edges": {"arrows": {"to": {"enabled": True, "scaleFactor": 0.6}}},
    }
    names = [labels[s] for s in d.shown.tolist()]
    return _page(nodes, edges, options, _assets(assets_url), height_px, names, min_label_px,
                 _legend(value_S, value_name, signed, d, highlight_rollout))


def vis_assets() -> dict[str, Path]:
    """The two files of vis-network 9.1.2 the page needs (vendored), by file name."""
    return {name: VENDOR / name for name in ("vis-network.min.js", "vis-network.css")}


@functools.cache
def _inlined(name: str) -> str:
    """``name``'s text as the page inlines it (one trailing newline dropped)."""
    text = vis_assets()[name].read_text(encoding="utf-8")
    return text[:-1] if text.endswith("\n") else text


def _assets(url: str | None) -> str:
    """vis-network's script and stylesheet: inlined (``url`` None), else references to
    ``url``/vis-network.min.js and ``url``/vis-network.css."""
    if url is None:
        return (f"<script>{_inlined('vis-network.min.js')}</script>\n"
                f"<style>{_inlined('vis-network.css')}</style>")
    base = html.escape(url.rstrip("/"), quote=True)
    return (f'<script src="{base}/vis-network.min.js"></script>\n'
            f'<link rel="stylesheet" href="{base}/vis-network.css">')


def _json(x: object) -> str:
    """JSON safe inside a ``<script>`` element: ``<``, ``>``, ``&`` and ``'`` as \\u escapes."""
    return (json.dumps(x, sort_keys=True).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026").replace("'", "\\u0027"))


def _legend(value_S: np.ndarray, value_name: str, signed: bool, d: Drawn,
            highlight_rollout: int | None) -> tuple[str, list[str], str, str]:
    """(title, gradient colours, left label, right label) of the node-colour legend; the title
    of a cut drawing ``d`` also says how many anchors it shows."""
    cut = " · " + d.note(highlight_rollout) if d.cut else ""
    if signed:
        z = symmetric_range(value_S)
        return (f"node colour: {value_name}{cut}", signed_color(np.linspace(-z, z, 9), z),
                f"{-z:+.2g}", f"{z:+.2g}")
    return ((f"node colour: {value_name}(s)" if value_name == "V" else f"node colour: {value_name}") + cut,
            v_color(np.linspace(0, 1, 9)), "0", "1")


def _merged_transitions(p: Process, mask: np.ndarray) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """(anchor, successor) -> [(action index, count)] over the observed transitions whose both
    ends ``mask`` (S + 2,) shows."""
    merged: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for a, act, x, c in transitions(p):
        if mask[a] and mask[x]:
            merged.setdefault((a, x), []).append((act, c))
    return merged


_NAMESPACE = re.compile(r"^http://www\.w3\.org/\d{4}/")  # XML namespace names, never fetched
_URL = re.compile(r"https?://[^\s\"'<>)\\]+")


def _defang(page: str) -> str:
    """Drop the scheme of URLs left in inlined library text (licence notices, error messages), so
    the page holds no address it could fetch; XML namespace identifiers are kept."""
    return _URL.sub(lambda m: m.group(0) if _NAMESPACE.match(m.group(0))
                    else m.group(0).split("://", 1)[1], page)


def _page(nodes: list[dict], edges: list[dict], options: dict, assets: str, height_px: int,
          names: list[str], min_label_px: int, legend: tuple[str, list[str], str, str]) -> str:
    """:data:`_PAGE` filled in: the graph, tooltips, the node-colour legend and the anchor search;
    no URL in it that a browser could fetch (:func:`_defang`)."""
    title, grad, lo, hi = legend
    script = _TOOLTIP_JS % {"colors": json.dumps({p.name: p.colors for p in (GRID, LAKE, DOORKEY)}),
                            "unknown": json.dumps(BOARD_UNKNOWN),
                            "min_px": int(min_label_px)}
    style = (f"<style>body{{margin:0;font-family:sans-serif}} #mynetwork{{width:100%;height:{height_px}px;"
             "background-color:#ffffff;border:none;position:relative} #vlegend{position:absolute;z-index:10;"
             "left:12px;top:10px;font:12px sans-serif;color:#333;background:rgba(255,255,255,.85);padding:4px 6px}"
             "#vlegend .bar{width:160px;height:10px;background:linear-gradient(to right,"
             + ",".join(grad) + ")}"
             "#crbc-find{position:absolute;z-index:10;right:12px;top:10px;font:12px sans-serif;"
             "background:rgba(255,255,255,.9);padding:4px 6px;color:#333}"
             "#crbc-find input{width:150px;font:12px sans-serif;padding:2px 4px}</style>")
    box = (f"<div id='vlegend'>{html.escape(title)}<div class='bar'></div>"
           f"<span>{html.escape(lo)}</span><span style='float:right'>{html.escape(hi)}</span></div>")
    opts = "".join(f'<option value="{html.escape(nm, quote=True)}">' for nm in names)
    search = ('<div id="crbc-find"><label>Find anchor <input id="crbc-search" list="crbc-anchors" '
              'placeholder="s12, or part of its key" autocomplete="off"></label>'
              f'<datalist id="crbc-anchors">{opts}</datalist>'
              '<div id="crbc-search-msg" style="color:#666"></div></div>')
    return _defang(_PAGE.format(assets=assets, style=style, body=box + search, nodes=_json(nodes),
                                edges=_json(edges), options=json.dumps(options), script=script))


def external_urls(page: str) -> list[str]:
    """URLs in ``page`` that point at a host other than the local machine (for tests)."""
    return [u for u in _URL.findall(page)
            if not _NAMESPACE.match(u) and not re.match(r"https?://(127\.0\.0\.1|localhost)([:/]|$)", u)]
