"""The progress bar of the long commands (generate, train): tqdm on standard error."""

from __future__ import annotations

import sys

__all__ = ["ProgressBar"]


class ProgressBar:
    """A tqdm bar driven as the long loops' progress callback.

    ``generate_groups`` calls it as ``bar(done, total)`` (an int total), the training loop as
    ``bar(done, info)`` (a status string, with ``total`` given here). The bar closes (and ends
    its line) when ``done >= total``.
    """

    def __init__(self, label: str, total: int | None = None, unit: str = "", stream=None):
        from tqdm import tqdm

        self._bar = tqdm(total=total, desc=label, unit=(" " + unit) if unit else "it",
                         file=stream or sys.stderr, dynamic_ncols=True, leave=True)

    def __call__(self, done: int, info: int | str = "") -> None:
        bar = self._bar
        if isinstance(info, int) and not isinstance(info, bool):
            bar.total, info = info, ""
        if info:
            bar.set_postfix_str(str(info), refresh=False)
        bar.update(done - bar.n)
        if bar.total is not None and done >= bar.total:
            bar.close()

    def close(self, clear: bool = False) -> None:
        """Stop the bar early; ``clear`` erases its line (before an error message, say)."""
        if clear:
            self._bar.leave = False
        self._bar.close()
