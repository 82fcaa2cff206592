"""ui/core/long_urls: the server's h11 reads request heads of up to 1 MB (the browser test
loads a 200,000-character link); installing twice wraps once."""

from __future__ import annotations


def test_the_settings_hook_is_wrapped_once_with_the_larger_buffer(monkeypatch):
    from streamlit.web.server.starlette import starlette_server as server

    from ui.core import long_urls

    monkeypatch.setattr(server, "_get_uvicorn_config_kwargs", server._get_uvicorn_config_kwargs)
    assert long_urls.install()
    wrapped = server._get_uvicorn_config_kwargs
    assert long_urls.install() and server._get_uvicorn_config_kwargs is wrapped  # not wrapped twice
    kwargs = wrapped()
    assert kwargs["http"] == "h11" and kwargs["h11_max_incomplete_event_size"] == long_urls.MAX_REQUEST_BYTES
    assert kwargs["ws_max_size"]  # Streamlit's own settings kept
