"""Step-credit heatmaps: rollouts x steps per estimator, one shared colour scale, binned when long."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import plotly.graph_objects as go

from crbc.estimators.registry import Credits
from crbc.explain.anchor_names import anchor_labels
from crbc.viz.binning import bin_width, binned
from crbc.viz.charts import field_N, symmetric_range
from crbc.viz.style import CREDIT_SCALE, OUTCOME_COLORS, plain


def credit_matrix(c: Credits, field: str) -> np.ndarray:
    """Rollouts x steps (NaN padded) of a per-step field."""
    p = c.process
    vals = field_N(c, field)
    out = np.full((len(p.rollout_len), int(p.rollout_len.max())), np.nan)
    if vals is not None:
        out[p.step_rollout, p.step_t - 1] = vals
    return out


def shared_range(all_credits: Iterable[Credits], field: str) -> float:
    """One symmetric colour range for several heatmaps: the largest |value| of ``field`` over
    all of them (1 when every value is zero or missing), so a colour means the same number in
    every panel."""
    return symmetric_range(*[field_N(c, field) for c in all_credits])


def credit_heatmap(c: Credits, field: str = "step_advantage", zmax: float | None = None,
                   height: int = 300, title: str | None = None, clickable: bool = True) -> go.Figure:
    """Heatmap rollouts x steps of one estimator's credit on the range [-zmax, zmax] (pass the
    same :func:`shared_range` to every panel), each row labelled with its outcome (✓ success,
    ✗ failure or time-out) and length.

    A transparent scatter trace named ``cells`` sits on the cells, one point per step, with
    ``customdata`` = [rollout position, step t, action, anchor label, value, anchor id], so a
    click on a cell can be read as a point selection. Beyond ``binning.MAX_COLUMNS`` steps a cell
    is the mean of a bin of steps, and its point is the bin's step of largest |value|.

    With ``clickable=False`` there is no ``cells`` trace (a browser draws an SVG element per
    point: about 0.25 ms each on a laptop core, so five 800-step panels take a second); the
    heatmap itself then shows the same hover from a ``customdata`` matrix (rollouts x columns x
    [action, anchor label])."""
    m = credit_matrix(c, field)
    p = c.process
    z = zmax if zmax is not None else symmetric_range(m)
    acts = [p.action_names[a] for a in p.sa_action[p.step_sa]]
    labels = list(anchor_labels(p))
    rows = [f"r{int(i)}" for i in p.rollout_index]
    marks = []
    for k in range(len(rows)):
        lo, hi = int(p.rollout_offsets[k]), int(p.rollout_offsets[k + 1])
        kind = "success" if p.rollout_success[k] else "failure"  # a time-out is a failure (z-)
        sym = "✓" if kind == "success" else "✗"
        marks.append(f"<span style='color:{OUTCOME_COLORS[kind]}'>{sym}</span> {rows[k]}"
                     f" <span style='color:#888'>({hi - lo})</span>")
    w = bin_width(m.shape[1])
    zm, pick, xs = binned(m, w) if w > 1 else (m, None, np.arange(1, m.shape[1] + 1))
    fig = go.Figure(go.Heatmap(
        z=zm, x=xs, y=rows,
        colorscale=CREDIT_SCALE, zmid=0, zmin=-z, zmax=z, hoverinfo="skip",
        colorbar=dict(thickness=12), xgap=1 if zm.shape[1] <= 100 else 0, ygap=1, name="credit"))
    vals = field_N(c, field)
    vals = vals if vals is not None else np.full(p.n_steps, np.nan)
    if w == 1:
        steps = np.arange(p.n_steps)
        px, shown = p.step_t, vals
    else:  # one point per bin: the bin's strongest step (a click opens it), at the bin's centre
        k_, b_ = np.nonzero(pick >= 0)
        steps = p.rollout_offsets[k_] + pick[k_, b_]
        px, shown = xs[b_], zm[k_, b_]
    step_r = p.step_rollout[steps]
    if not clickable:
        hover = np.full(zm.shape + (2,), "", dtype=object)
        col = (p.step_t[steps] - 1) if w == 1 else b_
        hover[step_r, col, 0] = [plain(acts[n]) for n in steps]
        hover[step_r, col, 1] = [plain(labels[s]) for s in p.step_state[steps]]
        fig.data[0].update(customdata=hover, hoverinfo=None, hovertemplate=(
            "rollout %{y}, step %{x}: %{customdata[0]} at %{customdata[1]}<br>"
            + ("value" if w == 1 else f"mean of {w} steps") + " %{z:.3f}<extra></extra>"))
    if clickable:
        # per-point data as numpy arrays (an object array for the mixed customdata): plotly checks
        # and copies an array in one go, where it walks a list of lists element by element
        cells = np.empty((len(steps), 6), dtype=object)
        cells[:, 0] = step_r.astype(int).tolist()
        cells[:, 1] = p.step_t[steps].astype(int).tolist()
        cells[:, 2] = [plain(acts[n]) for n in steps]
        cells[:, 3] = [plain(labels[s]) for s in p.step_state[steps]]
        cells[:, 4] = np.asarray(shown, dtype=float).tolist()
        cells[:, 5] = p.step_state[steps].astype(int).tolist()
        fig.add_trace(go.Scatter(
            x=px, y=np.asarray(rows)[step_r], mode="markers", name="cells",
            marker=dict(size=14 if w == 1 else 6, symbol="square", color="rgba(0,0,0,0)", opacity=0.01),
            customdata=cells,
            hovertemplate=("rollout %{y}, step %{customdata[1]}: %{customdata[2]} at %{customdata[3]}<br>"
                           + ("value" if w == 1 else f"mean of {w} steps") + " %{customdata[4]:.3f}"
                           "<extra>click: open in the Inspector</extra>"),
            showlegend=False, selected=dict(marker=dict(opacity=0.01)),
            unselected=dict(marker=dict(opacity=0.01))))
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=36 if title else 8, b=30),
                      title=title, plot_bgcolor="#f7f7f7", clickmode="event+select", dragmode=False)
    fig.update_yaxes(autorange="reversed", title=None, tickmode="array", tickvals=rows, ticktext=marks,
                     type="category")
    fig.update_xaxes(title="step t" if w == 1 else f"step t ({w} steps per cell: their mean)",
                     dtick=max(1, m.shape[1] // 10), range=[0.5, m.shape[1] + 0.5])
    return fig


def _set(obj) -> dict:
    """A plotly object's properties as JSON, without the empty ones (``title={}``) that plotly's
    own validation would drop."""
    return {k: v for k, v in obj.to_plotly_json().items() if v != {}}


def credit_heatmaps(panels: Mapping[str, go.Figure], height_per_panel: int = 300,
                    titles: Mapping[str, str] | None = None, cols: int = 2) -> go.Figure:
    """One figure of several :func:`credit_heatmap` figures (each maybe with its evidence veil),
    one subplot per estimator in a grid of ``cols`` columns and **one shared colour bar** (the
    first panel's range: pass the same ``zmax`` to every panel). Every trace of panel ``name``
    keeps its name and carries ``legendgroup=name`` (the clickable ``cells`` trace keeps its
    ``customdata``), and ``layout.meta["panels"]`` maps each name to its axes (``["x2", "y2"]``),
    so a test or a click handler can find a panel.

    The grid is laid out here as plotly's ``make_subplots`` would (panel i of ``rows x cols``,
    row-major, horizontal gap 0.12, vertical gap about 90 px) and assembled as plain JSON, then
    wrapped without plotly's per-property checks: the panels were checked when they were built,
    and ``tests/test_viz.py`` checks the assembled figure against plotly's validator."""
    names = list(panels)
    if not names:
        return go.Figure()
    cols = max(1, min(cols, len(names)))
    rows = -(-len(names) // cols)
    titles = titles or {}
    h_gap = 0.12 if cols > 1 else 0.02
    v_gap = min(0.3, 90 / (height_per_panel * rows))  # about 90 px, for the next panel's title
    width = (1 - h_gap * (cols - 1)) / cols
    tall = (1 - v_gap * (rows - 1)) / rows
    first = panels[names[0]]
    hm = first.data[0]
    layout: dict = {
        "coloraxis": {"colorscale": hm.colorscale, "cmid": 0, "cmin": hm.zmin, "cmax": hm.zmax,
                      "colorbar": {"thickness": 12, "len": min(1.0, 1.5 / rows), "y": 1,
                                   "yanchor": "top"}},
        "annotations": [], "height": height_per_panel * rows + 40,
        "margin": {"l": 10, "r": 10, "t": 36, "b": 30}, "plot_bgcolor": first.layout.plot_bgcolor,
        "clickmode": "event+select", "dragmode": False, "showlegend": False,
        "template": first.layout.template.to_plotly_json()}
    data, meta = [], {}
    for i, n in enumerate(names):
        row, col = divmod(i, cols)
        x0, y1 = col * (width + h_gap), 1 - row * (tall + v_gap)
        xd, yd = [x0, x0 + width], [max(0.0, y1 - tall), y1]
        xa, ya = ("x", "y") if i == 0 else (f"x{i + 1}", f"y{i + 1}")
        meta[n] = [xa, ya]
        src = panels[n]
        for tr in src.data:
            d = tr.to_plotly_json()
            d.update(legendgroup=n, xaxis=xa, yaxis=ya)
            if d["type"] == "heatmap" and d.get("name") == "credit":  # the veil keeps its own scale
                for k in ("zmin", "zmax", "zmid", "colorscale", "colorbar"):
                    d.pop(k, None)
                d.update(coloraxis="coloraxis", showscale=False)
            data.append(d)
        layout[xa.replace("x", "xaxis")] = {**_set(src.layout.xaxis), "domain": xd, "anchor": ya}
        layout[ya.replace("y", "yaxis")] = {**_set(src.layout.yaxis), "domain": yd, "anchor": xa}
        layout["annotations"].append({"text": titles.get(n, n), "x": (xd[0] + xd[1]) / 2, "y": yd[1],
                                      "xref": "paper", "yref": "paper", "xanchor": "center",
                                      "yanchor": "bottom", "showarrow": False, "font": {"size": 16}})
    layout["meta"] = {"panels": meta}
    return go.Figure({"data": data, "layout": layout}, _validate=False)
