"""Which code a training run came from: the git commit of the checkout that holds ``crbc``.

:func:`code_version` returns ``{"code_commit": sha or None, "code_dirty": bool or None}``:

* ``code_commit``: ``git rev-parse HEAD`` run in the folder that holds the ``crbc`` package,
  only when that folder is itself the top of a git work tree (an installed copy inside some
  other repository, or no git at all, gives None rather than a foreign commit);
* ``code_dirty``: True when ``git status --porcelain --untracked-files=no`` lists a change to a
  tracked file (the run's code is then the commit plus uncommitted edits), None with no commit.

git runs as a subprocess with a list of arguments (no shell), a timeout and its output
captured; any failure (git missing, not a checkout, a timeout) gives None.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["code_version", "ROOT"]

ROOT = Path(__file__).resolve().parents[2]  # the folder that holds crbc/


def _git(root: Path, *args: str) -> str | None:
    try:
        res = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                             timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() if res.returncode == 0 else None


def code_version(root: Path | None = None) -> dict[str, str | bool | None]:
    """``{"code_commit", "code_dirty"}`` of the checkout at ``root`` (default: the one holding
    this package); both None when ``root`` is not the top of a git work tree."""
    root = Path(root or ROOT).resolve()
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != root:
        return {"code_commit": None, "code_dirty": None}
    sha = _git(root, "rev-parse", "HEAD")
    if not sha:
        return {"code_commit": None, "code_dirty": None}
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return {"code_commit": sha, "code_dirty": None if status is None else bool(status)}
