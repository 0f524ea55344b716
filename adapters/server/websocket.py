"""``WS /ws``: the session calls as JSON messages on one connection, one session at a time.

Messages (a text or binary frame of UTF-8 JSON), each answered by one reply:

- ``{"op": "create", "env_id", "env_kwargs"}`` -> what ``POST /sessions`` returns;
- ``{"op": "attach", "session_id"}`` -> ``{"session_id", "replies"}`` (one of your sessions,
  e.g. after a reconnect; ``replies``: how many replies its current episode has taken, so a
  client can tell whether a step whose reply it never got was played);
- ``{"op": "reset", "seed", "options"}``, ``{"op": "step", "action"}`` -> the HTTP routes'
  bodies;
- ``{"op": "close"}`` -> ``{"closed": session_id}``.

The fields are checked by the same models as the HTTP bodies, unknown keys refused, and a
refusal is the reply ``{"error": {"type", "message", "status"}}`` with the status the HTTP
route would answer; the connection stays open. A connection that drops leaves its session to
the reaper, so a client can reconnect and ``attach``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from agent_envs.adapters.server.auth import ANONYMOUS
from agent_envs.adapters.server.errors import Refused, dumps, error_body
from agent_envs.adapters.server.models import (
    AttachRequest,
    CreateSession,
    ResetRequest,
    StepRequest,
)
from agent_envs.adapters.server.service import SessionService
from agent_envs.adapters.server.sessions import Session

__all__ = ["describe_problems", "serve_websocket"]

LOG = logging.getLogger("agent_envs.adapters.server")
_MODELS: dict[str, Any] = {
    "create": CreateSession,
    "attach": AttachRequest,
    "reset": ResetRequest,
    "step": StepRequest,
    "close": None,
}


def describe_problems(problems: list[dict[str, Any]]) -> str:
    """pydantic's validation errors as one line: ``field: what is wrong; ...``."""
    parts = []
    for problem in problems:
        location = [str(part) for part in problem.get("loc", ())]
        if location[:1] == ["body"]:
            location = location[1:]
        parts.append(f"{'.'.join(location) or 'body'}: {problem.get('msg')}")
    return "; ".join(parts)


async def serve_websocket(websocket: Any, service: SessionService, max_bytes: int) -> None:
    """Answer ``websocket``'s messages until it closes."""
    from starlette.websockets import WebSocketDisconnect

    await websocket.accept()
    client = getattr(websocket.state, "client", ANONYMOUS)
    current: list[Session | None] = [None]
    while True:
        try:
            message = await websocket.receive()
        except (WebSocketDisconnect, RuntimeError):
            return
        if message["type"] == "websocket.disconnect":
            return  # the session stays until closed or reaped: the client may come back
        data = message.get("bytes")
        if data is None:
            data = message.get("text") or ""
        try:
            reply = await _reply(service, client, current, data, max_bytes)
        except Refused as refused:
            reply = refused.body()
        except Exception as error:  # a server bug: report it, keep serving
            LOG.exception("WebSocket message failed")
            reply = error_body(500, "internal_error", f"{type(error).__name__}: {error}")
        await websocket.send_bytes(dumps(reply))


async def _reply(
    service: SessionService,
    client: str,
    current: list[Session | None],
    data: str | bytes,
    max_bytes: int,
) -> dict[str, Any]:
    from pydantic import ValidationError

    if len(data) > max_bytes:
        raise Refused(f"message over max_body_bytes={max_bytes}", status=413, kind="body_too_large")
    try:
        message = json.loads(data)
    except ValueError as error:
        raise Refused("the message is not valid JSON", kind="malformed_json") from error
    if not isinstance(message, dict):
        raise Refused("a message must be a JSON object", status=422, kind="invalid_request")
    op = message.pop("op", None)
    if not isinstance(op, str) or op not in _MODELS:
        raise Refused(
            f"op must be one of {'/'.join(_MODELS)}, got {op!r}", status=422, kind="unknown_op"
        )
    model = _MODELS[op]
    if model is None and message:
        raise Refused(f"'{op}' takes no fields, got {sorted(message)}", status=422,
                      kind="invalid_request")  # fmt: skip
    try:
        body = None if model is None else model.model_validate(message)
    except ValidationError as error:
        problems = describe_problems(error.errors(include_url=False))
        raise Refused(problems, status=422, kind="invalid_request") from error
    if op == "create":
        session = await service.create(client, body)
        current[0] = session
        return service.describe(session)
    if op == "attach":
        current[0] = service.get(body.session_id, client)
        return {"session_id": body.session_id, "replies": len(current[0].replies)}
    if current[0] is None:
        raise Refused("send 'create' or 'attach' first", status=409, kind="no_session")
    session = service.get(current[0].id, client)
    if op == "reset":
        return await service.reset(session, body)
    if op == "step":
        return await service.step(session, body)
    current[0] = None
    return await service.close(session.id, client)
