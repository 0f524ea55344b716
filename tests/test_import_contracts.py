"""The import contract of DESIGN.md ("Imports point one way"), held by tools.

- import-linter's contracts (``[tool.importlinter]`` in ``pyproject.toml``) are kept by the
  package as it installs, and each one breaks when a module breaks it;
- no module imports a private name of another module (an AST check);
- ``import agent_envs`` loads no heavy optional dependency.

import-linter (grimp) finds a package's modules by walking its folder, so it cannot see the
folders setuptools maps into ``agent_envs`` from elsewhere (``adapters/``, ``renderers/``,
``benchmarks/``); the contracts run on a copy of the Python files laid out as the wheel installs
them, in ``tmp_path``, never on the repository's own files.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
#: repository folder → its import name in the installed package
PACKAGES = {
    "agent_envs": "agent_envs",
    "adapters": "agent_envs.adapters",
    "renderers": "agent_envs.renderers",
    "benchmarks": "agent_envs.benchmarks",
}
#: folders that hold no modules of the package
_NOT_SOURCE = {"__pycache__", "results", ".peers"}
_LINT = "from importlinter.cli import lint_imports_command; lint_imports_command()"


def _source_only(folder: str, names: list[str]) -> list[str]:
    """``shutil.copytree``'s ignore: everything but Python files and the folders holding them."""
    return [
        name
        for name in names
        if (name in _NOT_SOURCE or name.startswith("."))
        or (not (Path(folder) / name).is_dir() and not name.endswith(".py"))
    ]


def installed_tree(destination: Path) -> Path:
    """A copy of the package's Python files under ``destination/agent_envs``, with the
    ``adapters``, ``renderers`` and ``benchmarks`` folders inside it as the wheel installs them."""
    package = destination / "agent_envs"
    shutil.copytree(ROOT / "agent_envs", package, ignore=_source_only)
    for folder in ("adapters", "renderers", "benchmarks"):
        shutil.copytree(ROOT / folder, package / folder, ignore=_source_only)
    return destination


def lint_imports(tree: Path, *contracts: str) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the repository's contracts on the package in ``tree`` (only the
    contracts with the ids ``contracts``, when given)."""
    command = [sys.executable, "-c", _LINT, "--no-cache", "--no-logo", str(PYPROJECT)]
    for contract in contracts:
        command += ["--contract", contract]
    # cwd and PYTHONPATH: `agent_envs` is found in the tree before the editable install
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        command, cwd=tree, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def contract_ids() -> list[str]:
    from importlinter.api import read_configuration

    contracts = read_configuration(str(PYPROJECT))["contracts_options"]
    return [contract["id"] for contract in contracts]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return installed_tree(tmp_path_factory.mktemp("installed"))


# ------------------------------------------------------------------ import-linter
def test_import_contracts__kept_by_the_installed_package(tree):
    ids = contract_ids()
    assert ids == ["floors", "root", "loop", "rooms"]
    result = lint_imports(tree)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(ids)} kept, 0 broken." in result.stdout


def test_import_contracts__the_tree_holds_every_module_of_the_repository(tree):
    # what the contracts analyse is the whole package, adapters and benchmarks included
    for folder, name in PACKAGES.items():
        for path in (ROOT / folder).rglob("__init__.py"):
            if _NOT_SOURCE.isdisjoint(path.relative_to(ROOT).parts):
                relative = path.parent.relative_to(ROOT / folder)
                assert (tree / Path(*name.split(".")) / relative / "__init__.py").exists()


# (contract broken, file of the copy, what is appended to it, text of the report)
BREAKS = [
    pytest.param(
        "floors",
        "agent_envs/renderers/throwaway.py",
        "import agent_envs.core.env\n",
        "agent_envs.renderers.throwaway -> agent_envs.core.env",
        id="renderers-import-the-core",
    ),
    pytest.param(
        "floors",
        "agent_envs/envs/throwaway.py",
        "from agent_envs.adapters.loop import collector\n",
        "agent_envs.envs.throwaway -> agent_envs.adapters.loop.collector",
        id="an-env-imports-an-adapter",
    ),
    pytest.param(
        "floors",
        "agent_envs/adapters/throwaway.py",
        "from agent_envs.benchmarks import leaderboard\n",
        "agent_envs.adapters.throwaway -> agent_envs.benchmarks.leaderboard",
        id="an-adapter-imports-a-benchmark",
    ),
    pytest.param(
        "root",
        "agent_envs/__init__.py",
        "import agent_envs.adapters.sft\n",
        "agent_envs -> agent_envs.adapters.sft",
        id="import-agent_envs-imports-an-adapter",
    ),
    pytest.param(
        "loop",
        "agent_envs/adapters/loop/throwaway.py",
        "from agent_envs.adapters.engines import scripted\n",
        "agent_envs.adapters.loop.throwaway -> agent_envs.adapters.engines.scripted",
        id="the-loop-imports-an-engine",
    ),
    pytest.param(
        "rooms",
        "agent_envs/adapters/engines/throwaway.py",
        "import agent_envs.adapters.trl.config\n",  # trl imports the engines
        "No cycles are allowed in agent_envs.adapters.",
        id="engines-and-trl-import-each-other",
    ),
]


@pytest.mark.parametrize(("contract", "file", "source", "report"), BREAKS)
def test_import_contracts__broken_by_a_module_that_imports_the_wrong_way(
    tmp_path, contract, file, source, report
):
    tree = installed_tree(tmp_path)
    assert lint_imports(tree, contract).returncode == 0
    path = tree / file
    path.write_text((path.read_text() if path.exists() else "") + source)
    result = lint_imports(tree, contract)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Contracts: 0 kept, 1 broken." in result.stdout
    assert report in " ".join(result.stdout.split()), result.stdout


# ------------------------------------------------------------------ private names
def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_path(dotted: str, importer: str) -> bool:
    """Whether ``dotted`` has a private part that ``importer`` is not inside of."""
    parts = dotted.split(".")
    for index, part in enumerate(parts):
        if _is_private(part):
            private = ".".join(parts[: index + 1])
            if importer != private and not importer.startswith(private + "."):
                return True
    return False


def _module_name(path: Path, folder: Path, package: str) -> tuple[str, bool]:
    """The import name of the module in ``path`` and whether it is a package's ``__init__``."""
    parts = list(path.relative_to(folder).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join([package, *parts]), is_package


def _sources(folder: Path, package: str) -> dict[Path, tuple[str, bool]]:
    """The Python files of ``folder`` (the package ``package``) → :func:`_module_name`."""
    return {
        path: _module_name(path, folder, package)
        for path in sorted(folder.rglob("*.py"))
        if _NOT_SOURCE.isdisjoint(path.relative_to(folder).parts)
    }


def private_imports(folder: Path, package: str) -> list[str]:
    """Every import in ``folder`` (the package ``package``) of a private name of another
    module of ``agent_envs``: ``from agent_envs.x import _name``, a module path with a
    ``_private`` part (``agent_envs._x``), or ``module._name`` on a module so imported."""
    known = {name for name, _ in _sources(folder, package).values()}
    for other, name in PACKAGES.items():
        known.update(module for module, _ in _sources(ROOT / other, name).values())
    found = []
    for path, (module, is_package) in _sources(folder, package).items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        modules: set[str] = set()  # local names bound to agent_envs modules
        where = f"{path.relative_to(folder.parent)}:{{}}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] != "agent_envs":
                        continue
                    modules.add(alias.asname or "agent_envs")
                    if _private_path(alias.name, module):
                        found.append(f"{where.format(node.lineno)} import {alias.name}")
            elif isinstance(node, ast.ImportFrom):
                source = node.module or ""
                if node.level:
                    base = module.split(".")[: len(module.split(".")) - node.level + is_package]
                    source = ".".join(base + ([node.module] if node.module else []))
                if source.split(".")[0] != "agent_envs" or source == module:
                    continue
                names = [alias.name for alias in node.names]
                modules.update(
                    alias.asname or alias.name
                    for alias in node.names
                    if f"{source}.{alias.name}" in known
                )
                if _private_path(source, module) or any(map(_is_private, names)):
                    found.append(f"{where.format(node.lineno)} from {source} import {names}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _is_private(node.attr):
                chain = node.value
                while isinstance(chain, ast.Attribute):
                    chain = chain.value
                if isinstance(chain, ast.Name) and chain.id in modules:
                    found.append(f"{where.format(node.lineno)} {ast.unparse(node)}")
    return found


@pytest.mark.parametrize(("folder", "package"), list(PACKAGES.items()))
def test_private_imports__no_module_imports_a_private_name_of_another(folder, package):
    assert private_imports(ROOT / folder, package) == []


def test_private_imports__the_check_finds_each_form(tmp_path):
    folder = tmp_path / "adapters"
    (folder / "_inner").mkdir(parents=True)
    (folder / "_inner" / "a.py").write_text("from agent_envs.adapters._inner import b\n")
    (folder / "ok.py").write_text(
        "from agent_envs.adapters import textarena\n"
        "from agent_envs.adapters.textarena import to_ascii\n"
        "from . import ok\n"
        "def _own(): ...\n"
        "__all__ = []\n"
    )
    (folder / "bad.py").write_text(
        "from agent_envs.adapters.textarena import raw_game, _raw\n"
        "from agent_envs.adapters._inner import b\n"
        "import agent_envs.adapters._inner.b\n"
        "from . import _helper\n"
        "from ._inner import b\n"
        "from agent_envs.adapters import textarena as ta\n"
        "ta._to_ascii('x')\n"
        "agent_envs.adapters.textarena._raw(None)\n"
    )
    assert private_imports(folder, "agent_envs.adapters") == [
        "adapters/bad.py:1 from agent_envs.adapters.textarena import ['raw_game', '_raw']",
        "adapters/bad.py:2 from agent_envs.adapters._inner import ['b']",
        "adapters/bad.py:3 import agent_envs.adapters._inner.b",
        "adapters/bad.py:4 from agent_envs.adapters import ['_helper']",
        "adapters/bad.py:5 from agent_envs.adapters._inner import ['b']",
        "adapters/bad.py:7 ta._to_ascii",
        "adapters/bad.py:8 agent_envs.adapters.textarena._raw",
    ]


# ------------------------------------------------------------------ import time
#: optional libraries that ``import agent_envs`` must not load (DESIGN.md: no torch,
#: transformers, vllm, trl, pygame or network client at import time)
HEAVY = (
    "torch",
    "transformers",
    "trl",
    "vllm",
    "pygame",
    "fastapi",
    "httpx",
    "openai",
    "datasets",
    "peft",
    "ray",
    "jax",
    "tunix",
    "PIL",
    "textarena",
    "pettingzoo",
    "uvicorn",
    "requests",
)


def test_import_agent_envs__loads_no_optional_library():
    code = "import json, sys; import agent_envs; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    loaded = {name.split(".")[0] for name in json.loads(result.stdout)}
    assert "agent_envs" in loaded
    assert sorted(loaded.intersection(HEAVY)) == []


if __name__ == "__main__":  # the report by hand: python tests/test_import_contracts.py
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        report = lint_imports(installed_tree(Path(folder)))
    print(report.stdout + report.stderr)
    sys.exit(report.returncode)
