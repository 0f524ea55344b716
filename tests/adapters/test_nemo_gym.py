"""NeMo Gym's Gymnasium resource-server protocol served for every ``grl/*`` id
(`agent_envs.adapters.nemo_gym`), tested against the protocol as NeMo Gym documents it
(``resources_servers/gymnasium``: ``/reset``, ``/step`` and their bodies) and drives it (its
``gymnasium_agent``: reset, then model call and step until terminated or truncated, session
cookies carried from ``/reset``, ``/close`` when advertised). ``nemo-gym`` itself needs Python
3.10 or >= 3.12 and does not install here (3.11), so the client is written from that
documentation. The server runs on 127.0.0.1 for the module."""

from __future__ import annotations

import gymnasium
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from agent_envs.adapters.nemo_gym import (  # noqa: E402
    SESSION_COOKIE,
    create_nemo_gym_app,
    make_nemo_gym_dataset,
    reply_text,
)

import agent_envs  # noqa: E402, F401
from agent_envs.core.policies import OraclePolicy  # noqa: E402
from tests.adapters.server.conftest import serve  # noqa: E402
from tests.adapters.test_conformance import responses_api_response  # noqa: E402

ENV_ID = "grl/Sokoban-v0"


@pytest.fixture(scope="module")
def url():
    with serve(create_nemo_gym_app(max_sessions=4)) as address:
        yield address


def gymnasium_agent_run(client, row: dict, policy, max_steps: int = 10) -> dict:
    """NeMo Gym's ``gymnasium_agent`` loop (``GymnasiumAgent.run``): reset, then model call
    and step until terminated or truncated (or ``max_steps``), then ``/close`` when the reset
    info advertised it; the model's input grows with its outputs and the observations."""
    reset = client.post("/reset", json=row)
    assert reset.status_code == 200, reset.text
    data = reset.json()
    assert set(data) == {"observation", "info"}
    conversation = list(row["responses_create_params"]["input"])
    conversation.append({"role": "user", "content": data["observation"]})
    total, steps = 0.0, []
    for _ in range(max_steps):
        text = policy(conversation)
        conversation.append({"role": "assistant", "content": text})
        step = client.post("/step", json={**row, "response": responses_api_response(text)})
        assert step.status_code == 200, step.text
        result = step.json()
        assert set(result) == {"observation", "reward", "terminated", "truncated", "info"}
        steps.append(result)
        total += result["reward"]
        if result["terminated"] or result["truncated"]:
            break
        conversation.append({"role": "user", "content": result["observation"]})
    if data["info"].get("supports_explicit_close") is True:
        assert client.post("/close", json={}).status_code == 200
    return {"reset": data, "steps": steps, "reward": total, "conversation": conversation}


def oracle_for(row: dict):
    twin = gymnasium.make(row["env_id"], **row["env_kwargs"])
    twin.reset(seed=row["seed"])

    def policy(conversation):
        text = OraclePolicy()(twin.unwrapped, conversation[-1]["content"])
        twin.step(text)
        return text

    return policy


@pytest.mark.parametrize("env_id", ["grl/Sokoban-v0", "grl/Blocksworld-v0", "grl/GSM8K-v0"])
def test_nemo_gym__gymnasium_agent_loop_plays_the_native_episode(url, env_id):
    for row in make_nemo_gym_dataset(env_id, [0, 1]):
        with httpx.Client(base_url=url, timeout=60) as client:
            run = gymnasium_agent_run(client, row, oracle_for(row))
        native = gymnasium.make(env_id)
        observation, info = native.reset(seed=row["seed"])
        assert run["reset"]["observation"] == observation
        assert run["reset"]["info"] == {**info, "supports_explicit_close": True}
        replies = [m["content"] for m in run["conversation"] if m["role"] == "assistant"]
        for reply, step in zip(replies, run["steps"], strict=True):
            observation, reward, terminated, truncated, info = native.step(reply)
            assert step == {
                "observation": observation,
                "reward": reward,
                "terminated": terminated,
                "truncated": truncated,
                "info": info,
            }
        assert run["steps"][-1]["info"]["success"]


def test_nemo_gym__dataset_rows_hold_the_instructions_and_the_metadata():
    (row,) = make_nemo_gym_dataset(ENV_ID, [7], max_turns=3)
    env = gymnasium.make(ENV_ID, max_turns=3)
    assert row == {
        "responses_create_params": {
            "input": [{"role": "system", "content": env.unwrapped.instructions}]
        },
        "env_id": ENV_ID,
        "seed": 7,
        "env_kwargs": {"max_turns": 3},
    }


def test_nemo_gym__sessions_are_cookies_and_end_with_the_episode(url):
    (row,) = make_nemo_gym_dataset(ENV_ID, [0], max_turns=1)
    with httpx.Client(base_url=url, timeout=60) as client:
        missing = client.post("/step", json={**row, "response": responses_api_response("x")})
        assert missing.status_code == 404
        assert missing.json()["error"]["type"] == "unknown_session"
        reset = client.post("/reset", json=row)
        assert SESSION_COOKIE in reset.cookies
        last = client.post("/step", json={**row, "response": responses_api_response("x")})
        assert last.json()["truncated"] and last.json()["info"]["truncation_reason"] == "max_turns"
        after = client.post("/step", json={**row, "response": responses_api_response("x")})
        assert after.status_code == 404  # the episode ended, and its session with it
        assert client.post("/close", json={}).json() == {"closed": False}


def test_nemo_gym__concurrent_sessions_are_separate_and_bounded(url):
    (row,) = make_nemo_gym_dataset(ENV_ID, [0])
    clients = [httpx.Client(base_url=url, timeout=60) for _ in range(5)]
    try:
        for client in clients:
            client.post("/reset", json=row).raise_for_status()
        up = responses_api_response("<answer>Up</answer>")
        # max_sessions=4: the first client's session was dropped for the fifth
        assert clients[0].post("/step", json={**row, "response": up}).status_code == 404
        turns = [
            client.post("/step", json={**row, "response": up}).json() for client in clients[1:]
        ]
        assert all(turn["info"]["turn"] == 1 for turn in turns)
    finally:
        for client in clients:
            client.close()


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"env_id": ENV_ID, "seed": 0}, 422),  # no responses_create_params
        ({"responses_create_params": {}, "env_id": "grl/Nope-v0", "seed": 0}, 422),
        ({"responses_create_params": {}, "env_id": "CartPole-v1", "seed": 0}, 422),
        ({"responses_create_params": {}, "env_id": ENV_ID, "seed": "0"}, 422),
        ({"responses_create_params": {}, "env_id": ENV_ID, "env_kwargs": {"bad": 1}}, 422),
    ],
)
def test_nemo_gym__bad_rows_are_json_422(url, body, status):
    response = httpx.post(f"{url}/reset", json=body, timeout=60)
    assert response.status_code == status, response.text
    assert set(response.json()["error"]) == {"type", "message"}


def test_nemo_gym__aggregate_metrics(url):
    body = {"verify_responses": [{"reward": 1.0, "info": {"success": True}}, {"reward": 0.0}]}
    metrics = httpx.post(f"{url}/aggregate_metrics", json=body, timeout=60).json()
    assert metrics["agent_metrics"] == {"num_rollouts": 2, "mean/reward": 0.5, "mean/success": 0.5}
    assert metrics["key_metrics"] == metrics["agent_metrics"]
    bad = httpx.post(f"{url}/aggregate_metrics", json={"verify_responses": 3}, timeout=60)
    assert bad.status_code == 422


@pytest.mark.parametrize(
    ("output", "text"),
    [
        ([{"type": "message", "content": [{"type": "output_text", "text": "a"}]}], "a"),
        (
            [
                {"type": "reasoning", "summary": []},
                {"type": "message", "content": [{"type": "output_text", "text": "a"}]},
                {"type": "function_call", "name": "f", "arguments": "{}"},
                {"type": "message", "content": [{"type": "output_text", "text": "b"}]},
            ],
            "ab",
        ),
        ([{"type": "message", "content": "plain"}], "plain"),
        ([{"type": "message", "content": [{"type": "refusal", "refusal": "no"}]}], ""),
        ("not a list", ""),
    ],
)
def test_nemo_gym__reply_text_reads_output_text_parts(output, text):
    assert reply_text({"output": output}) == text
    assert reply_text(None) == ""


def test_nemo_gym__configuration_errors():
    with pytest.raises(ValueError, match="max_sessions"):
        create_nemo_gym_app(max_sessions=0)
    with pytest.raises(ValueError, match="grl/"):
        make_nemo_gym_dataset("CartPole-v1", [0])
