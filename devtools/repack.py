"""Pack an installed distribution back into a wheel, so a clean virtual environment can install it offline.

The clean-install test (tests/project/test_install.py) builds a fresh venv the way a trainer's would be
built, without reaching a package index for packages that this machine's local indexes lack
(verl, tensordict, pyvers): it packs the copies the test's own interpreter has installed.

A wheel is a zip of the installed files under ``site-packages`` and the ``.dist-info`` folder;
:func:`repack` takes the file list from the distribution's ``RECORD`` (leaving out compiled
``__pycache__`` files, files installed outside ``site-packages`` such as console scripts, and the
installer's own marks ``INSTALLER``, ``REQUESTED``, ``direct_url.json``), writes a fresh
``RECORD`` with sha256 digests, and names the wheel by the first ``Tag:`` of its ``WHEEL`` file.
Files are stored uncompressed (speed over size: the wheel is thrown away after the test).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as md
import zipfile
from pathlib import Path

SKIP_META = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def repack(name: str, out_dir: Path) -> Path:
    """Write ``{name}-{version}-{tag}.whl`` of the installed distribution ``name`` into
    ``out_dir`` and return its path. Raises ``PackageNotFoundError`` when it is not installed."""
    dist = md.distribution(name)
    files = [f for f in (dist.files or []) if not f.parts[0] == ".." and "__pycache__" not in f.parts
             and not f.name.endswith(".pyc")]
    info = next(f for f in dist.files or [] if f.parts[0].endswith(".dist-info")).parts[0]
    wheel_meta = dist.read_text("WHEEL") or ""
    tag = next((ln.split(":", 1)[1].strip() for ln in wheel_meta.splitlines() if ln.startswith("Tag:")),
               "py3-none-any")
    stem = info.removesuffix(".dist-info")  # normalised name-version
    out = Path(out_dir) / f"{stem}-{tag}.whl"
    record = []
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for f in files:
            if f.parts[0] == info and f.name in SKIP_META:
                continue
            path = Path(dist.locate_file(f))
            if not path.is_file():
                continue
            data = path.read_bytes()
            z.writestr(f.as_posix(), data)
            record.append(f"{f.as_posix()},{_digest(data)},{len(data)}")
        record.append(f"{info}/RECORD,,")
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return out
