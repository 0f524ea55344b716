"""`agent_envs.optional`: a missing optional dependency names the extra that installs it, at
every place the package imports one."""

from __future__ import annotations

import importlib
import re
import sys

import numpy as np
import pytest
from gymnasium.error import DependencyNotInstalled

from agent_envs.optional import EXTRAS, missing, require


def test_optional__require_returns_the_module():
    assert require("json.decoder", "dev") is sys.modules["json.decoder"]


def test_optional__missing_module_names_the_extra_and_what_needs_it():
    with pytest.raises(DependencyNotInstalled) as raised:
        require("agent_envs_no_such_module", "train", needed_by="the trainer")
    assert str(raised.value) == (
        "the trainer needs agent_envs_no_such_module, which is not installed; it comes with "
        "the [train] extra: pip install 'agent-envs[train]'"
    )
    assert isinstance(raised.value.__cause__, ImportError)


def test_optional__pip_name_given_where_it_differs_from_the_import_name(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL.Image", None)
    with pytest.raises(DependencyNotInstalled, match=re.escape("PIL.Image (pip package Pillow)")):
        require("PIL.Image", "render")


def test_optional__unknown_extra_is_refused():
    with pytest.raises(ValueError, match="extra must be one of"):
        missing("torch", "training")
    assert "train" in EXTRAS


def _frame_renderer_rgb():
    from agent_envs.renderers import FrameRenderer, TextFrame

    FrameRenderer(fps=0).render(TextFrame("Card", (("Body", "text"),)), "rgb_array")


def _human_window():
    from agent_envs.renderers.pygame_backend import HumanWindow

    HumanWindow("test", fps=0).show(np.zeros((4, 4, 3), np.uint8))


def _bm25s_search():
    from agent_envs.envs.webshop import search

    search.resolve_backend("bm25s")


def _webshop_reward():
    from agent_envs.envs.webshop.reward import fuzzy_ratio

    fuzzy_ratio("red shirt", "shirt red")


def _gsm8k_hub():
    from agent_envs.envs.gsm8k.data import load_hf

    load_hf("test", path="agent-envs/none", cache_dir="/nonexistent")


def _similarity_anchors():
    from agent_envs.adapters.advantages import anchor_groups

    anchor_groups([], similarity=0.9)


def _transformers_batch():
    from agent_envs.adapters.engines.transformers import left_padded

    left_padded([[1, 2]], 3, 0)


def _vllm_engine():
    from agent_envs.adapters.engines.vllm import VLLMEngine

    VLLMEngine("some-model")


def _vllm_async_engine():
    from agent_envs.adapters.engines.vllm_async import VLLMAsyncEngine

    VLLMAsyncEngine("some-model")


def _textarena_game():
    from agent_envs.adapters.textarena import game_name

    game_name("TicTacToe-v0")


def _remote_env(transport):
    def act():
        from agent_envs.adapters.server import RemoteEnv

        RemoteEnv("http://127.0.0.1:9", "grl/Sokoban-v0", transport=transport)

    return act


def _env_server():
    from agent_envs.adapters.server.app import create_app

    create_app()


def _ray_pool():
    from agent_envs.adapters.ray import RayPool
    from gymnasium.vector import AutoresetMode

    RayPool([], AutoresetMode.NEXT_STEP, 1)


def _tunix_mesh():
    from agent_envs.adapters.tunix import single_device_mesh

    single_device_mesh()


def _import(module):
    def act():
        importlib.import_module(module)

    return act


# what runs, the modules made unimportable, the extra named, what the message names
CASES = [
    pytest.param(
        _frame_renderer_rgb,
        ["PIL.Image", "PIL.ImageDraw", "PIL.ImageFont"],
        "render",
        "PIL",
        id="renderers-rgb_array",
    ),
    pytest.param(_human_window, ["pygame"], "render", "pygame", id="renderers-human"),
    pytest.param(
        _bm25s_search,
        ["bm25s"],
        "webshop",
        'search_backend="bm25s" needs bm25s',
        id="webshop-search",
    ),
    pytest.param(
        _webshop_reward,
        ["rapidfuzz.fuzz"],
        "webshop",
        "The WebShop reward needs rapidfuzz",
        id="webshop-reward",
    ),
    pytest.param(_gsm8k_hub, ["datasets"], "train", 'source="hf" needs datasets', id="gsm8k-hub"),
    pytest.param(
        _similarity_anchors,
        ["rapidfuzz.fuzz"],
        "webshop",
        "similarity grouping needs rapidfuzz",
        id="advantages-similarity",
    ),
    pytest.param(_transformers_batch, ["torch"], "train", "torch", id="engines-transformers"),
    pytest.param(
        _vllm_engine, ["vllm"], "vllm", "VLLMEngine (a CUDA machine) needs vllm", id="engines-vllm"
    ),
    pytest.param(
        _vllm_async_engine,
        ["vllm"],
        "vllm",
        "VLLMAsyncEngine (a CUDA machine) needs vllm",
        id="engines-vllm-async",
    ),
    pytest.param(_textarena_game, ["textarena"], "textarena", "textarena", id="textarena"),
    pytest.param(
        _remote_env("http"), ["httpx"], "server", "RemoteEnv needs httpx", id="server-client-http"
    ),
    pytest.param(
        _remote_env("ws"),
        ["websocket"],
        "server",
        "needs websocket (pip package websocket-client)",
        id="server-client-ws",
    ),
    pytest.param(
        _env_server, ["fastapi"], "server", "the env server needs fastapi", id="server-app"
    ),
    pytest.param(_ray_pool, ["ray"], "ray", 'mode="ray" needs ray', id="ray"),
    pytest.param(_tunix_mesh, ["tunix"], "tunix", "tunix (pip package google-tunix)", id="tunix"),
    pytest.param(
        _import("agent_envs.adapters.pettingzoo"),
        ["pettingzoo"],
        "pettingzoo",
        "pettingzoo",
        id="pettingzoo-module",
    ),
    pytest.param(
        _import("agent_envs.adapters.server.openenv"),
        ["openenv.core.env_server.interfaces"],
        "server",
        "serving through OpenEnv needs openenv",
        id="server-openenv-module",
    ),
    pytest.param(
        _import("agent_envs.adapters.trl.grpo_trainer"),
        ["trl"],
        "train",
        "TokenAdvantageGRPOTrainer needs trl",
        id="trl-grpo_trainer-module",
    ),
    pytest.param(
        _import("agent_envs.adapters.trl.sft_trainer"),
        ["trl"],
        "train",
        "SharedPrefixSFTTrainer needs trl",
        id="trl-sft_trainer-module",
    ),
]

#: modules whose import is what needs the extra (imported afresh by their case)
_MODULE_GUARDS = (
    "agent_envs.adapters.pettingzoo",
    "agent_envs.adapters.server.openenv",
    "agent_envs.adapters.trl.grpo_trainer",
    "agent_envs.adapters.trl.sft_trainer",
)


@pytest.mark.parametrize(("act", "blocked", "extra", "names"), CASES)
def test_optional__each_import_site_names_its_extra(monkeypatch, act, blocked, extra, names):
    for module in _MODULE_GUARDS:
        monkeypatch.delitem(sys.modules, module, raising=False)  # put back afterwards
    for module in blocked:
        monkeypatch.setitem(sys.modules, module, None)  # `import module` now fails
    with pytest.raises(DependencyNotInstalled) as raised:
        act()
    message = str(raised.value)
    assert f"pip install 'agent-envs[{extra}]'" in message
    assert names in message
