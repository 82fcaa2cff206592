"""A studio session over Streamlit's own websocket protocol, without a browser (benchmarks only).

A classroom of 30 on one 2-core machine cannot be simulated with 30 headless browsers on the
same 2 cores: drawing Streamlit's page costs each browser about a second of CPU, so the
browsers, not the server, would be measured. :class:`WireSession` plays the part of a student's
browser on the wire instead: it opens ``/_stcore/stream`` (protocol ``streamlit``), asks for a
page with a ``BackMsg.rerun_script`` (the page's URL name, as the browser sends it when a link
is clicked) and reads ``ForwardMsg`` messages until ``script_finished``. The time of
:meth:`WireSession.visit` is the time until the server has sent every element of the page: what
a student's own laptop then draws in parallel with the others. A session keeps its websocket, so
its ``st.session_state`` lives across visits, as in a browser tab.

Seen per visit: the elements' count, every exception element and error alert (their first 300
characters), and whether any text names another session's upload (``Loaded: upload``).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

ERROR_FORMAT = 1  #: streamlit.proto.Alert.Format.ERROR


@dataclass
class Visit:
    """One page request: ``seconds`` until ``script_finished``, ``elements`` drawn, ``errors``
    shown, ``first_error_seconds`` until the first of them arrived (None: none), ``upload_seen``:
    a text on the page names an upload as the loaded source."""

    page: str
    seconds: float
    elements: int = 0
    errors: list[str] = field(default_factory=list)
    first_error_seconds: float | None = None
    upload_seen: bool = False


class WireSession:
    """One browser-less session of the studio at ``base`` (``http://127.0.0.1:PORT``)."""

    def __init__(self, base: str, timeout: float = 120.0):
        self.url = base.replace("http://", "ws://", 1) + "/_stcore/stream"
        self.timeout = timeout
        self.ws = None

    async def open(self) -> WireSession:
        from tornado.websocket import websocket_connect

        self.ws = await asyncio.wait_for(websocket_connect(self.url, subprotocols=["streamlit"]), self.timeout)
        return self

    async def visit(self, page: str, query: str = "") -> Visit:
        """Request ``page`` (its URL name: ``lesson``, ``graph``, ...) and read until the run ends.
        TimeoutError when the server has not finished within the session's timeout."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        msg = BackMsg()
        msg.rerun_script.page_name = page
        msg.rerun_script.query_string = query
        t = time.perf_counter()
        await self.ws.write_message(msg.SerializeToString(), binary=True)
        out = Visit(page, 0.0)
        deadline = t + self.timeout
        while True:
            raw = await asyncio.wait_for(self.ws.read_message(), max(0.01, deadline - time.perf_counter()))
            if raw is None:
                raise ConnectionError(f"the server closed the session during {page}")
            fwd = ForwardMsg()
            fwd.ParseFromString(raw)
            kind = fwd.WhichOneof("type")
            if kind == "script_finished":
                out.seconds = time.perf_counter() - t
                return out
            if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                out.elements += 1
                el = fwd.delta.new_element
                what = el.WhichOneof("type")
                if what == "exception":
                    out.errors.append(f"exception: {el.exception.message[:300]}")
                elif what == "alert" and el.alert.format == ERROR_FORMAT:
                    out.errors.append(f"error: {el.alert.body[:300]}")
                if out.errors and out.first_error_seconds is None:
                    out.first_error_seconds = time.perf_counter() - t
                elif what == "markdown" and el.markdown.body.replace("*", "").startswith("Loaded: upload"):
                    out.upload_seen = True

    def close(self) -> None:
        if self.ws is not None:
            self.ws.close()
            self.ws = None


async def open_session(base: str, timeout: float = 120.0) -> WireSession:
    """A connected :class:`WireSession`."""
    return await WireSession(base, timeout).open()
