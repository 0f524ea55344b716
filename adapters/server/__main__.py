"""The env server: stateful sessions of every ``grl/*`` id over HTTP and WebSocket.

``agent-envs serve --host 127.0.0.1 --port 8000 [--token T ...]`` binds the socket itself
(``--port 0`` picks a free port) and prints one line, ``agent_envs.adapters.server listening
on http://HOST:PORT``, once it is bound, then serves until SIGINT/SIGTERM. ``--openenv
ENV_ID`` serves that id through OpenEnv's server instead (WebSocket sessions at ``/ws``, as
OpenEnv's clients and TRL expect), behind the same tokens and limits.

Authentication: on a loopback address (the default host) the server trusts every caller
unless tokens are given; on any other address it requires a token (``--auth auto``). Tokens
come from ``--token``, ``--tokens-file`` or ``$AGENT_ENVS_SERVER_TOKEN``; each is ``TOKEN`` or
``NAME:TOKEN`` and names a client, which owns the sessions it creates and has its own share
of the limits. When a token is required and none is given, one is generated and printed on
the second line (``agent_envs.adapters.server token: ...``). Clients send ``Authorization:
Bearer TOKEN`` (`RemoteEnv(token=...)` or ``$AGENT_ENVS_SERVER_TOKEN``; OpenEnv's clients:
``http://me:TOKEN@host:port``). Without tokens a client may name itself with
``X-Client-Id``: a label for cooperating clients, not a proof.

The flags follow every ``agent-envs`` command's (:func:`agent_envs.flags.parse`: tyro, one flag
per field of :class:`Args`, its docstring as the help).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, Literal

import tyro
from agent_envs.adapters.server.auth import TOKEN_VARIABLE, is_loopback, read_tokens_file
from agent_envs.adapters.server.limits import Limits, uvicorn_config

from agent_envs.flags import parse

__all__ = ["Args", "bind_socket", "build", "main", "parse_args", "resolve_tokens"]

_LIMITS = Limits()
#: ``--max-sessions`` when not given: ours, and OpenEnv mode's (as OpenEnv's own servers)
MAX_SESSIONS = _LIMITS.max_sessions
OPENENV_MAX_SESSIONS = 64


@dataclass
class Args:
    """Server settings (every field is a command-line flag)."""

    host: str = "127.0.0.1"
    """address to bind"""
    port: int = 8000
    """TCP port (0: a free one, printed once bound)"""
    token: list[str] = field(default_factory=list)
    """client tokens, each TOKEN or NAME:TOKEN (a token names its client; default:
    $AGENT_ENVS_SERVER_TOKEN, whitespace-separated)"""
    tokens_file: str | None = None
    """a file of client tokens, one NAME:TOKEN per line ('#' comments)"""
    auth: Literal["auto", "on", "off"] = "auto"
    """require a token: auto = when tokens are given or --host is not a loopback address; on
    without tokens generates one and prints it"""
    data_root: list[str] = field(default_factory=list)
    """folders that env kwargs' paths (data_path, db_root, cache_dir, ...) may point into
    (default: none, so requests name no files)"""
    model_endpoint: list[str] = field(default_factory=lambda: ["loopback"])
    """OpenAI-compatible API roots /rollouts may call ('loopback': any loopback address; the
    flag with no value: /rollouts calls nothing)"""
    session_ttl: float = _LIMITS.session_ttl
    """seconds a session may stay idle before it is reaped"""
    max_sessions: int | None = None
    """sessions held at once, all clients (default 4096; with --openenv 64, OpenEnv's
    concurrent WebSocket sessions)"""
    max_sessions_per_client: int = _LIMITS.max_sessions_per_client
    """sessions (and open WebSockets) of one client"""
    max_inflight_per_client: int = _LIMITS.max_inflight_per_client
    """requests of one client served at once; more wait their turn"""
    max_body_bytes: int = _LIMITS.max_body_bytes
    """largest request body or WebSocket message, in bytes"""
    max_session_bytes: int = _LIMITS.max_session_bytes
    """text one session keeps of its episode, in bytes; a step past it is refused (413) until
    the next reset"""
    max_rollout_episodes: int = _LIMITS.max_rollout_episodes
    """episodes (ids x group_size) per POST /rollouts"""
    max_rollouts: int = _LIMITS.max_rollouts
    """POST /rollouts requests running at once, all clients"""
    max_rollouts_per_client: int = _LIMITS.max_rollouts_per_client
    """POST /rollouts requests of one client running at once"""
    read_timeout: float = _LIMITS.read_timeout
    """seconds to send a request's headers, and again its body (then 408, connection closed)"""
    keep_alive_timeout: float = _LIMITS.keep_alive_timeout
    """seconds an idle HTTP keep-alive connection stays open"""
    ws_idle_timeout: float | None = _LIMITS.ws_idle_timeout
    """seconds a WebSocket may stay silent before it is closed (default: --session-ttl)"""
    log_level: str = "warning"
    """uvicorn's log level (critical, error, warning, info, debug, trace)"""
    openenv: Annotated[str | None, tyro.conf.arg(metavar="ENV_ID")] = None
    """serve ENV_ID as an OpenEnv environment instead"""
    env_kwargs: str = "{}"
    """JSON object of env kwargs (with --openenv)"""


def parse_args(argv: Sequence[str] | None = None) -> Args:
    """The flags in ``argv`` (default: the command line)."""
    return parse(
        Args,
        argv,
        prog="agent-envs serve",
        description="\n\n".join(__doc__.split("\n\n")[i] for i in (0, 2)),
    )


def limits_of(args: Args) -> Limits:
    """The `Limits` the flags set (``--max-sessions`` defaulting per mode)."""
    values = {spec.name: getattr(args, spec.name) for spec in fields(Limits)}
    if values["max_sessions"] is None:
        values["max_sessions"] = OPENENV_MAX_SESSIONS if args.openenv else MAX_SESSIONS
    try:
        return Limits(**values)
    except ValueError as error:
        raise SystemExit(f"agent-envs serve: --{str(error).replace('_', '-')}") from None


def resolve_tokens(args: Args) -> tuple[list[str] | None, str | None]:
    """The tokens the server accepts (``None``: no authentication) and the one generated
    for this run (``None`` unless a token is required and none was given)."""
    tokens = list(args.token)
    if args.tokens_file:
        tokens += read_tokens_file(args.tokens_file)
    if not tokens:
        tokens = os.environ.get(TOKEN_VARIABLE, "").split()
    if args.auth == "off":
        if tokens and (args.token or args.tokens_file):
            raise SystemExit("agent-envs serve: --auth off and --token/--tokens-file conflict")
        return None, None
    required = args.auth == "on" or bool(tokens) or not is_loopback(args.host)
    if not required:
        return None, None
    if tokens:
        return tokens, None
    from agent_envs.adapters.server.auth import Clients

    _, generated = Clients.generated()
    return [f"default:{generated}"], generated


def build(args: Args) -> Any:
    """The ASGI app the flags describe; a token generated for it (see :func:`resolve_tokens`)
    is ``app.state.generated_token``."""
    tokens, generated = resolve_tokens(args)
    limits = limits_of(args)
    if args.openenv:
        from agent_envs.adapters.server.openenv import create_openenv_app

        env_kwargs = json.loads(args.env_kwargs)
        if not isinstance(env_kwargs, dict):
            raise SystemExit("--env-kwargs must be a JSON object")
        app = create_openenv_app(
            args.openenv,
            max_concurrent_envs=limits.max_sessions,
            token=tokens,
            limits=limits,
            **env_kwargs,
        )
    else:
        from agent_envs.adapters.server.app import create_app

        app = create_app(
            token=tokens,
            limits=limits,
            data_roots=args.data_root,
            model_endpoints=args.model_endpoint,
        )
    app.state.generated_token = generated
    return app


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
    if not app.state.clients.required and not is_loopback(args.host):
        print(
            f"agent-envs serve: WARNING: --auth off on {args.host}: whoever reaches this port "
            "can use the server",
            file=sys.stderr,
        )
    sock = bind_socket(args.host, args.port)
    host, port = sock.getsockname()[:2]
    config = uvicorn_config(app, limits_of(args), log_level=args.log_level, backlog=2048)
    server = uvicorn.Server(config)
    print(f"agent_envs.adapters.server listening on http://{host}:{port}", flush=True)
    if app.state.generated_token is not None:
        print(f"agent_envs.adapters.server token: {app.state.generated_token}", flush=True)
    server.run(sockets=[sock])
    sys.exit(0)


if __name__ == "__main__":
    main(parse_args())
