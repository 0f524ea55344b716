"""GSM8K loaders on the official data sample in ``../shared/data/gsm8k`` (skipped if absent)."""

from __future__ import annotations

import copy
import json
import re
import sys

import pytest
from gymnasium.error import DependencyNotInstalled

from agent_envs.envs.gsm8k import data
from agent_envs.envs.gsm8k.grading import format_number, gold_number, parse_number, read_answer
from tests.conftest import SHARED_DATA

DATA = SHARED_DATA / "gsm8k"
needs_data = pytest.mark.skipif(
    not (DATA / "train.jsonl").is_file() or not (DATA / "test.jsonl").is_file(),
    reason=f"official GSM8K sample not found at {DATA}",
)
# The reference extraction of grade_school_math/dataset.py, to hold ours against.
OFFICIAL = re.compile(r"#### (\-?[0-9\.\,]+)")


@needs_data
@pytest.mark.parametrize(("split", "count"), [("train", 7473), ("test", 1319)])
def test_gsm8k_data__every_gold_answer_is_extracted_and_graded_correct(split, count):
    problems = data.load_jsonl(DATA, split)
    assert len(problems) == count and problems.split == split
    for index, problem in enumerate(problems):
        assert problem.id == f"{split}/{index}"
        gold = gold_number(problem.answer)
        official = OFFICIAL.search(problem.answer).group(1).replace(",", "")
        assert gold == parse_number(official), problem.id
        text = format_number(gold)
        for reply in (f"<answer>{text}</answer>", problem.answer, f"\\boxed{{{text}}}"):
            for mode in ("strict", "flexible"):
                parsed = read_answer(reply, mode)
                assert parsed.format_ok and parse_number(parsed.actions[0]) == gold, (
                    problem.id,
                    mode,
                    reply[-40:],
                )


@needs_data
def test_gsm8k_data__folder_and_file_give_the_same_split_and_are_cached():
    by_folder = data.load_jsonl(DATA, "test")
    by_file = data.load_jsonl(DATA / "test.jsonl", "test")
    assert by_folder is by_file
    assert copy.deepcopy(by_folder) is by_folder
    assert by_folder[0].question.startswith("Janet")


@needs_data
def test_gsm8k_data__splits_are_never_mixed():
    with pytest.raises(ValueError, match="'test' split but split='train'"):
        data.load_jsonl(DATA / "test.jsonl", "train")
    with pytest.raises(ValueError, match="split"):
        data.load_jsonl(DATA, "validation")


def test_gsm8k_data__bad_files_name_the_line(tmp_path):
    good = {"question": "What is 1 + 1?", "answer": "1 + 1 = 2\n#### 2"}
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({"question": "Q?", "answer": "2"}))
    with pytest.raises(ValueError, match=r"line 3: item 'answer' must end with '#### <number>'"):
        data.load_jsonl(path, "train")
    path.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(ValueError, match="line 2"):
        data.load_jsonl(path, "train")
    path.write_text(json.dumps(good) + "\n")
    (problem,) = data.load_jsonl(path, "train").problems
    assert problem == data.Problem(good["question"], good["answer"], "train/0")
    with pytest.raises(ValueError, match="no jsonl file"):
        data.load_jsonl(tmp_path / "missing.jsonl", "train")


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("What is 1 + 1?", "must be a dict"),
        ({"answer": "#### 2"}, "'question' must be a non-empty string"),
        ({"question": "  ", "answer": "#### 2"}, "'question' must be a non-empty string"),
        ({"question": "Q?", "answer": 2}, "'answer' must be a string"),
        ({"question": "Q?", "answer": "two"}, "must end with '#### <number>'"),
    ],
)
def test_gsm8k_data__bad_items_say_what_is_wrong(item, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        data.problem_from_item(item)


@needs_data
def test_gsm8k_data__hugging_face_datasets_path_reads_the_same_problems(tmp_path):
    pytest.importorskip("datasets")
    problems = data.load_hf(
        "test",
        path="json",
        name=None,
        data_files={"test": str(DATA / "test.jsonl")},
        cache_dir=str(tmp_path),
    )
    assert problems.problems == data.load_jsonl(DATA, "test").problems


def test_gsm8k_data__missing_datasets_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "datasets", None)  # `import datasets` now fails
    with pytest.raises(DependencyNotInstalled, match=re.escape("agent-envs[train]")):
        data.load_hf("train", cache_dir=str(tmp_path))
