"""Reading and writing the ``crbc.rollout/1`` JSON Lines format; the records themselves.

The format is a public contract (see docs/FORMATS.md). The readers validate every line and refuse
the whole file on the first bad one, with an error naming the file, the line and the field. They
never execute or unpickle anything. The records (:class:`Step`, :class:`Rollout`,
:class:`RolloutGroup`), their validation and the reference reader live in :mod:`crbc.io.records`
and are re-exported here; the fast readers decode with :mod:`crbc.io.columns`.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from crbc.errors import RolloutFormatError
from crbc.io.columns import parse_columns, read_columns
from crbc.io.records import (
    BOM,
    MAX_PROBLEMS,
    MAX_TEXT_CHARS,
    SCHEMA,
    Rollout,
    RolloutGroup,
    Step,
    group_rollouts,
    iter_rollouts,
    reference_parse_rollouts,
    reference_read_rollouts,
    rollout_from_dict,
    rollout_to_dict,
    validate_line,
)

__all__ = ["SCHEMA", "BOM", "Step", "Rollout", "RolloutGroup", "MAX_TEXT_CHARS", "MAX_PROBLEMS", "rollout_from_dict", "rollout_to_dict", "iter_rollouts", "validate_line", "group_rollouts", "reference_read_rollouts", "reference_parse_rollouts", "RolloutFormatError", "parse_rollouts", "read_rollouts", "atomic_write_chunks", "atomic_write_lines", "dumps_rollout", "write_rollouts"]


def parse_rollouts(data: str | bytes, source: str = "<input>") -> list[RolloutGroup]:
    """Parse a whole JSON Lines document (e.g. an upload). All or nothing.

    Decoded by the typed columnar reader (:func:`crbc.io.columns.parse_columns`); the errors are the
    reference reader's (:func:`iter_rollouts`)."""
    return parse_columns(data, source).to_groups()


def showcase_group(groups: Sequence[RolloutGroup]) -> int:
    """The group a file, a run's iteration or a report opens on: the first one that mixes
    successes and failures (a group whose rollouts all fail, or all succeed, has no step credit to
    show), else the first (0)."""
    return next((i for i, g in enumerate(groups) if 0.0 < g.success_rate < 1.0), 0)


def read_rollouts(path: str | os.PathLike) -> list[RolloutGroup]:
    """Read and validate a ``crbc.rollout/1`` JSON Lines file into groups (any kind of rollout
    file, the recorder's Parquet and gzip too: :func:`crbc.io.rollout_files.read_rollouts`,
    which is ``crbc.read_rollouts``).

    Args:
        path: the file.

    Returns:
        The groups in order of first appearance, each with its rollouts in file order.

    Raises:
        RolloutFormatError: any bad line (the message names the file, line and field); nothing
            is returned for a file with a bad line.

    Decoded by the typed columnar reader (:func:`crbc.io.columns.read_columns`); the errors are the
    reference reader's (:func:`iter_rollouts`)."""
    return read_columns(path).to_groups()



# --------------------------------------------------------------------------------------------
# writing


def atomic_write_chunks(path: str | os.PathLike, chunks: Iterable[bytes]) -> None:
    """Write byte chunks to ``path`` through a temporary file in the same folder and a rename:
    never half-written; the file gets the usual permissions (mkstemp's are 0600). The temporary
    file is ``.<name cut to 200 characters>.<random>.tmp``, so any name the file system takes can
    be written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # the temporary name is the target's cut to 200 characters, so a target name that the file
    # system takes (up to 255 bytes) never fails for its temporary twin's extra 14 characters
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:200]}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_lines(path: str | os.PathLike, lines: Iterable[str]) -> None:
    """Write text lines (UTF-8, ``\\n`` endings) to ``path`` atomically (:func:`atomic_write_chunks`)."""
    atomic_write_chunks(path, ((line + "\n").encode("utf-8") for line in lines))


def dumps_rollout(r: Rollout) -> str:
    return json.dumps(rollout_to_dict(r), ensure_ascii=False, allow_nan=False)


def write_rollouts(path: str | os.PathLike, groups: Sequence[RolloutGroup] | Iterable[Rollout]) -> None:
    """Write groups (or plain rollouts) as ``crbc.rollout/1`` JSON Lines, atomically."""
    atomic_write_lines(path, (dumps_rollout(r) for r in _flatten(groups)))


def _flatten(items: Iterable[RolloutGroup | Rollout]) -> Iterator[Rollout]:
    for it in items:
        if isinstance(it, RolloutGroup):
            yield from it.rollouts
        else:
            yield it
