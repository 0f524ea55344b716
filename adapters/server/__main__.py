"""The env server: stateful sessions of every ``grl/*`` id over HTTP and WebSocket.

``agent-envs serve --host 127.0.0.1 --port 8000 [--token T]`` (or
``agent-envs serve ...``) binds the socket itself (``--port 0`` picks a free port) and prints
one line, ``agent_envs.adapters.server listening on http://HOST:PORT``, once it is bound, then
serves until SIGINT/SIGTERM. ``--openenv ENV_ID`` serves that id through OpenEnv's server
instead (WebSocket sessions at ``/ws``, as OpenEnv's clients and TRL expect).

The flags follow every ``agent-envs`` command's (:func:`agent_envs.flags.parse`: tyro, one flag
per field of :class:`Args`, its docstring as the help).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import tyro
from agent_envs.adapters.server.app import DEFAULT_MAX_BODY_BYTES

from agent_envs.flags import parse

TOKEN_VARIABLE = "AGENT_ENVS_SERVER_TOKEN"


@dataclass
class Args:
    """Server settings (every field is a command-line flag)."""

    host: str = "127.0.0.1"
    """address to bind"""
    port: int = 8000
    """TCP port (0: a free one, printed once bound)"""
    token: str | None = None
    """bearer token required on every request but /health and the docs (default:
    $AGENT_ENVS_SERVER_TOKEN; no token when that is unset)"""
    session_ttl: float = 600.0
    """seconds a session may stay idle before it is reaped"""
    max_sessions: int = 4096
    """sessions held at once (OpenEnv: concurrent environments)"""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """largest request body or WebSocket message, in bytes"""
    log_level: str = "warning"
    """uvicorn's log level (critical, error, warning, info, debug, trace)"""
    openenv: Annotated[str | None, tyro.conf.arg(metavar="ENV_ID")] = None
    """serve ENV_ID as an OpenEnv environment instead"""
    env_kwargs: str = "{}"
    """JSON object of env kwargs (with --openenv)"""


def parse_args(argv: Sequence[str] | None = None) -> Args:
    """The flags in ``argv`` (default: the command line); ``--token`` falls back to
    ``$AGENT_ENVS_SERVER_TOKEN``."""
    args = parse(
        Args,
        argv,
        prog="agent-envs serve",
        description=__doc__.split("\n\n")[0],
    )
    if args.token is None:
        args.token = os.environ.get(TOKEN_VARIABLE)
    return args


def build(args: Args) -> Any:
    if args.openenv:
        from agent_envs.adapters.server.openenv import create_openenv_app

        env_kwargs = json.loads(args.env_kwargs)
        if not isinstance(env_kwargs, dict):
            raise SystemExit("--env-kwargs must be a JSON object")
        return create_openenv_app(args.openenv, max_concurrent_envs=args.max_sessions, **env_kwargs)
    from agent_envs.adapters.server.app import create_app

    return create_app(
        token=args.token,
        session_ttl=args.session_ttl,
        max_sessions=args.max_sessions,
        max_body_bytes=args.max_body_bytes,
    )


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port=0``: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP: asyncio turns Nagle off (TCP_NODELAY) only on sockets that say TCP;
    # with proto 0 every response paid ~40 ms of Nagle + delayed ACK
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    return sock


def main(args: Args) -> None:
    import uvicorn

    app = build(args)
    sock = bind_socket(args.host, args.port)
    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(
        app, log_level=args.log_level, backlog=2048, ws_max_size=args.max_body_bytes
    )
    server = uvicorn.Server(config)
    print(f"agent_envs.adapters.server listening on http://{host}:{port}", flush=True)
    server.run(sockets=[sock])
    sys.exit(0)


if __name__ == "__main__":
    main(parse_args())
