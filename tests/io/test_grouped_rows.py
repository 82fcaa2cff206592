"""rows_by_label (one stable sort) against its slow twin, a mask per distinct label."""

from __future__ import annotations

import numpy as np
import pytest

from crbc.io.grouped_rows import rows_by_label


@pytest.mark.parametrize("seed", range(6))
def test_rows_by_label_is_each_labels_own_mask(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400))
    label_N = rng.integers(0, max(1, n // 3) + 1, size=n) * (3 if seed % 2 else 1)  # gaps in the labels
    got = list(rows_by_label(label_N))
    want = [(g, np.flatnonzero(label_N == g)) for g in np.unique(label_N)]
    assert [g for g, _ in got] == [g for g, _ in want]
    for (_, a), (_, b) in zip(got, want, strict=True):
        assert np.array_equal(a, b)
    assert sum(len(r) for _, r in got) == n


def test_no_rows_give_no_labels():
    assert list(rows_by_label(np.array([], dtype=np.int64))) == []
