"""The Bellman backups of one group as a report section: V^(K) for K = 0 .. the closure, with a
slider (the file's own script recolours the anchor graph; no server).

For K = 0..K_last (the depth where A^(K) reaches the closure within ``tol``, at most ``k_cap``)
the values V^(K)(s) of :func:`crbc.estimators.closure.depth_sweep` are embedded as JSON,
shape (K_last + 1, S), rounded to 4 decimals (NaN as null), with a 101-colour V palette from
:func:`crbc.viz.core.style.v_color`; the script colours anchor s at depth K with
``palette[round(100 * clip(V^(K)(s), 0, 1))]``. Without script the graph shows V^(K_last).
"""

from __future__ import annotations

import numpy as np

from crbc.estimators.closure import depth_sweep
from crbc.explain.anchor_names import anchor_labels
from crbc.process import Process
from crbc.report.page import json_for_script
from crbc.viz.backups import convergence_chart_svg
from crbc.viz.core.style import v_color
from crbc.viz.core.text import esc
from crbc.viz.graph import graph_svg

__all__ = ["backups_html", "K_CAP", "sweep_data", "TOL"]

TOL = 1e-6
K_CAP = 400  #: the deepest K a report embeds (the studio's Bellman backups page uses the same)


def sweep_data(p: Process, beta: float, tol: float = TOL, k_cap: int = K_CAP) -> tuple[dict, object]:
    """``(data, sweep)``: the JSON the slider reads (``values`` (K+1, S) rounded, ``palette``
    (101,), ``labels``, ``visits``, one ``notes`` line per K) and the :class:`DepthSweep`
    truncated at the convergence depth (``k_cap`` when it does not converge)."""
    sw = depth_sweep(p, beta, k_cap, tol)  # stops at the convergence depth: nothing past it is shown
    conv = sw.converged_at(tol)
    last = k_cap if conv is None else max(int(conv), 1)
    v_KS = np.round(sw.v_KS[: last + 1], 4)
    if np.isfinite(v_KS).all():
        values = v_KS.tolist()
    else:
        values = np.where(np.isfinite(v_KS), v_KS, None).tolist()  # NaN as null
    notes = []
    for k in range(last + 1):
        moved = 0 if k == 0 else int((np.abs(sw.v_KS[k] - sw.v_KS[k - 1]) > 1e-9).sum())
        notes.append(f"‖V^({k}) − V‖∞ = {sw.err_v_K[k]:.2e}, ‖A^({k}) − A∞‖∞ = {sw.err_a_K[k]:.2e}"
                     + ("; every anchor averages its own visits (visit-local)" if k == 0
                        else f"; {moved} of {p.n_states} anchors moved in this round"))
    data = {"values": values, "palette": v_color(np.linspace(0, 1, 101)),
            "labels": list(anchor_labels(p)), "visits": [int(x) for x in p.n_s], "notes": notes,
            "last_note": (f" (the closure, within {tol:g})" if conv is not None
                          else f" (not converged within K ≤ {k_cap})")}
    return data, sw


def backups_html(p: Process, beta: float, tol: float = TOL, k_cap: int = K_CAP) -> str:
    """The section's body: a K slider over the anchor graph (coloured by V^(K), shown first at
    the closure's depth) beside the convergence chart, and one line per K of how far V^(K) and
    A^(K) still are from the closure."""
    data, sw = sweep_data(p, beta, tol, k_cap)
    last = len(data["values"]) - 1
    graph = graph_svg(p, sw.v_KS[last], value_name=f"V^({last})", shown_width_px=680)
    conv = convergence_chart_svg(_cut(sw, last), None, tol)
    return (f'<p class="note">At K = 0 each anchor’s value is the mean outcome of the rollouts that '
            f'visited it (visit-local). Each round backs values up one step through the merged graph, '
            f'V^(K)(s) = β · Σ_a μ(a|s) Σ_x P(x|s,a) V^(K−1)(x) (β = {beta:g}), until V^(K) reaches the '
            f'closure. Move the slider: the anchors are recoloured by V^(K) (0 dark purple … 1 yellow).</p>'
            f'<div class="crbc-k-row"><label>depth K <input class="crbc-k" type="range" min="0" '
            f'max="{last}" step="1" value="{last}"></label><span class="crbc-k-out">K = {last}</span></div>'
            f'<p class="note crbc-k-note">{esc(data["notes"][last])}</p>'
            f'<p class="no-script-note">(The slider needs the file’s own script; without it the graph '
            f'shows K = {last}.)</p>'
            f'<div class="cols"><div>{graph}</div><div>{conv}</div></div>'
            f'<script type="application/json" class="crbc-sweep-data">{json_for_script(data)}</script>')


def _cut(sw, last: int):
    """The sweep's first ``last + 1`` depths (slices; nothing recomputed)."""
    import dataclasses

    n = last + 1
    return dataclasses.replace(sw, v_KS=sw.v_KS[:n], q_KSA=sw.q_KSA[:n], a_KSA=sw.a_KSA[:n],
                               err_v_K=sw.err_v_K[:n], err_a_K=sw.err_a_K[:n], bound_K=sw.bound_K[:n])
