"""The docs site builds with warnings as errors, and every registered id is on its family's
page with the observation it renders (generated at build time, never pasted)."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import pytest

import agent_envs
from tests.docs.snippets import ROOT

pytest.importorskip("mkdocs", reason="the [docs] extra is not installed")
BUILD_TIMEOUT_S = 600


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", DISABLE_MKDOCS_2_WARNING="true",
               AGENT_ENVS_CACHE=str(tmp_path_factory.mktemp("docs_cache")))  # fmt: skip
    start = time.monotonic()
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
    )  # fmt: skip
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-6000:]
    print(f"docs built in {time.monotonic() - start:.1f} s")
    return out


def _text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


def _family(env_id: str) -> str:
    entry, _, kwargs = agent_envs.PRESETS[env_id]
    return kwargs.get("base", entry).split(".")[2]


def test_docs__every_id_is_on_its_family_page_with_its_rendered_observation(site):
    for env_id in agent_envs.PRESETS:
        page = site / "envs" / _family(env_id) / "index.html"
        text = _text(page)
        assert f"### {env_id}" not in text and env_id in text, env_id
        env = gym.make(env_id)
        observation, _ = env.reset(seed=0)
        env.close()
        if isinstance(observation, dict):
            picture = site / "envs" / "img" / f"{env_id.split('/')[1]}.png"
            assert picture.is_file(), picture
            observation = observation["text"]
        assert observation.strip() in text, f"{env_id}: its first observation is not on {page}"


def test_docs__every_page_of_the_nav_and_the_results_are_built(site):
    for page in ("index.html", "glossary/index.html", "results/index.html",
                 "reference/envs/index.html", "guides/serve/index.html",
                 "results/training/index.html"):  # fmt: skip
        assert (site / page).is_file(), page
    assert "SokobanEnv" in _text(site / "reference" / "envs" / "index.html")
    assert "fonts.googleapis.com" not in (site / "index.html").read_text(encoding="utf-8")


def test_docs__results_page_shows_each_runs_success_intervals(site):
    import json

    text = _text(site / "results" / "index.html")
    summary = json.loads((ROOT / "benchmarks/results/leaderboard/summary.json").read_text())
    for env_id, agents in summary["per_env"].items():
        success = agents["random"]["success"]
        cell = f"{success['mean']:.2f} [{success['low']:.2f}, {success['high']:.2f}]"
        assert f"{env_id} (n={agents['random']['n']})" in text and cell in text, (env_id, cell)
