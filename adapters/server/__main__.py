"""``python -m agent_envs.adapters.server --host 127.0.0.1 --port 8000 [--token T]``.

Binds the socket itself (``--port 0`` picks a free port) and prints one line,
``agent_envs.adapters.server listening on http://HOST:PORT``, once it is bound, then serves until
SIGINT/SIGTERM. ``--openenv ENV_ID`` serves that id through OpenEnv's server instead
(WebSocket sessions at ``/ws``, as OpenEnv's clients and TRL expect).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from collections.abc import Sequence
from typing import Any

from agent_envs.adapters.server.app import DEFAULT_MAX_BODY_BYTES


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m agent_envs.adapters.server", description=__doc__
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind")
    parser.add_argument("--port", type=int, default=8000, help="port (0: a free one)")
    parser.add_argument(
        "--token",
        default=os.environ.get("AGENT_ENVS_SERVER_TOKEN"),
        help="bearer token required on every request but /health and the docs "
        "(default: $AGENT_ENVS_SERVER_TOKEN; none when unset)",
    )
    parser.add_argument("--session-ttl", type=float, default=600.0, help="idle seconds")
    parser.add_argument("--max-sessions", type=int, default=4096)
    parser.add_argument("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES)
    parser.add_argument("--log-level", default="warning")
    parser.add_argument(
        "--openenv", metavar="ENV_ID", help="serve ENV_ID as an OpenEnv environment instead"
    )
    parser.add_argument(
        "--env-kwargs", default="{}", help="JSON object of env kwargs (with --openenv)"
    )
    return parser


def build(args: argparse.Namespace) -> Any:
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


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
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
    main()
