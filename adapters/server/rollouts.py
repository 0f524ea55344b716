"""The batch endpoint's work: episodes against an OpenAI-compatible server, as records.

AgentGym's env servers take ``env``, ``model``, ``base_url``, ``ids`` and ``max_round`` and
run the episodes themselves; here ``ids`` are episode seeds (for dataset envs the seed picks
the item), one group of ``group_size`` episodes each, and the episodes are collected by
`agent_envs.adapters.loop.collector.RolloutCollector` with
`agent_envs.adapters.engines.openai_http.OpenAIEngine` on the chat endpoint, so they are the same
`Trajectory` records a local run writes.

**Which model servers.** The client names ``base_url`` and may pass an ``api_key``; the
server calls only endpoints that whoever started it allowed (:class:`ModelEndpoints`,
``--model-endpoint``): by default any loopback address (``localhost``, 127.0.0.0/8, ``::1``:
a model served on the same machine), otherwise exactly the listed API roots. Anything else
is refused with 403 ``endpoint_not_allowed`` before a connection is made, so a client's key
goes nowhere else. URLs with credentials, a query, a fragment or dot segments are refused.
"""

from __future__ import annotations

import contextlib
import posixpath
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

from agent_envs.adapters.server.auth import is_loopback
from agent_envs.adapters.server.errors import Refused
from agent_envs.adapters.server.limits import Limits
from agent_envs.adapters.server.paths import DataRoots
from agent_envs.adapters.server.sessions import make_env

__all__ = ["LOOPBACK", "EndpointNotAllowed", "ModelEndpoints", "RolloutGate", "run_rollouts"]

#: the allow-list entry for every loopback endpoint (the default)
LOOPBACK = "loopback"
_DEFAULT_PORTS = {"http": 80, "https": 443}


class EndpointNotAllowed(Refused):
    status = 403
    kind = "endpoint_not_allowed"


class ModelEndpoints:
    """The model endpoints ``/rollouts`` may call.

    Args:
        allowed: API roots (``http://10.0.0.5:8000/v1``: that scheme, host and port, and paths
            under ``/v1``) and/or ``"loopback"`` (any http(s) URL on a loopback address).
            Empty: ``/rollouts`` calls nothing.
    """

    def __init__(self, allowed: Iterable[str] = (LOOPBACK,)) -> None:
        self.loopback = False
        self.roots: list[tuple[str, str, int, str]] = []
        for entry in allowed:
            if entry == LOOPBACK:
                self.loopback = True
                continue
            parts = _parts(entry)
            if parts is None:
                raise ValueError(
                    f"a model endpoint must be 'loopback' or an http(s) URL without "
                    f"credentials, query or dot segments, got {entry!r}"
                )
            self.roots.append(parts)

    def check(self, base_url: str) -> None:
        """Raise `EndpointNotAllowed` unless ``base_url`` may be called."""
        parts = _parts(base_url)
        if parts is None:
            raise EndpointNotAllowed(
                "base_url must be an http(s) URL without credentials, query, fragment or dot "
                "segments"
            )
        scheme, host, port, path = parts
        if self.loopback and is_loopback(host):
            return
        for root_scheme, root_host, root_port, root_path in self.roots:
            inside = path == root_path or path.startswith(root_path.rstrip("/") + "/")
            if (scheme, host, port) == (root_scheme, root_host, root_port) and inside:
                return
        raise EndpointNotAllowed(
            f"base_url {base_url!r} is not one of the model endpoints this server may call "
            "(its --model-endpoint list; by default loopback addresses only)"
        )


class RolloutGate:
    """What ``/rollouts`` admits: allowed endpoints (403), at most ``max_rollout_episodes``
    episodes a request (422), paths inside the data roots (403), and at most
    ``max_rollouts`` requests running, ``max_rollouts_per_client`` of one client (429)."""

    def __init__(self, endpoints: ModelEndpoints, limits: Limits, data_roots: DataRoots) -> None:
        self.endpoints = endpoints
        self.limits = limits
        self.data_roots = data_roots
        self.running: Counter[str] = Counter()

    @contextlib.contextmanager
    def admit(
        self,
        client: str,
        base_url: str,
        ids: Sequence[int],
        group_size: int,
        env_kwargs: dict[str, Any],
    ) -> Iterator[None]:
        """Refuse the request, or count it as running inside the ``with`` block."""
        limits = self.limits
        self.endpoints.check(base_url)
        episodes = len(ids) * group_size
        if episodes > limits.max_rollout_episodes:
            raise Refused(
                f"{len(ids)} ids x group_size {group_size} = {episodes} episodes is over "
                f"max_rollout_episodes={limits.max_rollout_episodes}: split the request",
                status=422,
                kind="too_many_episodes",
            )
        self.data_roots.check_env_kwargs(env_kwargs)
        if self.running[client] >= limits.max_rollouts_per_client:
            raise Refused(
                f"client {client!r} already runs max_rollouts_per_client="
                f"{limits.max_rollouts_per_client} /rollouts request(s); wait for it",
                status=429,
                kind="too_many_rollouts",
            )
        if sum(self.running.values()) >= limits.max_rollouts:
            raise Refused(
                f"the server runs max_rollouts={limits.max_rollouts} /rollouts requests; "
                "retry later",
                status=429,
                kind="too_many_rollouts",
            )
        self.running[client] += 1
        try:
            yield
        finally:
            self.running[client] -= 1
            if not self.running[client]:
                del self.running[client]


def _parts(url: Any) -> tuple[str, str, int, str] | None:
    """(scheme, host, port, path) of a plain http(s) URL; ``None`` for anything else."""
    if not isinstance(url, str):
        return None
    try:
        split = urlsplit(url.strip())
        port = split.port
    except ValueError:
        return None
    scheme = split.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not split.hostname:
        return None
    if split.username is not None or split.password is not None or split.query or split.fragment:
        return None
    path = split.path or "/"
    if posixpath.normpath(path) != path.rstrip("/") and path != "/":
        return None  # dot segments, doubled slashes
    return scheme, split.hostname.lower(), port or _DEFAULT_PORTS[scheme], path


def run_rollouts(
    env_id: str,
    model: str,
    base_url: str,
    ids: list[int],
    *,
    max_round: int | None = None,
    group_size: int = 1,
    max_new_tokens: int = 256,
    sampling: dict[str, Any] | None = None,
    api_key: str | None = None,
    timeout: float = 60.0,
    env_kwargs: dict[str, Any] | None = None,
    prefixes: tuple[str, ...] = ("grl/",),
    data_roots: DataRoots | None = None,
) -> list[dict[str, Any]]:
    """``Trajectory.to_dict()`` of every episode, in ``ids`` order (groups consecutive).
    ``base_url`` must have passed `ModelEndpoints.check`; with ``data_roots`` the env kwargs'
    paths must lie inside them."""
    from agent_envs.adapters.engines.openai_http import OpenAIEngine
    from agent_envs.adapters.loop.collector import collect_episodes
    from agent_envs.adapters.loop.engine import SamplingConfig
    from agent_envs.adapters.server.sessions import BadEnvArguments

    if not ids:
        return []
    # refuses bad ids and kwargs
    make_env(env_id, dict(env_kwargs or {}), prefixes, data_roots or DataRoots()).close()
    try:
        config = SamplingConfig(**(sampling or {}))
    except (TypeError, ValueError) as error:
        raise BadEnvArguments(f"sampling: {error}") from error
    engine = OpenAIEngine(base_url, model, sampling=config, api_key=api_key, timeout=timeout)
    try:
        trajectories = collect_episodes(
            env_id,
            engine,
            list(ids),
            group_size=group_size,
            max_turns=max_round,
            max_new_tokens=max_new_tokens,
            **(env_kwargs or {}),
        )
        return [trajectory.to_dict() for trajectory in trajectories]
    finally:
        engine.close()
