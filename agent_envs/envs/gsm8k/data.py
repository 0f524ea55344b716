"""GSM8K problems and their loaders: the official jsonl files and Hugging Face `datasets`.

The official format (github.com/openai/grade-school-math, ``openai/gsm8k`` config ``main`` on
the Hub) is one JSON object per line with two strings: ``question`` and ``answer``, a worked
solution whose last line is ``#### <number>`` (calculator notes ``<<48/2=24>>`` inside).

Splits stay apart: a loader reads exactly one split (``train`` or ``test``), and a jsonl file
named after the other split is refused. Loaded splits are cached per process (keyed by the
file's path, size and modification time), so many envs over one file load it once.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from agent_envs.envs.gsm8k.grading import gold_number
from agent_envs.optional import require

__all__ = [
    "HF_CONFIG",
    "HF_DATASET",
    "SPLITS",
    "Problem",
    "ProblemSet",
    "load_hf",
    "load_jsonl",
    "problem_from_item",
    "resolve_jsonl",
]

SPLITS: tuple[str, ...] = ("train", "test")
HF_DATASET = "openai/gsm8k"
HF_CONFIG = "main"


class Problem(NamedTuple):
    """One word problem in the official format, plus where it came from (``"train/17"``,
    ``"generated/shopping"``, ``"item"``)."""

    question: str
    answer: str
    id: str


class ProblemSet:
    """An immutable sequence of problems of one split. Copies share it (``deepcopy`` returns
    the same object), so cloning an env mid-episode does not copy the dataset."""

    def __init__(self, problems: Iterable[Problem], split: str) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.split = split

    def __len__(self) -> int:
        return len(self.problems)

    def __getitem__(self, index: int) -> Problem:
        return self.problems[index]

    def __deepcopy__(self, memo: dict[int, Any]) -> ProblemSet:
        return self

    def __repr__(self) -> str:
        return f"ProblemSet({len(self.problems)} problems, split={self.split!r})"


def problem_from_item(item: object, problem_id: str = "item") -> Problem:
    """Validate one item in the official format; ``ValueError`` says what is wrong."""
    if not isinstance(item, Mapping):
        raise ValueError(f"a GSM8K item must be a dict, got {type(item).__name__}")
    question, answer = item.get("question"), item.get("answer")
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"item 'question' must be a non-empty string, got {question!r}")
    if not isinstance(answer, str):
        raise ValueError(f"item 'answer' must be a string, got {answer!r}")
    if gold_number(answer) is None:
        raise ValueError(f"item 'answer' must end with '#### <number>', got {answer[-60:]!r}")
    return Problem(question, answer, problem_id)


def _check_split(split: object) -> str:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return str(split)


def resolve_jsonl(data_path: str | os.PathLike[str], split: str) -> Path:
    """The jsonl file of ``split``: ``data_path`` itself, or ``<data_path>/<split>.jsonl`` for
    a folder. A file named ``train.jsonl``/``test.jsonl`` must match ``split``."""
    split = _check_split(split)
    path = Path(data_path)
    if path.is_dir():
        path = path / f"{split}.jsonl"
    if not path.is_file():
        raise ValueError(f"data_path: no jsonl file at {str(path)!r}")
    if path.stem in SPLITS and path.stem != split:
        raise ValueError(
            f"data_path {str(path)!r} is the {path.stem!r} split but split={split!r}; "
            "splits are never mixed"
        )
    return path


@functools.lru_cache(maxsize=8)
def _load_jsonl_cached(path: str, split: str, size: int, mtime_ns: int) -> ProblemSet:
    problems = []
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                problems.append(problem_from_item(record, f"{split}/{len(problems)}"))
            except ValueError as error:  # json.JSONDecodeError is a ValueError
                raise ValueError(f"{path}, line {number}: {error}") from error
    if not problems:
        raise ValueError(f"data_path {path!r} holds no problems")
    return ProblemSet(problems, split)


def load_jsonl(data_path: str | os.PathLike[str], split: str = "train") -> ProblemSet:
    """Load one split from an official jsonl file (or a folder holding ``<split>.jsonl``)."""
    path = resolve_jsonl(data_path, split).resolve()
    stat = path.stat()
    return _load_jsonl_cached(str(path), split, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _load_hf_cached(
    path: str,
    name: str | None,
    split: str,
    data_files: tuple[tuple[str, str], ...] | None,
    cache_dir: str | None,
) -> ProblemSet:
    datasets = require("datasets", "train", needed_by='GSM8K with source="hf"')
    dataset = datasets.load_dataset(
        path,
        name,
        split=split,
        data_files=None if data_files is None else dict(data_files),
        cache_dir=cache_dir,
    )
    problems = [
        problem_from_item(record, f"{split}/{index}") for index, record in enumerate(dataset)
    ]
    return ProblemSet(problems, split)


def load_hf(
    split: str = "train",
    *,
    path: str = HF_DATASET,
    name: str | None = HF_CONFIG,
    data_files: Mapping[str, str] | None = None,
    cache_dir: str | None = None,
) -> ProblemSet:
    """Load one split with ``datasets.load_dataset(path, name, split=split)``: by default the
    Hub's ``openai/gsm8k``, config ``main`` (network or a warm cache needed). ``path="json"``
    with ``data_files={split: file}`` reads local jsonl through the same code path.

    Raises ``gymnasium.error.DependencyNotInstalled`` when `datasets` is missing."""
    split = _check_split(split)
    files = (
        None if data_files is None else tuple(sorted((k, str(v)) for k, v in data_files.items()))
    )
    return _load_hf_cached(path, name, split, files, cache_dir)
