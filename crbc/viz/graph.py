"""The merged empirical process of one group drawn as a graph (pyvis HTML and a plotly figure).

Both drawings share :func:`layout`: anchors in layers by their hop distance from the start
anchor(s), the two absorbing boundaries (z+ success, z- failure) in a last column on the right.
Positions are fixed and physics is off, so the graph never moves between reruns.
The pyvis page is fully offline: vis-network is inlined and every CDN reference is removed.
"""

from __future__ import annotations

import html
import json
import re
from collections import deque
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from ..labels import anchor_labels
from ..process import Process
from .style import (
    BOARD_COLORS,
    BOARD_UNKNOWN,
    CREDIT_SCALE,
    EDGE_COLOR,
    HIGHLIGHT,
    V_SCALE,
    Z_MINUS_COLOR,
    Z_PLUS_COLOR,
    is_board,
    signed_color,
    v_color,
)

X_GAP, Y_GAP = 190.0, 95.0


@dataclass(frozen=True)
class Layout:
    """Node positions: ``x_S``, ``y_S`` for anchors, ``x_B``, ``y_B`` for [z+, z-]; ``layer_S``."""

    x_S: np.ndarray
    y_S: np.ndarray
    layer_S: np.ndarray
    x_B: np.ndarray
    y_B: np.ndarray


def _check_single(p: Process) -> None:
    if len(p.group_ids) != 1:
        raise ValueError("graph drawings take the process of a single group")


def layout(p: Process) -> Layout:
    """Layered layout: layer = fewest hops from a start anchor; inside a layer, anchors are
    ordered by the mean position of their predecessors (one barycentre sweep) and centred."""
    _check_single(p)
    n = p.n_states
    starts = np.unique(p.step_state[p.rollout_offsets[:-1]])
    inner = p.step_next < n
    src, dst = p.step_state[inner], p.step_next[inner]
    succ: list[set[int]] = [set() for _ in range(n)]
    pred: list[set[int]] = [set() for _ in range(n)]
    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        if a != b:
            succ[a].add(b)
            pred[b].add(a)
    layer = np.full(n, -1, dtype=int)
    q = deque(int(s) for s in starts)
    layer[starts] = 0
    while q:
        a = q.popleft()
        for b in succ[a]:
            if layer[b] < 0:
                layer[b] = layer[a] + 1
                q.append(b)
    layer[layer < 0] = 0  # unreachable from a start cannot happen for merged rollouts; be safe
    y = np.zeros(n)
    order_key = np.zeros(n)
    for L in range(int(layer.max()) + 1):
        members = np.flatnonzero(layer == L)
        if L > 0:
            for m in members:
                ps = [a for a in pred[m] if layer[a] < L]
                order_key[m] = np.mean(y[ps]) if ps else 0.0
        # ties broken by visits (busy anchors towards the middle of the ordering) then id
        members = sorted(members.tolist(), key=lambda m: (order_key[m], -p.n_s[m], m))
        k = len(members)
        for i, m in enumerate(members):
            y[m] = (i - (k - 1) / 2.0)
    x = layer.astype(float)
    last = float(layer.max()) + 1.0
    spread = max(1.0, float(np.abs(y).max()) if n else 1.0)
    # narrower columns for deep graphs, so the drawing keeps a landscape shape near 16:9
    widest = int(np.bincount(layer).max())
    gap_x = float(np.clip(Y_GAP * max(widest, 2) * 1.8 / (last + 1), 110.0, X_GAP))
    return Layout(x_S=x * gap_x, y_S=y * Y_GAP, layer_S=layer,
                  x_B=np.array([last, last]) * gap_x,
                  y_B=np.array([-0.5 * spread - 0.5, 0.5 * spread + 0.5]) * Y_GAP)


def rollout_edges(p: Process, r: int) -> list[tuple[int, int, int]]:
    """The chosen rollout as (anchor, action index, successor) triples (successor ids: S = z+,
    S + 1 = z-)."""
    sl = slice(int(p.rollout_offsets[r]), int(p.rollout_offsets[r + 1]))
    return list(zip(p.step_state[sl].tolist(), p.sa_action[p.step_sa[sl]].tolist(),
                    p.step_next[sl].tolist(), strict=True))


def _edges(p: Process) -> list[tuple[int, int, int, int]]:
    """Distinct observed transitions as (anchor, action index, successor, count)."""
    sa, nxt, cnt = p.transitions()
    return [(int(p.sa_state[a]), int(p.sa_action[a]), int(x), int(c))
            for a, x, c in zip(sa.tolist(), nxt.tolist(), cnt.tolist(), strict=True)]


def _zmax(x: np.ndarray) -> float:
    """Symmetric colour range of a signed quantity (largest finite |x|, at least 1e-3)."""
    a = np.abs(np.asarray(x, dtype=float))
    return max(float(a[np.isfinite(a)].max()) if np.isfinite(a).any() else 0.0, 1e-3)


def _fmt(v: float) -> str:
    return "n/a" if v is None or not np.isfinite(v) else f"{v:.3f}"


# --------------------------------------------------------------------------------------------
# pyvis


_CDN = re.compile(r"<(link|script)\b[^>]*(?:href|src)\s*=\s*[\"']https?://[^>]*>(\s*</script>)?",
                  re.IGNORECASE | re.DOTALL)

_TOOLTIP_JS = """
<script>
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
      var t = document.createElement('table');
      t.style.cssText = 'border-collapse: collapse; margin-top: 4px';
      rows.forEach(function (row) {
        var tr = document.createElement('tr');
        Array.from(row).forEach(function (ch) {
          var td = document.createElement('td');
          td.style.cssText = 'width:14px;height:14px;padding:0;border:1px solid #fff;background:' +
            (COLORS[ch] || UNKNOWN);
          tr.appendChild(td);
        });
        t.appendChild(tr);
      });
      box.appendChild(t);
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
  window.crbcGraphReady = false;
  network.once('afterDrawing', function () { window.crbcGraphReady = true;
    document.body.setAttribute('data-graph-ready', '1'); });
})();
</script>
"""


def anchor_graph_html(p: Process, value_S: np.ndarray, *, highlight_rollout: int | None = None,
                      height_px: int = 640, max_edge_labels: int = 60,
                      value_name: str = "V", signed: bool = False) -> str:
    """The merged process as a self-contained, offline pyvis page.

    Nodes: anchors sized by visits N(s), coloured by ``value_S`` on the V scale, plus the two
    absorbing boundaries. Edges: one per observed (anchor, action, successor), labelled by the
    action and its frequency P(x|s,a) (labels on every edge for small graphs, only on the
    highlighted path for big ones). Hover a node for its board. ``signed``: colour a signed
    quantity (e.g. estimate - truth) on the diverging credit scale instead of the V scale.
    """
    from pyvis.network import Network

    _check_single(p)
    lay = layout(p)
    n = p.n_states
    labels = anchor_labels(p)
    colors = signed_color(value_S) if signed else v_color(value_S)
    n_max = max(int(p.n_s.max()), 1)
    net = Network(height=f"{height_px}px", width="100%", directed=True, cdn_resources="in_line",
                  bgcolor="#ffffff")
    for s in range(n):
        text = p.state_anchor[s]
        board = text if is_board(text) else ""
        info = (f"{labels[s]}: {value_name} = {_fmt(value_S[s])}\nvisits N(s) = {int(p.n_s[s])}, "
                f"actions seen = {int(p.n_actions[s])}, layer {int(lay.layer_S[s])}")
        net.add_node(int(s), label=labels[s], x=float(lay.x_S[s]), y=float(lay.y_S[s]),
                     size=float(8 + 22 * np.sqrt(p.n_s[s] / n_max)), color=colors[s],
                     physics=False, fixed=True, shape="dot", info=info, board=board,
                     text="" if board else text, font={"size": 13},
                     borderWidth=1)
    for b, (name, col) in enumerate([("z+ success", Z_PLUS_COLOR), ("z- failure", Z_MINUS_COLOR)]):
        net.add_node(n + b, label=name, x=float(lay.x_B[b]), y=float(lay.y_B[b]), shape="box",
                     color=col, physics=False, fixed=True, font={"color": "white", "size": 15},
                     info=f"{name}: absorbing boundary, V = {1 - b}", board="", text="")
    path = set()
    if highlight_rollout is not None:
        path = {(a, act, x) for a, act, x in rollout_edges(p, highlight_rollout)}
    edges = _edges(p)
    show_all = len(edges) <= max_edge_labels
    n_sa = {(int(p.sa_state[i]), int(p.sa_action[i])): int(p.n_sa[i]) for i in range(len(p.n_sa))}
    parallel: dict[tuple[int, int], int] = {}
    for i, (a, act, x, c) in enumerate(edges):
        k = parallel[(a, x)] = parallel.get((a, x), -1) + 1  # k-th edge between the same nodes
        name = p.action_names[act]
        freq = c / n_sa[(a, act)]
        on_path = (a, act, x) in path
        label = f"{name} {c}" if freq == 1 else f"{name} {c}/{n_sa[(a, act)]}"
        xname = "z+" if x == n else "z-" if x == n + 1 else labels[x]
        info = (f"{labels[a]} --{name}--> {xname}: seen {c} times; P(x|s,a) = {freq:.2f}, "
                f"mu(a|s) = {n_sa[(a, act)] / p.n_s[a]:.2f}")
        net.add_edge(int(a), int(x), id=f"e{i}", label=label if (show_all or on_path) else "",
                     info=info, width=(4.0 if on_path else 1.0 + 3.0 * np.sqrt(c / n_max)),
                     color=HIGHLIGHT if on_path else EDGE_COLOR, arrows="to",
                     font={"size": 13, "align": "middle", "color": "#222", "background": "white",
                           "strokeWidth": 0},
                     smooth={"enabled": a == x or k > 0, "type": "curvedCW",
                             "roundness": 0.6 if a == x else 0.18 * k})
    net.toggle_physics(False)
    net.set_options(json.dumps({
        "physics": {"enabled": False},
        "interaction": {"hover": True, "tooltipDelay": 80, "navigationButtons": False},
        "edges": {"arrows": {"to": {"enabled": True, "scaleFactor": 0.6}}},
    }))
    page = net.generate_html(notebook=False)
    return _offline(page, height_px, legend=_legend(value_S, value_name, signed))


def _legend(value_S: np.ndarray, value_name: str, signed: bool) -> tuple[str, list[str], str, str]:
    """(title, gradient colours, left label, right label) of the node-colour legend."""
    if signed:
        z = _zmax(value_S)
        return (f"node colour: {value_name}", signed_color(np.linspace(-z, z, 9), z),
                f"{-z:+.2g}", f"{z:+.2g}")
    return (f"node colour: {value_name}(s)" if value_name == "V" else f"node colour: {value_name}",
            v_color(np.linspace(0, 1, 9)), "0", "1")


_NAMESPACE = re.compile(r"^http://www\.w3\.org/\d{4}/")  # XML namespace names, never fetched
_URL = re.compile(r"https?://[^\s\"'<>)\\]+")


def _defang(page: str) -> str:
    """Drop the scheme of URLs left in inlined library text (licence notices, error messages), so
    the page holds no address it could fetch; XML namespace identifiers are kept."""
    return _URL.sub(lambda m: m.group(0) if _NAMESPACE.match(m.group(0))
                    else m.group(0).split("://", 1)[1], page)


def _offline(page: str, height_px: int, legend: tuple[str, list[str], str, str] | None = None) -> str:
    """Remove every external reference (CDN css/js) and pyvis's empty headings; add tooltips and
    the node-colour legend (default: V(s) on the V scale)."""
    title, grad, lo, hi = legend or ("node colour: V(s)", v_color(np.linspace(0, 1, 9)), "0", "1")
    page = _defang(_CDN.sub("", page))
    page = re.sub(r"<center>\s*<h1>\s*</h1>\s*</center>", "", page)
    js = _TOOLTIP_JS % {"colors": json.dumps(BOARD_COLORS), "unknown": json.dumps(BOARD_UNKNOWN)}
    marker = "network = new vis.Network(container, data, options);"
    if marker not in page:
        raise RuntimeError("unexpected pyvis template: cannot find the network constructor")
    page = page.replace(marker, marker + "\n" + js.replace("<script>", "").replace("</script>", ""), 1)
    style = (f"<style>body{{margin:0;font-family:sans-serif}} #mynetwork{{height:{height_px}px;"
             "border:none} .card{border:none} #vlegend{position:absolute;z-index:10;left:12px;top:10px;"
             "font:12px sans-serif;color:#333;background:rgba(255,255,255,.85);padding:4px 6px}"
             "#vlegend .bar{width:160px;height:10px;background:linear-gradient(to right,"
             + ",".join(grad) + ")}</style>")
    box = (f"<div id='vlegend'>{html.escape(title)}<div class='bar'></div>"
           f"<span>{html.escape(lo)}</span><span style='float:right'>{html.escape(hi)}</span></div>")
    page = page.replace("</head>", style + "</head>", 1)
    return page.replace("<body>", "<body>" + box, 1)


def external_urls(page: str) -> list[str]:
    """URLs in ``page`` that point at a host other than the local machine (for tests)."""
    return [u for u in _URL.findall(page)
            if not _NAMESPACE.match(u) and not re.match(r"https?://(127\.0\.0\.1|localhost)([:/]|$)", u)]


# --------------------------------------------------------------------------------------------
# plotly version (fast to re-render; used for the Bellman backups animation)


def graph_figure(p: Process, value_S: np.ndarray, *, title: str | None = None,
                 highlight_rollout: int | None = None, height: int = 520,
                 value_name: str = "V", signed: bool = False) -> go.Figure:
    """The same graph as :func:`anchor_graph_html` as a plotly figure (nodes coloured by value;
    ``signed``: a signed quantity on the diverging credit scale centred on 0)."""
    _check_single(p)
    lay = layout(p)
    n = p.n_states
    labels = anchor_labels(p)
    # SVG scatter redraws faster than WebGL for the sizes we show (and needs no GPU)
    Sc = go.Scatter if n + p.n_steps < 20000 else go.Scattergl
    ex, ey = [], []
    xs = np.concatenate([lay.x_S, lay.x_B])
    ys = -np.concatenate([lay.y_S, lay.y_B])  # plotly's y grows upwards
    for a, _act, x, _c in _edges(p):
        if a == x:
            continue
        ex += [xs[a], xs[x], None]
        ey += [ys[a], ys[x], None]
    fig = go.Figure()
    fig.add_trace(Sc(x=ex, y=ey, mode="lines", line=dict(color="#c7cdd4", width=1),
                               hoverinfo="skip", showlegend=False, name="transitions"))
    if highlight_rollout is not None:
        hx, hy = [], []
        for a, _act, x in rollout_edges(p, highlight_rollout):
            hx += [xs[a], xs[x], None]
            hy += [ys[a], ys[x], None]
        fig.add_trace(Sc(x=hx, y=hy, mode="lines", line=dict(color=HIGHLIGHT, width=3),
                                   hoverinfo="skip", name=f"rollout {highlight_rollout}"))
    n_max = max(int(p.n_s.max()), 1)
    hover = [f"<b>{html.escape(labels[s])}</b>  {value_name} = {_fmt(value_S[s])}<br>"
             f"visits {int(p.n_s[s])}<br><span style='font-family:monospace'>"
             + "<br>".join(html.escape(r) for r in p.state_anchor[s].split("\n")[:12]) + "</span>"
             for s in range(n)]
    fig.add_trace(Sc(
        x=lay.x_S, y=-lay.y_S, mode="markers+text" if n <= 60 else "markers", name="anchors",
        showlegend=False, textposition="bottom center", texttemplate=labels if n <= 60 else None,
        textfont=dict(size=12, color="#333"),
        marker=dict(size=8 + 18 * np.sqrt(p.n_s / n_max), color=np.asarray(value_S, dtype=float),
                    colorscale=CREDIT_SCALE if signed else V_SCALE,
                    cmin=-_zmax(value_S) if signed else 0.0, cmax=_zmax(value_S) if signed else 1.0,
                    line=dict(color="#333", width=0.5),
                    colorbar=dict(title=dict(text=value_name, side="right"), thickness=14,
                                  len=0.8, y=0.45)),
        text=hover, hovertemplate="%{text}<extra></extra>"))
    fig.add_trace(go.Scatter(
        x=lay.x_B, y=-lay.y_B, mode="markers+text", showlegend=False, name="boundaries",
        marker=dict(symbol="square", size=22, color=[Z_PLUS_COLOR, Z_MINUS_COLOR]),
        text=["z+ success (V=1)", "z- failure (V=0)"], textposition=["top center", "bottom center"],
        hoverinfo="text"))
    fig.update_xaxes(visible=False, range=[xs.min() - X_GAP * 0.4, xs.max() + X_GAP * 1.3])
    fig.update_yaxes(visible=False)
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=40 if title else 10, b=10),
                      title=title, plot_bgcolor="white", uirevision="graph",
                      legend=dict(orientation="h", x=0, y=0, yanchor="top", xanchor="left"),
                      hoverlabel=dict(bgcolor="white"))
    return fig


__all__ = ["Layout", "layout", "rollout_edges", "anchor_graph_html", "graph_figure", "external_urls",
           "BOARD_COLORS"]
