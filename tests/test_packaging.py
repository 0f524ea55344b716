"""Packaging: pyproject's package list against the source folders, the console script, and the
wheel's contents (built here, offline; .ci/wheel_check.sh installs and runs it in CI).

adapters/, renderers/ and benchmarks/ install as agent_envs.adapters, agent_envs.renderers and
agent_envs.benchmarks, so [tool.setuptools] lists every package by hand: a sub-package left out
of the list would be missing from the wheel while every test of the editable install passes.
"""

from __future__ import annotations

import ast
import importlib.util
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]

_spec = importlib.util.spec_from_file_location("wheel_contents", ROOT / ".ci" / "wheel_contents.py")
wheel_contents = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wheel_contents)


def _pyproject() -> dict:
    with (ROOT / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)


def _source_packages() -> set[str]:
    """Folders with an __init__.py: agent_envs/ as agent_envs.*, adapters/, renderers/ and
    benchmarks/ as agent_envs.adapters.* and so on (benchmarks/results and benchmarks/peers are
    no packages)."""
    found = set()
    for folder, package in (
        ("agent_envs", "agent_envs"),
        ("adapters", "agent_envs.adapters"),
        ("renderers", "agent_envs.renderers"),
        ("benchmarks", "agent_envs.benchmarks"),
    ):
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            if parts[:1] in (("results",), ("peers",)) and folder == "benchmarks":
                continue
            if any(part.startswith((".", "__")) for part in parts):
                continue
            found.add(".".join((package, *parts)))
    return found


def test_package_list_is_every_folder_with_an_init():
    listed = _pyproject()["tool"]["setuptools"]["packages"]
    assert len(listed) == len(set(listed)), "a package is listed twice"
    assert set(listed) == _source_packages()
    assert wheel_contents.package_list_problems(ROOT) == []


def test_package_dir_maps_the_three_folders():
    assert _pyproject()["tool"]["setuptools"]["package-dir"] == {
        "agent_envs": "agent_envs",
        "agent_envs.adapters": "adapters",
        "agent_envs.renderers": "renderers",
        "agent_envs.benchmarks": "benchmarks",
    }


def test_console_script_agent_envs():
    target = _pyproject()["project"]["scripts"]["agent-envs"]
    assert target == "agent_envs.benchmarks.cli:main"
    source = ROOT / "benchmarks" / "cli.py"  # agent_envs.benchmarks.cli
    assert source.is_file()
    functions = {node.name for node in ast.parse(source.read_text()).body if hasattr(node, "name")}
    assert "main" in functions


def test_checker_refuses_a_second_top_level_name(tmp_path):
    wheel = tmp_path / "agent_envs-0.1.0-py3-none-any.whl"
    names = [*wheel_contents.expected_files(ROOT), "adapters/__init__.py"]
    info = "agent_envs-0.1.0.dist-info"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name in names:
            archive.writestr(name, "")
        archive.writestr(f"{info}/RECORD", "".join(f"{name},,\n" for name in names))
        archive.writestr(
            f"{info}/entry_points.txt",
            "[console_scripts]\nagent-envs = agent_envs.benchmarks.cli:main\n",
        )
    problems = wheel_contents.wheel_problems(ROOT, wheel)
    assert any(
        "top-level names in its file list: ['adapters', 'agent_envs']" in p for p in problems
    )
    assert any("RECORD" in p for p in problems)
    assert any("unexpected adapters/__init__.py" in p for p in problems)


def test_wheel_and_sdist_contents(tmp_path):
    """Build both (about 2-3 s, no network: the venv's setuptools) from a copy of the tree and
    hold them to the source folders: top level only agent_envs, every module there."""
    pytest.importorskip("build")
    pytest.importorskip("setuptools")
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "setup.cfg", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, source / name)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "results", ".peers")
    for folder in ("agent_envs", "adapters", "renderers", "benchmarks"):
        shutil.copytree(ROOT / folder, source / folder, ignore=skip)
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--no-isolation",
         "--skip-dependency-check", "--outdir", str(dist), str(source)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    assert wheel_contents.wheel_problems(source, wheel) == []
    assert wheel_contents.sdist_problems(source, sdist) == []
    with zipfile.ZipFile(wheel) as archive:
        assert wheel_contents.top_level_names(archive.namelist()) == {"agent_envs"}
