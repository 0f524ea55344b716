"""The ``agent-envs`` command and the flags every command shares (benchmarks/cli.py)."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import importlib
import inspect
import io
import itertools
import os
import re
import shlex
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from agent_envs.benchmarks import cli
from agent_envs.benchmarks.cli import finish_report, parse, write_report

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = {**cli.COMMANDS, **{f"bench {name}": entry for name, entry in cli.BENCHMARKS.items()}}


@dataclass
class _Args:
    """Settings of a made-up benchmark.

    More text the help leaves out."""

    env_id: str = "grl/Sokoban-v0"
    """the env measured"""
    num_envs: int = 2
    """sub-envs per batch"""
    cap: float = 1.5
    """seconds before a run is killed"""
    json: bool = False
    """print JSON instead of Markdown"""
    scale: bool = True
    """also time the scaled sizes"""
    threads: int | None = None
    """torch threads (None: torch's choice)"""
    out: Path = Path("results")
    """report folder"""
    sizes: list[int] = field(default_factory=lambda: [1, 2])
    """batch sizes timed"""


def _parse(*argv: str) -> _Args:
    return parse(_Args, argv, prog="made-up")


# --------------------------------------------------------------------------- parse
def test_cli__defaults_without_flags():
    assert _parse() == _Args()


def test_cli__list_flags_take_the_words_after_them_as_items_of_their_type():
    assert _parse("--sizes", "7").sizes == [7]
    assert _parse("--sizes", "3", "4", "5").sizes == [3, 4, 5]
    with pytest.raises(SystemExit):
        _parse("--sizes", "x")
    with pytest.raises(SystemExit):  # a comma list is one word, not an int
        _parse("--sizes", "3,4")


def test_cli__flags_take_the_type_of_each_field():
    args = _parse("--env-id", "grl/GSM8K-v0", "--num-envs", "7", "--cap", "0.25", "--out", "x/y")
    assert args == _Args(env_id="grl/GSM8K-v0", num_envs=7, cap=0.25, out=Path("x/y"))


@pytest.mark.parametrize(
    ("argv", "json", "scale"),
    [
        ((), False, True),
        (("--json",), True, True),
        (("--no-json",), False, True),
        (("--no-scale",), False, False),
        (("--json", "--scale"), True, True),
    ],
)
def test_cli__bool_flags_are_the_flag_or_its_no_form(argv, json, scale):
    args = _parse(*argv)
    assert (args.json, args.scale) == (json, scale)


def test_cli__a_bool_flag_takes_no_word():
    with pytest.raises(SystemExit):
        _parse("--json", "true")


def test_cli__optional_fields_take_a_value_or_none():
    assert _parse("--threads", "3").threads == 3
    assert _parse("--threads", "None").threads is None


def test_cli__bad_number_exits_with_usage(capsys):
    with pytest.raises(SystemExit) as exited:
        _parse("--num-envs", "two")
    assert exited.value.code == 2
    assert "--num-envs" in capsys.readouterr().err


def test_cli__help_shows_the_description_and_every_field(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")
    with pytest.raises(SystemExit) as exited:
        parse(_Args, ["--help"], prog="made-up", description="A made-up benchmark.")
    assert exited.value.code == 0
    text = _plain(capsys.readouterr().out)
    assert "usage: made-up" in text and "A made-up benchmark." in text
    assert "More text" not in text
    assert "--json, --no-json print JSON instead of Markdown (default: False)" in text
    assert "--sizes [INT [INT ...]] batch sizes timed (default: 1 2)" in text


# --------------------------------------------------------------------------- reports
def test_cli__write_report_makes_the_folder(tmp_path):
    path = tmp_path / "a" / "b" / "report.md"
    write_report("µs | ratio\n", path)
    assert path.read_text(encoding="utf-8") == "µs | ratio\n"


def test_cli__write_report_to_nowhere_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_report("text", "")
    assert list(tmp_path.iterdir()) == []


def test_cli__finish_report_prints_writes_and_returns_the_joined_lines(tmp_path, capsys):
    text = finish_report(["# title", "", "| a |"], tmp_path / "sub" / "r.md")
    assert text == "# title\n\n| a |\n"
    assert (tmp_path / "sub" / "r.md").read_text(encoding="utf-8") == text
    assert capsys.readouterr().out == text + "\n"
    assert finish_report(["x"], "") == "x\n"  # "" only prints


# --------------------------------------------------------------------------- the commands
def _plain(text: str) -> str:
    """Help text without tyro's box and line breaks."""
    return " ".join(re.sub("[│╭╮╰╯─]", " ", text).split())


def _field_docs(settings: type) -> dict[str, str]:
    """The docstring under each field of ``settings`` and its dataclass bases."""
    docs: dict[str, str] = {}
    for cls in reversed(settings.__mro__[:-1]):
        body = ast.parse(inspect.getsource(cls)).body[0].body
        for node, after in itertools.pairwise(body):
            if isinstance(node, ast.AnnAssign) and isinstance(after, ast.Expr):
                docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _shown(value: object) -> str:
    """A default as the help shows it: words quoted as a shell would need them."""
    if isinstance(value, list):
        return " ".join(map(_shown, value))
    return shlex.quote(value) if isinstance(value, str) else str(value)


def _settings(module: str) -> type:
    """The ``Args`` of a command's module (of its ``__main__`` for a package that has none)."""
    found = importlib.import_module(module)
    return getattr(found, "Args", None) or importlib.import_module(f"{module}.__main__").Args


def _run(words: list[str]) -> tuple[int | str | None, str]:
    """``agent-envs *words`` in this process: its exit code and what it printed."""
    out = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(out):
        # runpy warns when it runs a module this process imported before (a test did; the
        # console script never has)
        warnings.filterwarnings("ignore", "'agent_envs.* found in sys.modules", RuntimeWarning)
        with pytest.raises(SystemExit) as exited:
            cli.main(words)
    return exited.value.code, out.getvalue()


def test_cli__every_script_with_a_main_is_a_command():
    scripts = {
        f"agent_envs.benchmarks.{path.stem}"
        for path in (ROOT / "benchmarks").glob("*.py")
        if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8")
    }
    modules = {module for module, _ in COMMANDS.values()}
    assert scripts <= modules
    assert {"agent_envs.benchmarks.leaderboard", "agent_envs.adapters.server"} <= modules
    for name in cli.BENCHMARKS:  # a benchmark's name is its module's, in kebab-case
        assert cli.BENCHMARKS[name][0].rsplit(".", 1)[1] == name.replace("-", "_")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_cli__help_of_every_command_shows_each_flag_its_help_and_default(command, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # no line wrapped inside a word
    code, out = _run([*command.split(), "--help"])
    assert code == 0
    text = _plain(out)
    settings = _settings(COMMANDS[command][0])
    docs = _field_docs(settings)
    defaults = settings()
    for item in dataclasses.fields(settings):
        flag = "--" + item.name.replace("_", "-")
        assert item.name in docs, f"{command}: {item.name} has no docstring"
        help_text = " ".join(docs[item.name].split())
        assert re.search(rf"{re.escape(flag)}[ ,]", text), f"{command}: {flag} missing"
        shown = f"{help_text} (default: {_shown(getattr(defaults, item.name))})"
        assert shown in text, f"{command}: {flag}: {shown!r} not in the help"


def test_cli__usage_names_the_command_as_typed():
    assert _run(["train", "--help"])[1].startswith("usage: agent-envs train ")
    assert _run(["bench", "kv-cache", "--help"])[1].startswith("usage: agent-envs bench kv-cache ")


def test_cli__listing_has_one_line_per_command(capsys):
    assert _run(["--help"]) == (0, _run(["-h"])[1])
    top = _run(["--help"])[1].splitlines()
    for name in [*cli.COMMANDS, "bench"]:
        assert sum(line.split()[:1] == [name] for line in top) == 1, name
    bench = _run(["bench", "--help"])[1].splitlines()
    for name in cli.BENCHMARKS:
        assert sum(line.split()[:1] == [name] for line in bench) == 1, name


def test_cli__no_or_unknown_command_exits_2_with_the_listing(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main([])
    assert exited.value.code == 2 and "leaderboard" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        cli.main(["leaderbord"])
    error = capsys.readouterr().err
    assert exited.value.code == 2
    assert "unknown command 'leaderbord'" in error and "leaderboard" in error


def test_cli__console_script_lists_the_commands_without_importing_torch():
    script = Path(sys.executable).parent / "agent-envs"
    if not script.exists():
        pytest.skip("agent-envs is not installed in this environment (pip install -e .)")
    environment = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1", "COLUMNS": "100"}
    done = subprocess.run(
        [str(script), "--help"], capture_output=True, text=True, env=environment, timeout=60
    )
    assert done.returncode == 0, done.stderr
    for name in [*cli.COMMANDS, "bench"]:
        assert re.search(rf"^  {re.escape(name)} ", done.stdout, re.MULTILINE), name
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "agent_envs.benchmarks.cli" in imported
    # ``import agent_envs`` (the parent package) registers the ids: gymnasium, not torch
    assert not {"torch", "tyro", "agent_envs.benchmarks.train"} & imported


# --------------------------------------------------------------------------- command lines
def test_cli__the_same_list_syntax_in_leaderboard_and_train():
    from agent_envs.benchmarks import leaderboard, train

    argv = ["--envs", "grl/Sokoban-v0", "grl/GSM8K-v0"]
    assert leaderboard.parse_args(argv).envs == ["grl/Sokoban-v0", "grl/GSM8K-v0"]
    assert train.parse_args(argv).envs == ["grl/Sokoban-v0", "grl/GSM8K-v0"]
    argv = ["--agents", "random", "oracle", "best=hf:runs/x", "--seeds", "3"]
    assert leaderboard.parse_args(argv).agents == ["random", "oracle", "best=hf:runs/x"]


def test_cli__committed_train_command_lines_parse_to_their_values():
    from agent_envs.benchmarks import train

    line = (
        "--out runs/bw8 --envs grl/Blocksworld-v0 --stages gigpo --rl-steps 112 --rl-prompts 4 "
        "--num-generations 4 --rl-micro-batch 4 --rl-lr 1e-4 --temperature 0.7 --rl-beta 1.0"
    )
    args = train.parse_args(shlex.split(line))
    assert args == dataclasses.replace(
        train.Args(),
        out=Path("runs/bw8"),
        envs=["grl/Blocksworld-v0"],
        stages=["gigpo"],
        rl_steps=112,
        rl_prompts=4,
        num_generations=4,
        rl_micro_batch=4,
        rl_lr=1e-4,
        temperature=0.7,
        rl_beta=1.0,
    )
    line = "--stages sft gigpo eval curves --no-eval-zero-shot --no-progress --threads 2"
    args = train.parse_args(shlex.split(line))
    assert args.stages == ["sft", "gigpo", "eval", "curves"]
    assert (args.eval_zero_shot, args.progress, args.threads) == (False, False, 2)


def test_cli__leaderboard_flags_keep_their_spellings(tmp_path):
    from agent_envs.benchmarks import leaderboard

    argv = ["--fresh", "--no-progress", "--no-replays", "--no-replay-frames", "--validate", "r"]
    args = leaderboard.parse_args([*argv, "--stop-after", "0", "--model-seeds", "600"])
    assert (args.fresh, args.progress, args.replays, args.replay_frames) == (
        True,
        False,
        False,
        False,
    )
    assert (args.validate, args.stop_after, args.model_seeds) == (Path("r"), 0, 600)


def _documented_command_lines() -> list[tuple[str, list[str]]]:
    """Every ``python -m [agent_envs.]benchmarks.X ...`` / ``adapters.server ...`` command line
    in the committed Markdown, continuation lines joined: (module, flags)."""
    found = []
    pattern = re.compile(r"python -m (?:agent_envs\.)?((?:benchmarks|adapters)\.[\w.]+)([^`\n]*)")
    for path in [ROOT / "README.md", *sorted((ROOT / "benchmarks" / "results").rglob("*.md"))]:
        text = re.sub(r"\\\n\s*", " ", path.read_text(encoding="utf-8"))
        for module, rest in pattern.findall(text):
            words = shlex.split(re.sub(r"[\[\]]", " ", rest))  # [--token T]: optional
            if words[:1] and words[0].startswith("--"):
                found.append((f"agent_envs.{module}", words))
    return found


def test_cli__every_documented_command_line_parses():
    lines = _documented_command_lines()
    assert len(lines) >= 15  # the training notes, the fresh-seed run, arena, server, tunix
    modules = {module for module, _ in COMMANDS.values()}
    for module, flags in lines:
        assert module in modules, module
        settings = _settings(module)
        if flags[-1] == "--validate":  # prose: "--validate replays every episode"
            continue
        args = parse(settings, flags, prog=module)  # exits 2 on a flag that no longer parses
        lists = {name: value for name, value in vars(args).items() if isinstance(value, list)}
        for name, items in lists.items():  # the items are words, never a comma list
            assert not any("," in str(item) for item in items), f"{module} --{name}: {items}"


@pytest.mark.parametrize(("preset", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_cli__openmp_threads_sleep_unless_the_user_chose(monkeypatch, preset, expected):
    if preset is None:
        monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    else:
        monkeypatch.setenv("OMP_WAIT_POLICY", preset)
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert os.environ["OMP_WAIT_POLICY"] == expected


def test_cli__omp_wait_benchmark_measures_both_policies(tmp_path):
    from agent_envs.benchmarks import omp_wait

    args = omp_wait.Args(repeats=1, threads=1, batch=1, prompt_tokens=4, new_tokens=2,
                         train_tokens=8, output=str(tmp_path / "omp.md"))  # fmt: skip
    report = omp_wait.main(args)
    rows = [line for line in report.splitlines() if line.startswith(("| generate", "| train"))]
    assert len(rows) == 2 and (tmp_path / "omp.md").read_text() == report
