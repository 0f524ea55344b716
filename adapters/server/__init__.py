"""The HTTP env server and its clients (the ``[server]`` extra: fastapi, uvicorn, httpx).

- ``agent-envs serve --host 127.0.0.1 --port 8000 [--token NAME:TOKEN ...]`` serves stateful
  sessions of every ``grl/*`` id (`agent_envs.adapters.server.app`); ``--openenv grl/Sokoban-v0``
  serves one id as an OpenEnv environment instead (`agent_envs.adapters.server.openenv`).
  Beyond loopback a token is required; each token names a client, which owns the sessions it
  creates (`agent_envs.adapters.server.auth`); sessions, bytes and time are limited per client
  and in all (:class:`Limits`); paths in requests stay inside the server's data roots.
- :class:`RemoteEnv` is one session as a ``gymnasium.Env``; :class:`RemoteVectorEnv` many
  sessions over several servers, which `agent_envs.adapters.loop.collector.RolloutCollector` drives
  like a local vector env. Both survive server restarts (`agent_envs.adapters.server.client`).

Importing this package imports no web framework; the app and clients import theirs when
built.
"""

from __future__ import annotations

from typing import Any

from agent_envs.adapters.server.client import (
    RemoteEnv,
    RemoteVectorEnv,
    ServerError,
    ServerUnavailable,
)
from agent_envs.adapters.server.limits import Limits

__all__ = [
    "Limits",
    "RemoteEnv",
    "RemoteVectorEnv",
    "ServerError",
    "ServerUnavailable",
    "create_app",
]


def create_app(**kwargs: Any) -> Any:
    """The FastAPI app of the env server; see `agent_envs.adapters.server.app.create_app`."""
    from agent_envs.adapters.server.app import create_app as build

    return build(**kwargs)
