"""A file dropped on the studio's uploaders under AppTest (which has no upload of its own): every
``st.file_uploader`` whose key starts with a prefix returns the file, the others stay empty."""

from __future__ import annotations

import io

from streamlit.delta_generator import DeltaGenerator


class Uploaded(io.BytesIO):
    """What ``st.file_uploader`` returns for one file: its name, size, bytes and id."""

    def __init__(self, name: str, data: bytes) -> None:
        super().__init__(data)
        self.name, self.size, self.file_id, self.type = name, len(data), f"test-{name}", ""


def uploading(monkeypatch, key_prefix: str, name: str, data: bytes) -> None:
    """Every file uploader whose key starts with ``key_prefix`` holds the file (the rest stay
    empty), as after the user dropped it there."""
    real = DeltaGenerator.file_uploader

    def uploader(self, label, *a, key=None, **k):
        if key is not None and str(key).startswith(key_prefix):
            return [Uploaded(name, data)]
        return real(self, label, *a, key=key, **k)

    monkeypatch.setattr(DeltaGenerator, "file_uploader", uploader)
    import streamlit

    main = streamlit._main  # ``st.file_uploader`` is the main area's method, bound at import
    monkeypatch.setattr(streamlit, "file_uploader", lambda *a, **k: uploader(main, *a, **k))
