"""The benchmark scripts' shared flags and report writing (benchmarks/_cli.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from agent_envs.benchmarks._cli import parse_flags, write_report


@dataclass
class _Args:
    """Settings of a made-up benchmark.

    More text the help leaves out."""

    env_id: str = "grl/Sokoban-v0"
    num_envs: int = 2
    cap: float = 1.5
    json: bool = False
    out: Path = Path("results")
    sizes: list[int] = field(default_factory=lambda: [1, 2])


def test_cli__defaults_without_flags():
    assert parse_flags(_Args, _Args.__doc__, []) == _Args()


def test_cli__list_flags_take_one_or_more_words_of_the_items_type():
    assert parse_flags(_Args, _Args.__doc__, ["--sizes", "7"]).sizes == [7]
    assert parse_flags(_Args, _Args.__doc__, ["--sizes", "3", "4", "5"]).sizes == [3, 4, 5]
    with pytest.raises(SystemExit):
        parse_flags(_Args, _Args.__doc__, ["--sizes", "x"])


def test_cli__flags_take_the_type_of_each_default():
    argv = ["--env-id", "grl/GSM8K-v0", "--num-envs", "7", "--cap", "0.25", "--out", "x/y"]
    args = parse_flags(_Args, _Args.__doc__, argv)
    assert args == _Args(env_id="grl/GSM8K-v0", num_envs=7, cap=0.25, out=Path("x/y"))


@pytest.mark.parametrize(
    ("word", "value"),
    [("true", True), ("1", True), ("Yes", True), ("false", False), ("0", False), ("no", False)],
)
def test_cli__bool_flags_read_a_word(word, value):
    assert parse_flags(_Args, _Args.__doc__, ["--json", word]).json is value


def test_cli__bad_number_exits_with_usage(capsys):
    with pytest.raises(SystemExit):
        parse_flags(_Args, _Args.__doc__, ["--num-envs", "two"])
    assert "--num-envs" in capsys.readouterr().err


def test_cli__help_shows_the_first_docstring_line(capsys):
    with pytest.raises(SystemExit):
        parse_flags(_Args, _Args.__doc__, ["--help"])
    out = capsys.readouterr().out
    assert "Settings of a made-up benchmark." in out and "More text" not in out


def test_cli__write_report_makes_the_folder(tmp_path):
    path = tmp_path / "a" / "b" / "report.md"
    write_report("µs | ratio\n", path)
    assert path.read_text(encoding="utf-8") == "µs | ratio\n"


def test_cli__write_report_to_nowhere_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_report("text", "")
    assert list(tmp_path.iterdir()) == []


def test_cli__finish_report_prints_writes_and_returns_the_joined_lines(tmp_path, capsys):
    from agent_envs.benchmarks._cli import finish_report

    text = finish_report(["# title", "", "| a |"], tmp_path / "sub" / "r.md")
    assert text == "# title\n\n| a |\n"
    assert (tmp_path / "sub" / "r.md").read_text(encoding="utf-8") == text
    assert capsys.readouterr().out == text + "\n"
    assert finish_report(["x"], "") == "x\n"  # "" only prints
