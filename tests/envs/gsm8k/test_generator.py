"""The procedural word problems: exact arithmetic, official format, seeded."""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest

from agent_envs.envs.gsm8k import generator
from agent_envs.envs.gsm8k.grading import gold_number

NOTE = re.compile(r"(\S+) = <<([0-9+\-*/]+)=(-?\d+)>>(-?\d+)")


def evaluate(expression: str) -> Fraction:
    """Left-to-right * and / before + and -, over exact fractions (no eval)."""
    total = Fraction(0)
    for sign, term in re.findall(r"([+-]?)([^+-]+)", expression):
        parts = re.split(r"([*/])", term)
        value = Fraction(parts[0])
        for operator, operand in zip(parts[1::2], parts[2::2], strict=True):
            value = value * Fraction(operand) if operator == "*" else value / Fraction(operand)
        total += -value if sign == "-" else value
    return total


def test_gsm8k_generator__module_table_lists_every_template():
    for name in generator.TEMPLATES:
        assert f"``{name}``" in generator.__doc__


@pytest.mark.parametrize("template", sorted(generator.TEMPLATES))
def test_gsm8k_generator__solutions_are_exact_and_in_the_official_format(template):
    rng = np.random.default_rng(0)
    for _ in range(300):
        problem = generator.generate(rng, template)
        assert problem.id == f"generated/{template}"
        assert problem.question.isascii() and problem.answer.isascii()
        assert problem.question.endswith("?")
        *steps, last = problem.answer.split("\n")
        assert re.fullmatch(r"#### \d+", last), last
        results = []
        for step in steps:
            notes = NOTE.findall(step)
            assert len(notes) == 1, step
            _, expression, result, shown = notes[0]
            assert result == shown and evaluate(expression) == int(result), step
            results.append(int(result))
        answer = gold_number(problem.answer)
        assert answer == results[-1] and answer.denominator == 1 and answer >= 0


def test_gsm8k_generator__same_rng_same_problems_and_every_template_drawn():
    first = [generator.generate(np.random.default_rng(seed)) for seed in range(200)]
    again = [generator.generate(np.random.default_rng(seed)) for seed in range(200)]
    assert first == again
    assert {problem.id for problem in first} == {f"generated/{t}" for t in generator.TEMPLATES}
    assert len({problem.question for problem in first}) == 200


def test_gsm8k_generator__golden_problem():
    problem = generator.generate(np.random.default_rng(7), "savings")
    assert problem.question == (
        "Ravi wants to buy a guitar that costs $421. He has already saved $60 and saves"
        " $19 more each week. How many weeks will it take him to have enough money?"
    )
    assert problem.answer == (
        "Ravi still needs 421 - 60 = <<421-60=361>>361 dollars.\n"
        "That takes 361 / 19 = <<361/19=19>>19 weeks.\n"
        "#### 19"
    )


def test_gsm8k_generator__unknown_template_names_the_argument():
    with pytest.raises(ValueError, match="template"):
        generator.generate(np.random.default_rng(0), "geometry")
