"""The env server's one error shape, the same over HTTP and WebSocket.

Every refusal is ``{"error": {"type": KIND, "message": TEXT, "status": STATUS}}``: over HTTP
with ``STATUS`` as the response's status, over WebSocket as the reply to the message that was
refused (the connection stays open). A 4xx names what to change; a 5xx is a bug (an env or the
server raised) and is logged with its traceback. Plain Python: no web framework.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["Refused", "answer", "dumps", "error_body", "error_bytes"]


class Refused(Exception):
    """A request the server refuses: ``status`` (HTTP), ``kind`` (the error's ``type``) and a
    ``message`` that says what to change. Subclasses fix ``status`` and ``kind``; one-off
    refusals pass them."""

    status = 400
    kind = "bad_request"

    def __init__(self, message: str, *, status: int | None = None, kind: str | None = None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        if kind is not None:
            self.kind = kind

    def body(self) -> dict[str, Any]:
        return error_body(self.status, self.kind, self.message)


def error_body(status: int, kind: str, message: str) -> dict[str, Any]:
    return {"error": {"type": kind, "message": message, "status": status}}


def error_bytes(status: int, kind: str, message: str) -> bytes:
    return dumps(error_body(status, kind, message))


def dumps(value: Any) -> bytes:
    """``value`` as UTF-8 JSON; numpy values and lone surrogates (a reply may hold any text)
    are made JSON-safe, escaped rather than dropped."""
    from agent_envs.core.records import json_safe

    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=True).encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError):
        return json.dumps(json_safe(value)).encode()


async def answer(
    send: Any, status: int, kind: str, message: str, headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    """Send a whole JSON error response on an ASGI HTTP connection."""
    body = error_bytes(status, kind, message)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
