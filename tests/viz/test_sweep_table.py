"""The Bellman backups' credit table (crbc.viz.backups.sweep_table): built row by row in its sort
order, it equals the whole table sorted by pandas (the slow twin), and with ``rows`` it is that
table's head, built without the rest."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import crbc
from crbc.estimators.closure import depth_sweep
from crbc.explain.anchor_names import anchor_labels
from crbc.viz.backups import sweep_table
from devtools.synthetic import random_walk_group


def _whole_then_sorted(p, sw, k: int) -> pd.DataFrame:
    """The slow obvious twin: every row, then pandas' sort by the gap and the visits."""
    labels = anchor_labels(p)
    df = pd.DataFrame({
        "anchor": [labels[s] for s in p.sa_state],
        "action": [p.action_names[a] for a in p.sa_action],
        "N(s,a)": p.n_sa,
        "mu(a|s)": np.round(p.mu, 3),
        f"Q^({k})": np.round(sw.q_KSA[k], 4),
        f"A^({k})": np.round(sw.a_KSA[k], 4),
        "Q closure": np.round(sw.q_SA, 4),
        "A∞ closure": np.round(sw.a_SA, 4),
        "|A^(K) − A∞|": np.abs(sw.a_KSA[k] - sw.a_SA),
    })
    return df.sort_values(["|A^(K) − A∞|", "N(s,a)"], ascending=[False, False]).reset_index(drop=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_table_and_its_head_equal_the_whole_table_sorted_by_pandas(seed):
    p = crbc.merge([random_walk_group(12, 40, size=5, seed=seed, bias=0.3)])
    sw = depth_sweep(p, 0.95, 30)
    for k in (0, 1, 3, 30):
        whole = _whole_then_sorted(p, sw, k)
        pd.testing.assert_frame_equal(sweep_table(p, sw, k), whole)
        for rows in (1, 7, len(whole), len(whole) + 5):
            pd.testing.assert_frame_equal(sweep_table(p, sw, k, rows=rows), whole.head(rows))


def test_ties_and_missing_gaps_sort_as_pandas_puts_them():
    """Equal gaps order by visits, then by the pairs' order; a NaN gap goes last (pandas'
    na_position), whatever the visits."""
    p = crbc.merge([random_walk_group(10, 30, size=4, seed=4, bias=0.3)])
    sw = depth_sweep(p, 0.95, 5)
    a = np.array(sw.a_KSA, dtype=float)
    a[2] = np.round(a[2], 1)  # many equal gaps at K = 2
    a[3, ::3] = np.nan  # and missing ones at K = 3
    sw = dataclasses.replace(sw, a_KSA=a)
    for k in (2, 3):
        pd.testing.assert_frame_equal(sweep_table(p, sw, k), _whole_then_sorted(p, sw, k))
        pd.testing.assert_frame_equal(sweep_table(p, sw, k, rows=9), _whole_then_sorted(p, sw, k).head(9))
