"""Rollouts x steps grids: a per-step array as a matrix, and bins of consecutive steps.

Beyond :data:`MAX_COLUMNS` steps a cell is a bin of consecutive steps (their mean), so a
3,000-step rollout stays readable instead of cells thinner than the gaps.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from crbc.process import Process

__all__ = ["bin_width", "binned", "by_cell", "MAX_COLUMNS", "step_matrix"]

MAX_COLUMNS = 300  #: at most this many step columns on a heatmap; longer rollouts are binned


def bin_width(n_steps: int, max_columns: int = MAX_COLUMNS) -> int:
    """Steps per column: 1 up to ``max_columns`` steps, else the smallest width that fits."""
    return max(1, math.ceil(n_steps / max_columns))


def binned(m: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(mean, pick, centre)`` of a rollouts x steps matrix (NaN padded) in bins of ``width``
    steps: the NaN-ignoring mean of each bin (NaN where the bin is empty), the 0-based step of the
    bin with the largest |value| (-1 where empty; the step a click opens) and each bin's centre
    on the 1-based step axis."""
    r, t = m.shape
    nb = math.ceil(t / width)
    pad = np.full((r, nb * width), np.nan)
    pad[:, :t] = m
    cube = pad.reshape(r, nb, width)
    empty = ~np.isfinite(cube).any(axis=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(cube, axis=2)
    mag = np.where(np.isfinite(cube), np.abs(cube), -1.0)
    pick = np.arange(nb)[None, :] * width + mag.argmax(axis=2)
    pick[empty] = -1
    centre = np.arange(nb) * width + (width + 1) / 2
    return mean, pick, centre


def step_matrix(p: Process, values_N: np.ndarray | None) -> np.ndarray:
    """Rollouts x steps (R x max length, NaN padded) of a per-step array in the process's step
    order: ``out[step_rollout[n], step_t[n] - 1] = values_N[n]`` (all NaN for ``None``)."""
    out = np.full((len(p.rollout_len), int(p.rollout_len.max())), np.nan)
    if values_N is not None:
        out[p.step_rollout, p.step_t - 1] = values_N
    return out


def by_cell(p: Process, flags_N: np.ndarray, width: int = 1) -> np.ndarray:
    """A per-step flag (N,) as rollouts x columns whose cells are bins of ``width`` consecutive
    steps (1: a cell per step; see :func:`bin_width`): True where some step of the cell has it.
    Shape ``(rollouts, ceil(max length / width))``."""
    t_max = int(p.rollout_len.max())
    out = np.zeros((len(p.rollout_len), t_max), dtype=bool)
    out[p.step_rollout[flags_N], p.step_t[flags_N] - 1] = True
    if width > 1:
        n_columns = -(-t_max // width)
        pad = np.zeros((out.shape[0], width * n_columns), dtype=bool)
        pad[:, :t_max] = out
        out = pad.reshape(out.shape[0], n_columns, width).any(axis=2)
    return out
