"""Run the fenced ``python`` and ``bash`` blocks of the README and the docs as tests.

A page is read top to bottom; each block is one test. Blocks of one page run in one temporary
folder (a later block may read what an earlier one wrote), each in its own process, bounded in
seconds. Two kinds of markers, both in the Markdown source:

* ``# not run by the docs tests: REASON`` as a comment line inside the block: the block is
  skipped with that reason, which the page shows (a GPU, a download, long training).
* ``<!-- docs-test: KEY[=VALUE] ... -->`` on the line(s) before the block (invisible on the
  page) sets how it runs: ``timeout=S``; ``background port=N`` (run it in the background,
  e.g. a server, until the page ends; a free port replaces ``N`` in the page's later blocks);
  ``fixture=data`` (``data/`` links the official data samples in ``../shared/data``);
  ``fixture=openai-stub port=N`` (a stub OpenAI-compatible server); ``python=VENV`` (run with
  that venv of the checkout, skipped when it is missing).

Background processes start in their own session and are stopped by process group id.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import SHARED_DATA

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TIMEOUT_S = 90
LANGUAGES = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
SKIP = re.compile(r"^\s*#\s*not run by the docs tests?:\s*(.*)$", re.IGNORECASE)
DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:(.*?)-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)[^`]*$")
KNOWN_KEYS = {"timeout", "background", "port", "fixture", "python"}


class SnippetError(AssertionError):
    """A block failed: its place, its exit status and the end of its output."""


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository root
    line: int  # the opening fence, 1-based
    language: str  # "python" or "bash"
    code: str
    directives: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def skip_reason(self) -> str | None:
        lines = self.code.splitlines()
        for index, line in enumerate(lines):
            match = SKIP.match(line)
            if match:  # the reason goes on over the comment lines that follow it
                reason = [match.group(1).strip()]
                for more in lines[index + 1 :]:
                    if not more.lstrip().startswith("#"):
                        break
                    reason.append(more.lstrip().lstrip("#").strip())
                return " ".join(part for part in reason if part) or "(no reason given)"
        return None

    @property
    def timeout(self) -> float:
        return float(self.directives.get("timeout", DEFAULT_TIMEOUT_S))


def parse_directive(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for word in shlex.split(text):
        key, _, value = word.partition("=")
        if key not in KNOWN_KEYS:
            raise ValueError(f"unknown docs-test directive {key!r} in {text!r}")
        values[key] = value or "true"
    return values


def parse_page(text: str, page: str) -> list[Block]:
    """Every python/bash block of one Markdown text (indented ones too, dedented)."""
    lines = text.splitlines()
    blocks, index = [], 0
    while index < len(lines):
        match = FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        indent, fence, language = match.groups()
        start, body = index, []
        index += 1
        while index < len(lines) and not re.match(
            rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[index]
        ):
            line = lines[index]
            body.append(line[len(indent) :] if line.startswith(indent) else line)
            index += 1
        index += 1  # the closing fence
        if language.lower() not in LANGUAGES:
            continue
        directives: dict[str, str] = {}
        back = start - 1
        while back >= 0 and not lines[back].strip():
            back -= 1
        while back >= 0 and DIRECTIVE.match(lines[back]):
            directives = {**parse_directive(DIRECTIVE.match(lines[back]).group(1)), **directives}
            back -= 1
        blocks.append(Block(page, start + 1, LANGUAGES[language.lower()], "\n".join(body) + "\n",
                            directives))  # fmt: skip
    return blocks


def documented_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def collect(pages: list[Path] | None = None) -> list[Block]:
    blocks = []
    for path in pages if pages is not None else documented_pages():
        page = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
        blocks += parse_page(path.read_text(encoding="utf-8"), page)
    return blocks


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def substitute_ports(code: str, ports: dict[str, int]) -> str:
    """``127.0.0.1:N``, ``localhost:N`` and ``--port N`` of a documented port → its free one."""
    for documented, actual in ports.items():
        code = re.sub(rf"(?<=127\.0\.0\.1:){documented}\b", str(actual), code)
        code = re.sub(rf"(?<=localhost:){documented}\b", str(actual), code)
        code = re.sub(rf"(--port\s+){documented}\b", rf"\g<1>{actual}", code)
    return code


def _tail(path: Path, limit: int = 4000) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return text[-limit:]


def _stop(process: subprocess.Popen) -> None:
    """Stop a process we started, and its children, by its process group id."""
    try:  # the group too: children a finished block left behind
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)


class PageSession:
    """The folder, ports and background processes of one page's blocks."""

    def __init__(self, page: str, folder: Path, cache: Path) -> None:
        self.page, self.folder, self.cache = page, folder, cache
        self.folder.mkdir(parents=True, exist_ok=True)
        self.ports: dict[str, int] = {}
        self.background: list[subprocess.Popen] = []

    # ---- what a block needs -------------------------------------------------------------
    def skip_reason(self, block: Block) -> str | None:
        if block.skip_reason:
            return block.skip_reason
        venv = block.directives.get("python")
        if venv and not (ROOT / venv / "bin" / "python").exists():
            return f"needs {venv} (make test builds it)"
        if block.directives.get("fixture") == "data" and not SHARED_DATA.is_dir():
            return f"the official data samples are not at {SHARED_DATA}"
        return None

    def environment(self, block: Block) -> dict[str, str]:
        venv = block.directives.get("python")
        bin_dir = (ROOT / venv / "bin") if venv else Path(sys.executable).parent
        env = dict(os.environ)
        env.update(
            PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
            VIRTUAL_ENV=str(bin_dir.parent),
            AGENT_ENVS_CACHE=str(self.cache),
            HF_HUB_OFFLINE="1",
            HF_DATASETS_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            TOKENIZERS_PARALLELISM="false",
            MPLBACKEND="Agg",
            SDL_VIDEODRIVER="dummy",
            RAY_USAGE_STATS_ENABLED="0",
            PYTHONUNBUFFERED="1",
        )
        env.pop("PYTHONHOME", None)
        return env

    def _fixtures(self, block: Block) -> None:
        fixture = block.directives.get("fixture")
        if fixture == "data":
            link = self.folder / "data"
            if not link.exists():
                link.symlink_to(SHARED_DATA, target_is_directory=True)
        elif fixture == "openai-stub":
            documented = block.directives["port"]
            if documented not in self.ports:
                port = free_port()
                self.ports[documented] = port
                stub = Path(__file__).with_name("openai_stub.py")
                self._start([sys.executable, str(stub), str(port)], port, block, "openai-stub")
        elif fixture is not None:
            raise ValueError(f"{block.id}: unknown fixture {fixture!r}")

    def _command(self, block: Block, script: Path) -> list[str]:
        if block.language == "python":
            venv = block.directives.get("python")
            python = str(ROOT / venv / "bin" / "python") if venv else sys.executable
            return [python, str(script)]
        return ["bash", "-e", str(script)]

    def _start(self, command: list[str], port: int, block: Block, name: str) -> None:
        log = self.folder / f"{name}-{port}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                command, cwd=self.folder, env=self.environment(block), stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        self.background.append(process)
        deadline = time.monotonic() + block.timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise SnippetError(f"{block.id}: {name} exited {process.returncode}\n{_tail(log)}")
            with socket.socket() as sock:
                sock.settimeout(1)
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    return
            time.sleep(0.2)
        raise SnippetError(f"{block.id}: {name} not listening on {port} in {block.timeout} s\n"
                           f"{_tail(log)}")  # fmt: skip

    # ---- running ------------------------------------------------------------------------
    def run(self, block: Block) -> str:
        """Run one block; returns its output, raises `SnippetError` when it fails."""
        self._fixtures(block)
        if "background" in block.directives:
            documented = block.directives["port"]
            self.ports[documented] = self.ports.get(documented) or free_port()
        code = substitute_ports(block.code, self.ports)
        suffix = ".py" if block.language == "python" else ".sh"
        script = self.folder / f"block_{block.line}{suffix}"
        script.write_text(code, encoding="utf-8")
        command = self._command(block, script)
        if "background" in block.directives:
            self._start(command, self.ports[block.directives["port"]], block, f"block_{block.line}")
            return ""
        log = self.folder / f"block_{block.line}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                command, cwd=self.folder, env=self.environment(block), stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
            try:
                process.wait(timeout=block.timeout)
            except subprocess.TimeoutExpired:
                _stop(process)
                raise SnippetError(
                    f"{block.id}: still running after {block.timeout:.0f} s\n{_tail(log)}"
                ) from None
            finally:
                _stop(process)
        if process.returncode != 0:
            raise SnippetError(
                f"{block.id}: exit status {process.returncode}\n--- block ---\n{code}"
                f"--- output (end) ---\n{_tail(log)}"
            )
        return log.read_text(errors="replace")

    def close(self) -> None:
        while self.background:
            _stop(self.background.pop())
