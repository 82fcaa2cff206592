"""Table, LaTeX and chart builders for the lesson, the anchor inspector and the disagreement finder.

Pure builders: they take what :mod:`crbc.explain.arithmetic`, :mod:`crbc.explain.lesson_tables`
and :mod:`crbc.explain.disagreements` computed and return printable rows, LaTeX strings or SVG.
They never call ``st.*`` and never estimate anything. (The lesson's graph is
:func:`crbc.viz.lesson_graph.lesson_graph_svg`.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from crbc.explain.arithmetic import AnchorArithmetic, DenseSystem
from crbc.explain.lesson_tables import DepthTable
from crbc.explain.table_rows import cells, fmt
from crbc.viz.core.axes import Axis
from crbc.viz.core.chart import chart_svg, column_series
from crbc.viz.core.series import Series

__all__ = [
    "arithmetic_markdown", "depth_chart_svg", "depth_error_chart_svg", "format_rows", "SIGNED_PREFIXES",
    "solution_latex", "system_latex"
]

# columns holding advantages are shown with a sign (+0.0960), the rest plainly (0.4802)
SIGNED_PREFIXES = ("A", "Δ", "max |Δ|", "min", "max", "credit")


def _signed(col: str) -> bool:
    return col.startswith(SIGNED_PREFIXES) and not col.startswith("actions")


def format_rows(rows: Iterable[Any], digits: int = 4, signed: Sequence[str] | None = None,
                drop: Sequence[str] = ("state",), fields: tuple[str, ...] | None = None) -> list[dict[str, str]]:
    """Typed rows (:mod:`crbc.explain.table_rows`) or plain dicts as printable rows under their column titles,
    numbers as fixed-decimal strings (advantage columns signed), for a static table.

    Integers stay integers, booleans become ``yes``/``no``, ``None`` becomes ``—``; columns in
    ``drop`` are removed; ``fields`` (attribute names) keeps only those, in that order."""
    out = []
    for row in rows:
        new = {}
        for k, v in cells(row, fields).items():
            if k in drop:
                continue
            sg = (k in signed) if signed is not None else _signed(k)
            if isinstance(v, bool):
                new[k] = "yes" if v else "no"
            elif isinstance(v, int):
                new[k] = str(v)
            elif isinstance(v, float):
                new[k] = fmt(v, digits, sg)
            elif v is None:
                new[k] = "—"
            else:
                new[k] = str(v)
        out.append(new)
    return out


def _tex_label(label: str) -> str:
    if label.startswith("s") and label[1:].isdigit():
        return f"s_{{{label[1:]}}}"
    return r"\text{" + "".join(_TEX_TEXT.get(ch, ch) for ch in label[:40]) + "}"


# LaTeX's special characters as text-mode commands: a user's label is never TeX
_TEX_TEXT = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
             "^": r"\textasciicircum{}", "_": r"\_", "~": r"\textasciitilde{}", "%": r"\%"}


def system_latex(ds: DenseSystem, digits: int = 4) -> str:
    """``(I - beta M) V = b`` with the numbers, as one LaTeX display (the solution is
    :func:`solution_latex`, a display of its own so neither is wider than a projector's column)."""
    n = len(ds.labels)
    a_rows = [" & ".join(fmt(ds.a[i, j], digits) for j in range(n)) for i in range(n)]
    v_syms = r" \\ ".join(f"V({_tex_label(lab)})" for lab in ds.labels)
    b_vals = r" \\ ".join(fmt(x, digits) for x in ds.b)
    return (r"\underbrace{\begin{pmatrix}" + r" \\ ".join(a_rows) + r"\end{pmatrix}}_{I-\beta M}"
            + r"\begin{pmatrix}" + v_syms + r"\end{pmatrix} = "
            + r"\underbrace{\begin{pmatrix}" + b_vals + r"\end{pmatrix}}_{b}")


def solution_latex(ds: DenseSystem, digits: int = 4) -> str:
    """``=> V = (V(s0), ..., V(sn))^T``: the solved system of :func:`system_latex` as one display."""
    sol = r" \\ ".join(fmt(x, digits) for x in ds.v)
    v_syms = r" \\ ".join(f"V({_tex_label(lab)})" for lab in ds.labels)
    return (r"\Longrightarrow\quad \begin{pmatrix}" + v_syms + r"\end{pmatrix} = \begin{pmatrix}"
            + sol + r"\end{pmatrix}")


def arithmetic_markdown(ar: AnchorArithmetic) -> list[str]:
    """The backup at one anchor as code lines: one Q line per action, then V, sigma and the gate."""
    lines = [a.q_expression for a in ar.actions]
    lines.append(ar.v_expression)
    for a in ar.actions:
        q = "Q" if ar.depth is None else f"Q^({ar.depth})"
        lines.append(f"A({ar.label},{a.action}) = {q} - V = {fmt(a.q)} - {fmt(ar.v)} = {fmt(a.a, signed=True)}")
    lines.append(ar.sigma_expression)
    lines.append(ar.gate_expression)
    for a in ar.actions:
        lines.append(f"A_S({ar.label},{a.action}) = {fmt(a.a_s, signed=True)}")
    return lines


def depth_chart_svg(table: DepthTable) -> str:
    """Lines of each column of :func:`crbc.explain.lesson_tables.depth_table` over K (SVG, for
    :func:`ui.core.svg_view.svg_view`), the closure as a dotted level in the column's colour."""
    rows = table.records()
    finite = [r for r in rows if r["K"] != "∞"]
    closure = next((r for r in rows if r["K"] == "∞"), None)
    ks = [int(r["K"]) for r in finite]
    series = []
    for line in column_series(list(table.columns), ks, [[r[c] for r in finite] for c in table.columns]):
        series.append(line)
        if closure is not None:
            series.append(Series(f"{line.name} at the closure", [ks[0], ks[-1]], [closure[line.name]] * 2,
                                 line.color, dash="2 3", markers=False, legend=False))
    return chart_svg(series, x=Axis("depth K (dotted: K = ∞)"), y=Axis("A^(K)(s,a)"))


#: the depth mark's colour: the studio's highlight orange darkened for white (WCAG AA for
#: its label; #ff7f0e is 2.5:1): 5.1:1
K_MARK = "#b35200"


def depth_error_chart_svg(sw, k: int | None = None, width: int = 560) -> str:
    """Section 7's convergence figure: ``||A_inf - A^(K)||_inf`` against K (log axis; exact zeros
    drawn at 1e-16) with the Cor. 3 bound ``2 beta^K / (1 - beta) ||T V0 - V0||_inf`` dashed, and
    an orange line at the depth ``k`` shown on the graph. ``sw``: a
    :class:`crbc.estimators.closure.DepthSweep`."""
    import numpy as np

    from crbc.viz.core.series import Mark
    ks = np.arange(sw.k_max + 1)
    series = [Series("error ‖A∞ − A^(K)‖∞", ks, np.maximum(sw.err_a_K, 1e-16), "#c62828")]
    bound = np.where(np.isfinite(sw.bound_K), sw.bound_K, np.nan)
    if np.isfinite(bound).any():
        series.append(Series("bound 2β^K/(1−β)·‖TV0 − V0‖∞", ks, bound, "#444", dash="6 4", markers=False))
    marks = [Mark(k, f"K = {k}", K_MARK)] if k is not None else []
    return chart_svg(series, x=Axis("depth K (rounds of backup)"), y=Axis("error (log scale)", log=True),
                     marks=marks, size=(width, 260))
