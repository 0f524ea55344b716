"""Conformance: the same seeded episodes, played natively and through every adapter, are equal.

Each case is an env id, a seed and a list of replies (the oracle's, the random baseline's, or
malformed ones: empty, untagged, half-formed, illegal, unicode, huge), fixed by a native
play beforehand so that the env itself ends every episode. :data:`ADAPTERS` maps an adapter's
name to a function that plays a batch of cases through it and returns, per case and turn, a
dict with the fields the adapter exposes among :data:`FIELDS` (the observation after the turn,
its reward, whether the episode ended, the env's ``success`` and ``truncation_reason``); each
must equal the native ``gymnasium.make(id)`` play, and the turn counts must be equal. A new
adapter joins with one line in :data:`ADAPTERS`.

Adapters whose framework is not installed here are skipped with the reason (verifiers and
SkyRL-gym run in ``.venv-frameworks``, Tunix in ``.venv-tunix``: ``.ci/frameworks.sh``).
This module also holds :class:`ChatServer`, the OpenAI-compatible test server the verifiers
and token tests use.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import gymnasium
import pytest

import agent_envs  # noqa: F401
from agent_envs.core.policies import OraclePolicy, RandomPolicy

ENV_IDS = ("grl/Sokoban-v0", "grl/GSM8K-v0")
SEEDS = (0, 1)
KINDS = ("oracle", "random", "malformed")
#: replies no model should send, each a different way of being wrong
MALFORMED = (
    "",
    "I think I should move up, but no tags.",
    "<answer>Up",
    "<answer></answer>",
    "<answer>Fly || Up</answer>",
    "\u2603 unicode \u00e9\u4e2d <answer>Left</answer> \U0001f600",
    "<think>" + "x" * 3000 + "</think><answer>Down</answer>",
    "\t<answer> 7 </answer>\n\n",
)
#: what a turn may be compared on (``return_so_far``: the rewards up to this turn, summed in
#: order, for adapters that expose the running return instead of each reward)
FIELDS = ("observation", "reward", "return_so_far", "done", "success", "truncation_reason")
SERVER_TIME_LIMIT_S = 600


@dataclass(frozen=True)
class Case:
    env_id: str
    seed: int
    kind: str
    replies: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.env_id}#{self.seed}:{self.kind}"


def native_turns(case: Case) -> list[dict[str, Any]]:
    """The case played on ``gymnasium.make(env_id)``: every field of every turn."""
    env = gymnasium.make(case.env_id)
    env.reset(seed=case.seed)
    turns, total = [], 0.0
    for reply in case.replies:
        observation, reward, terminated, truncated, info = env.step(reply)
        total += float(reward)
        turns.append(
            {
                "observation": observation,
                "reward": float(reward),
                "return_so_far": total,
                "done": bool(terminated or truncated),
                "success": bool(info["success"]),
                "truncation_reason": info["truncation_reason"],
            }
        )
        if terminated or truncated:
            break
    env.close()
    return turns


def _replies(env_id: str, seed: int, kind: str) -> tuple[str, ...]:
    """Replies that the env ends on by itself (oracle: until solved; others: to the budget)."""
    env = gymnasium.make(env_id)
    observation, _ = env.reset(seed=seed)
    policy = {"oracle": OraclePolicy(), "random": RandomPolicy(seed)}.get(kind)
    replies = []
    for turn in range(200):
        reply = (
            MALFORMED[turn % len(MALFORMED)]
            if policy is None
            else policy(env.unwrapped, observation)
        )
        replies.append(reply)
        observation, _, terminated, truncated, _ = env.step(reply)
        if terminated or truncated:
            env.close()
            return tuple(replies)
    raise AssertionError(f"{env_id} seed {seed} did not end within 200 {kind} replies")


CASES = [
    Case(env_id, seed, kind, _replies(env_id, seed, kind))
    for env_id in ENV_IDS
    for seed in SEEDS
    for kind in KINDS
]


# ====================================================================== OpenAI-compatible server
@dataclass
class Reply:
    """A server's answer: the text and, like vLLM's server, the sampled ids and logprobs."""

    text: str
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    finish_reason: str = "stop"


class ChatServer:
    """An OpenAI-compatible server on 127.0.0.1 (a free port, stopped on exit and after
    :data:`SERVER_TIME_LIMIT_S`): ``/v1/chat/completions`` (plain and streamed) and
    ``/v1/completions`` answered by ``respond(endpoint, body) -> Reply``, with vLLM's
    ``token_ids`` field and logprobs when the reply has them. ``log`` keeps ``(endpoint, body,
    reply)`` of every request."""

    def __init__(self, respond: Callable[[str, dict[str, Any]], Reply]) -> None:
        self.respond = respond
        self.log: list[tuple[str, dict[str, Any], Reply]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint = "chat" if self.path.endswith("/chat/completions") else "completions"
                reply = server.respond(endpoint, body)
                server.log.append((endpoint, body, reply))
                if endpoint == "chat" and body.get("stream"):
                    data, kind = _stream(body, reply), "text/event-stream"
                else:
                    data = json.dumps(_completion(endpoint, body, reply)).encode()
                    kind = "application/json"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._timer = threading.Timer(SERVER_TIME_LIMIT_S, self._httpd.shutdown)

    def __enter__(self) -> ChatServer:
        self._thread.start()
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        self._httpd.shutdown()
        self._httpd.server_close()


def _usage(reply: Reply) -> dict[str, int]:
    count = len(reply.token_ids or ()) or 1
    return {"prompt_tokens": 1, "completion_tokens": count, "total_tokens": count + 1}


def _completion(endpoint: str, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "finish_reason": reply.finish_reason}
    if endpoint == "chat":
        choice["message"] = {"role": "assistant", "content": reply.text}
        if reply.logprobs is not None and body.get("logprobs"):
            content = [
                {"token": "", "logprob": v, "bytes": None, "top_logprobs": []}
                for v in reply.logprobs
            ]
            choice["logprobs"] = {"content": content}
    else:
        choice["text"] = reply.text
        if reply.logprobs is not None and body.get("logprobs") is not None:
            choice["logprobs"] = {"token_logprobs": reply.logprobs, "tokens": [], "text_offset": []}
    if reply.token_ids is not None and body.get("return_token_ids"):
        choice["token_ids"] = reply.token_ids
    kind = "chat.completion" if endpoint == "chat" else "text_completion"
    return {
        "id": "cmpl-test",
        "object": kind,
        "created": 0,
        "model": body.get("model", "test"),
        "choices": [choice],
        "usage": _usage(reply),
    }


def _stream(body: dict[str, Any], reply: Reply) -> bytes:
    base = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0}
    base["model"] = body.get("model", "test")
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": reply.text}}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}]},
        {**base, "choices": [], "usage": _usage(reply)},
    ]
    events = [b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks]
    return b"".join(events) + b"data: [DONE]\n\n"


def scripted_chat(cases: list[Case]) -> Callable[[str, dict[str, Any]], Reply]:
    """``respond`` for :class:`ChatServer`: the reply of the case whose first observation
    opens the conversation, for the turn its count of assistant messages says."""
    script = {_first_observation(case): case.replies for case in cases}
    if len(script) != len(cases):
        raise ValueError("cases of one scripted server must start from distinct observations")

    def respond(endpoint: str, body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        first = next(m["content"] for m in messages if m["role"] == "user")
        turn = sum(message["role"] == "assistant" for message in messages)
        return Reply(script[first][turn])

    return respond


def _first_observation(case: Case) -> str:
    env = gymnasium.make(case.env_id)
    observation, _ = env.reset(seed=case.seed)
    env.close()
    return observation


# ====================================================================== players
def _need(*modules: str) -> None:
    for module in modules:
        pytest.importorskip(module, reason=f"{module} is not installed in this environment")


class ScriptEngine:
    """The rollout collector's engine for one case: the reply of turn ``k`` is ``replies[k]``
    (``k`` = assistant messages so far); with a ``tokenizer``, its ids and the stop token, as
    the scripted engines give them."""

    name = "script"

    def __init__(self, replies: tuple[str, ...], tokenizer: Any = None) -> None:
        self.replies = replies
        self.tokenizer = tokenizer

    def generate(self, requests: list[Any]) -> list[Any]:
        from agent_envs.adapters.loop.engine import Generation

        generations = []
        for request in requests:
            text = self.replies[sum(m["role"] == "assistant" for m in request.messages)]
            ids = None
            if self.tokenizer is not None:
                ids = self.tokenizer.encode(text, add_special_tokens=False)
                ids += list(request.stop_token_ids[:1])
            generations.append(Generation(text, token_ids=ids))
        return generations


def _trajectory_turns(trajectory: Any) -> list[dict[str, Any]]:
    steps = trajectory.steps
    turns = []
    for index, step in enumerate(steps):
        last = index == len(steps) - 1
        turns.append(
            {
                "observation": trajectory.final_observation
                if last
                else steps[index + 1].observation,
                "reward": step.reward,
                "done": last and (trajectory.terminated or trajectory.truncated),
                "success": bool(step.info["success"]),
                "truncation_reason": step.info["truncation_reason"],
            }
        )
    return turns


def play_trl_rollout(cases: list[Case], resources: Resources) -> list[list[dict[str, Any]]]:
    """TRL's ``rollout_func`` route: the rows' records (``on_trajectories``), token-level
    (the scripted replies' ids under the tests' ChatML tokenizer)."""
    _need("trl", "datasets", "transformers")
    from agent_envs.adapters.trl import episode_key, make_rollout_func

    tokenizer = resources.tokenizer()
    results = []
    for case in cases:
        records: list[Any] = []
        engine = ScriptEngine(case.replies, tokenizer)
        rollout = make_rollout_func(
            case.env_id, engine=engine, max_total_tokens=1 << 20, on_trajectories=records.extend
        )
        rows = rollout([episode_key(case.env_id, case.seed)], None)
        (trajectory,) = records
        assert rows["num_turns"] == [trajectory.num_turns]
        assert rows["episode_return"] == [trajectory.episode_return]
        results.append(_trajectory_turns(trajectory))
    return results


def play_trl_environment(cases: list[Case], resources: Resources) -> list[list[dict[str, Any]]]:
    """TRL's ``environment_factory`` route: the tool class TRL instantiates per episode (its
    ``get_reward()`` is the running return)."""
    _need("datasets")
    from agent_envs.adapters.trl import make_environment_factory

    over = "\nThe episode is over."
    results = []
    for case in cases:
        tool = make_environment_factory(case.env_id)()
        tool.reset(seed=case.seed)
        turns = []
        for reply in case.replies:
            text = tool.play(reply)
            done = tool.done
            turns.append(
                {
                    "observation": text[: -len(over)] if done else text,
                    "return_so_far": tool.get_reward(),
                    "done": done,
                    "success": bool(tool.info["success"]),
                    "truncation_reason": tool.info["truncation_reason"],
                }
            )
            if done:
                break
        results.append(turns)
    return results


def _gym_env_turns(env: Any, case: Case) -> list[dict[str, Any]]:
    env.reset(seed=case.seed)
    turns = []
    for reply in case.replies:
        observation, reward, terminated, truncated, info = env.step(reply)
        turns.append(
            {
                "observation": observation,
                "reward": float(reward),
                "done": bool(terminated or truncated),
                "success": bool(info["success"]),
                "truncation_reason": info["truncation_reason"],
            }
        )
        if terminated or truncated:
            break
    return turns


def play_remote_env(cases: list[Case], resources: Resources) -> list[list[dict[str, Any]]]:
    """The env server's client, ``RemoteEnv`` (a ``gymnasium.Env``), over WebSocket and HTTP."""
    _need("fastapi", "uvicorn", "httpx", "websockets", "websocket")
    from agent_envs.adapters.server import RemoteEnv, create_app

    url = resources.serve("env-server", create_app)
    results = []
    for number, case in enumerate(cases):
        env = RemoteEnv(url, case.env_id, transport=("ws", "http")[number % 2])
        try:
            results.append(_gym_env_turns(env, case))
        finally:
            env.close()
    return results


def play_openenv(cases: list[Case], resources: Resources) -> list[list[dict[str, Any]]]:
    """A ``grl/*`` id served through OpenEnv's server, played with OpenEnv's own client."""
    _need("openenv", "fastapi", "uvicorn")
    from agent_envs.adapters.server.openenv import create_openenv_app
    from openenv.core import GenericEnvClient

    results = []
    for case in cases:
        url = resources.serve(f"openenv:{case.env_id}", lambda c=case: create_openenv_app(c.env_id))
        with GenericEnvClient(base_url=url).sync() as client:
            client.reset(seed=case.seed)
            turns = []
            for reply in case.replies:
                result = client.step({"message": reply})
                seen = result.observation
                turns.append(
                    {
                        "observation": seen["text"],
                        "reward": float(result.reward),
                        "done": bool(result.done),
                        "success": bool(seen["info"]["success"]),
                        "truncation_reason": seen["info"]["truncation_reason"],
                    }
                )
                if result.done:
                    break
        results.append(turns)
    return results


def play_textarena(cases: list[Case], resources: Resources) -> list[list[dict[str, Any]]]:
    """Our envs as TextArena games (``to_textarena``), stepped with TextArena's API; the reward
    is TextArena's ``step_info``, success the game info at ``close()``; no truncation reason."""
    _need("textarena")
    import textarena as ta
    from agent_envs.adapters.textarena import to_textarena

    results = []
    for case in cases:
        game = to_textarena(case.env_id, wrappers=())
        game.reset(num_players=1, seed=case.seed)
        turns = []
        for reply in case.replies:
            done, step_info = game.step(reply)
            _, seen = game.get_observation()
            boards = [text for _, text, kind in seen if kind == ta.ObservationType.GAME_BOARD]
            turns.append({"observation": boards[-1], "reward": step_info["reward"], "done": done})
            if done:
                break
        _, game_info = game.close()
        turns[-1]["success"] = bool(game_info[0]["success"])
        results.append(turns)
    return results


def play_pettingzoo(cases: list[Case], resources: Resources) -> list[list[dict[str, Any]]]:
    """Self-play AEC env: both agents send the case's replies; player_0's view is compared."""
    _need("pettingzoo")
    from agent_envs.adapters.pettingzoo import self_play_aec_env

    results = []
    for case in cases:
        env = self_play_aec_env(case.env_id)
        env.reset(seed=case.seed)
        sent = {"player_0": 0, "player_1": 0}
        turns: list[dict[str, Any]] = []
        for agent in env.agent_iter(max_iter=4 * len(case.replies) + 4):
            observation, reward, terminated, truncated, info = env.last()
            if agent == "player_0" and sent[agent]:
                turns.append(
                    {
                        "observation": str(observation),
                        "reward": float(reward),
                        "done": bool(terminated or truncated),
                        "success": bool(info["success"]),
                        "truncation_reason": info["truncation_reason"],
                    }
                )
            if terminated or truncated:
                env.step(None)
                continue
            env.step(case.replies[sent[agent]])
            sent[agent] += 1
        env.close()
        results.append(turns)
    return results


def play_ray(cases: list[Case], resources: Resources) -> list[list[dict[str, Any]]]:
    """``make_vec(..., mode="ray")`` (sub-envs in Ray actors) driven by the rollout collector."""
    _need("ray")
    import agent_envs.adapters.ray  # noqa: F401  (registers mode="ray")
    from agent_envs.adapters.loop.collector import RolloutCollector

    resources.ray()
    vector_envs: dict[str, Any] = {}  # one Ray-held env per id, reset for every case
    results = []
    try:
        for case in cases:
            if case.env_id not in vector_envs:
                vector_envs[case.env_id] = gymnasium.make_vec(
                    case.env_id, num_envs=1, mode="ray", num_workers=1, autoreset_mode="disabled"
                )
            collector = RolloutCollector(vector_envs[case.env_id], ScriptEngine(case.replies))
            (trajectory,) = collector.collect([case.seed])
            results.append(_trajectory_turns(trajectory))
    finally:
        for vec in vector_envs.values():
            vec.close()
    return results


def play_tunix(cases: list[Case], resources: Resources) -> list[list[dict[str, Any]]]:
    """``TunixTaskEnv``: the env as a Tunix agentic environment (``BaseTaskEnv``)."""
    _need("tunix")
    from agent_envs.adapters.tunix import TunixTaskEnv

    results = []
    for case in cases:
        env = TunixTaskEnv({"seed": case.seed}, env_id=case.env_id)
        env.reset()
        turns = []
        for reply in case.replies:
            observation, reward, done, info = env.step(reply)  # BaseTaskEnv.step's 4-tuple
            turns.append(
                {
                    "observation": observation,
                    "reward": float(reward),
                    "done": bool(done),
                    "success": bool(info["success"]),
                    "truncation_reason": info["truncation_reason"],
                }
            )
            if done:
                break
        env.close()
        results.append(turns)
    return results


def play_skyrl(cases: list[Case], resources: Resources) -> list[list[dict[str, Any]]]:
    """A SkyRL text env (``skyrl_gym.make``), in SkyRL's generator loop: ``init(prompt)``,
    then ``step(reply)`` until ``done``."""
    _need("skyrl_gym")
    import skyrl_gym
    from agent_envs.adapters.skyrl import make_skyrl_dataset, register_skyrl_envs

    register_skyrl_envs()
    results = []
    for case in cases:
        (row,) = make_skyrl_dataset(case.env_id, [case.seed])
        extras = {key: value for key, value in row.items() if key not in ("prompt", "env_class")}
        env = skyrl_gym.make(row["env_class"], env_config={}, extras=extras)
        env.init(row["prompt"])
        turns = []
        for reply in case.replies:
            output = env.step(reply)
            metadata = output["metadata"]
            observations = output["observations"]
            turns.append(
                {
                    "observation": observations[-1]["content"]
                    if observations
                    else metadata["observation"],
                    "reward": float(output["reward"]),
                    "done": bool(output["done"]),
                    "success": bool(metadata["success"]),
                    "truncation_reason": metadata["truncation_reason"],
                }
            )
            if output["done"]:
                break
        env.close()
        results.append(turns)
    return results


def play_nemo_gym(cases: list[Case], resources: Resources) -> list[list[dict[str, Any]]]:
    """The NeMo Gym Gymnasium resource-server protocol (``/reset``, ``/step``), driven the way
    NeMo Gym's ``gymnasium_agent`` drives it (session cookies, Responses-API bodies)."""
    _need("fastapi", "uvicorn", "httpx")
    import httpx
    from agent_envs.adapters.nemo_gym import create_nemo_gym_app, make_nemo_gym_dataset

    url = resources.serve("nemo-gym", create_nemo_gym_app)
    results = []
    for case in cases:
        (row,) = make_nemo_gym_dataset(case.env_id, [case.seed])
        with httpx.Client(base_url=url, timeout=60) as client:
            response = client.post("/reset", json=row)  # sets the session cookie (client jar)
            response.raise_for_status()
            assert response.cookies, "/reset set no session cookie"
            turns = []
            for reply in case.replies:
                body = {**row, "response": responses_api_response(reply)}
                step = client.post("/step", json=body)
                step.raise_for_status()
                data = step.json()
                done = data["terminated"] or data["truncated"]
                turns.append(
                    {
                        "observation": data["observation"],
                        "reward": data["reward"],
                        "done": done,
                        "success": bool(data["info"]["success"]),
                        "truncation_reason": data["info"]["truncation_reason"],
                    }
                )
                if done:
                    break
        results.append(turns)
    return results


def responses_api_response(text: str) -> dict[str, Any]:
    """A model's reply as NeMo Gym's ``NeMoGymResponse`` (OpenAI Responses API) carries it."""
    return {
        "id": "resp-test",
        "created_at": 0.0,
        "model": "test",
        "object": "response",
        "output": [
            {
                "id": "msg-0",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def play_verifiers(cases: list[Case], resources: Resources) -> list[list[dict[str, Any]]]:
    """verifiers' own episode loop (``Env.run_slot`` with its ``null`` harness in the
    subprocess runtime) on :func:`load_environment`, against a scripted OpenAI-compatible
    server; one verifiers env per id and kind (the server tells episodes apart by their
    first observation)."""
    _need("verifiers.v1")
    import verifiers.v1 as vf
    from agent_envs.adapters.verifiers import load_environment

    resources.env(PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    batches: dict[tuple[str, str], list[int]] = {}
    for index, case in enumerate(cases):
        batches.setdefault((case.env_id, case.kind), []).append(index)

    async def run(indices: list[int]) -> list[Any]:
        batch = [cases[index] for index in indices]
        server = resources.enter(ChatServer(scripted_chat(batch)))
        env = load_environment(batch[0].env_id, seeds=[case.seed for case in batch])
        ctx = vf.ModelContext(model="scripted", client=vf.EvalClientConfig(base_url=server.url))
        async with env.serving():
            slots = [slot for task in env.taskset for slot in env.slots(task)]
            return await asyncio.gather(*(env.run_slot(slot, ctx) for slot in slots))

    async def run_all() -> list[list[Any]]:
        return await asyncio.gather(*(run(indices) for indices in batches.values()))

    episodes: list[Any] = [None] * len(cases)
    for indices, found in zip(batches.values(), asyncio.run(run_all()), strict=True):
        for index, episode in zip(indices, found, strict=True):
            episodes[index] = episode
    return [_verifiers_turns(episode) for episode in episodes]


def _verifiers_turns(episode: Any) -> list[dict[str, Any]]:
    assert episode.ok, episode.errors
    (trace,) = episode.traces
    assert not trace.errors, trace.errors
    info = trace.info
    users = [node.message.content for node in trace.nodes if node.message.role == "user"]
    turns = []
    for index, reward in enumerate(info["rewards"]):
        last = index == len(info["rewards"]) - 1
        turn = {
            "observation": info["final_observation"] if last else users[index + 1],
            "reward": reward,
            "done": last,
        }
        if last:
            turn.update(success=info["success"], truncation_reason=info["truncation_reason"])
        turns.append(turn)
    assert trace.rewards["episode_return"].score == pytest.approx(sum(info["rewards"]))
    return turns


# ====================================================================== the table
#: adapter name -> player; a new adapter joins here
ADAPTERS: dict[str, Callable[[list[Case], Any], list[list[dict[str, Any]]]]] = {
    "trl-rollout_func": play_trl_rollout,
    "trl-environment_factory": play_trl_environment,
    "server-RemoteEnv": play_remote_env,
    "server-openenv_client": play_openenv,
    "textarena": play_textarena,
    "pettingzoo-self_play": play_pettingzoo,
    "ray": play_ray,
    "tunix-TaskEnv": play_tunix,
    "skyrl-gym": play_skyrl,
    "nemo-gym-protocol": play_nemo_gym,
    "verifiers": play_verifiers,
}


class Resources:
    """Servers, a Ray cluster and environment settings the players share, for the module."""

    def __init__(self, stack: contextlib.ExitStack) -> None:
        self.stack = stack
        self.urls: dict[str, str] = {}

    def enter(self, context: Any) -> Any:
        return self.stack.enter_context(context)

    def env(self, **variables: str) -> None:
        from unittest import mock

        self.enter(mock.patch.dict(os.environ, variables))

    def serve(self, name: str, build: Callable[[], Any]) -> str:
        """The URL of ``build()`` (an ASGI app) served by uvicorn on 127.0.0.1 (made once),
        with the env-server tests' ``serve`` (imported here: it needs the [server] extra)."""
        if name not in self.urls:
            from tests.adapters.server.conftest import serve

            self.urls[name] = self.enter(serve(build()))
        return self.urls[name]

    def tokenizer(self) -> Any:
        """The tests' ChatML tokenizer (``conftest.build_tokenizer``), built once."""
        if "tokenizer" not in self.urls:
            from tests.adapters.conftest import build_tokenizer

            self._tokenizer = build_tokenizer()
            self.urls["tokenizer"] = "built"
        return self._tokenizer

    def ray(self) -> None:
        import ray

        if not ray.is_initialized():
            ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
            self.stack.callback(ray.shutdown)


@pytest.fixture(scope="module")
def resources() -> Iterator[Resources]:
    with contextlib.ExitStack() as stack:
        yield Resources(stack)


@pytest.fixture(scope="module")
def native() -> list[list[dict[str, Any]]]:
    return [native_turns(case) for case in CASES]


def test_conformance__cases_are_ended_by_the_env_and_cover_every_ending(native):
    for case, turns in zip(CASES, native, strict=True):
        assert turns[-1]["done"], case.name
        assert len(turns) == len(case.replies), case.name
    reasons = {turns[-1]["truncation_reason"] for turns in native}
    assert {None, "max_turns"} <= reasons
    assert any(turns[-1]["success"] for turns in native)
    assert any(not turns[-1]["success"] for turns in native)


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_conformance__adapter_plays_the_native_episodes(adapter, native, resources):
    played = ADAPTERS[adapter](CASES, resources)
    assert len(played) == len(CASES)
    for case, expected, turns in zip(CASES, native, played, strict=True):
        assert len(turns) == len(expected), f"{adapter} {case.name}: turn count"
        for number, (want, got) in enumerate(zip(expected, turns, strict=True)):
            assert set(got) <= set(FIELDS), f"{adapter} exposes unknown fields {set(got)}"
            assert {"observation", "done"} <= set(got), f"{adapter}: too little exposed"
            assert {"reward", "return_so_far"} & set(got), f"{adapter}: no reward exposed"
            for field in got:
                assert got[field] == want[field], (
                    f"{adapter} {case.name} turn {number}: {field} {got[field]!r} != "
                    f"native {want[field]!r}"
                )
        final = turns[-1]
        assert "success" in final, f"{adapter}: the episode's success is not exposed"


#: rooms of agent_envs.adapters that play no env for another framework
NOT_ADAPTERS = {"loop", "engines", "advantages", "sft", "examples"}


def test_conformance__every_adapter_room_has_a_row():
    """Every room of ``agent_envs.adapters`` that plays envs for another framework has a row
    here, named after it (a new room without a row fails)."""
    folder = Path(importlib.util.find_spec("agent_envs.adapters").origin).parent
    rooms = {
        path.stem
        for path in folder.iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").exists()
    }
    assert {"trl", "server", "verifiers", "skyrl", "nemo_gym"} <= rooms
    for room in sorted(rooms - NOT_ADAPTERS):
        prefix = room.replace("_", "-")
        assert any(name.startswith(prefix) for name in ADAPTERS), f"no conformance row for {room}"
