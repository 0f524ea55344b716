"""Servers for the env-server tests: in this process (uvicorn in a thread, on a socket bound
to 127.0.0.1 and a free port), or as a ``agent-envs serve`` process stopped by
its pid. :func:`serve` is the tests' one way to run an ASGI app: the conformance suite
(``tests/adapters/test_conformance.py``) and the NeMo Gym tests import it from here."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")
pytest.importorskip("websockets")


@contextlib.contextmanager
def serve(app: Any, port: int = 0, **config: Any) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 (``port=0``: a free one) for the ``with`` block, under the
    app's ``Limits`` (``app.state.limits``) or the defaults (``config``: more
    ``uvicorn.Config`` settings); yields its base URL."""
    import uvicorn
    from agent_envs.adapters.server.__main__ import bind_socket
    from agent_envs.adapters.server.limits import Limits, uvicorn_config

    sock = bind_socket("127.0.0.1", port)
    limits = getattr(app.state, "limits", Limits())
    server = uvicorn.Server(uvicorn_config(app, limits, log_level="error", **config))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    from agent_envs.adapters.server import create_app

    with serve(create_app()) as url:
        yield url
