"""Procedural GSM8K-style word problems: unlimited offline data with exact integer answers.

Each template draws its numbers from an explicit ``np.random.Generator`` so that every
division comes out even, and writes a worked solution in the official format: one step per
line with calculator notes (``4 * 3 = <<4*3=12>>12``) and a last line ``#### <answer>``.

=============  ==================================================================
``shopping``   two kinds of items bought, change from a round amount (3 steps)
``wages``      hourly pay over hours, days and weeks (3 steps)
``travel``     distance over two legs at different speeds (3 steps)
``ages``       "k times as old", ages now and in the future (3 steps)
``fractions``  a fraction given away, then a fraction of the rest (4 steps)
``percent``    a percent discount on a price, several bought (3 steps)
``savings``    weeks of saving until a price is reached (2 steps)
``bakery``     batches baked, some kept, the rest boxed and sold (4 steps)
``comparison`` "k more than twice as many", "m fewer than", a total (3 steps)
=============  ==================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

import numpy as np

from agent_envs.envs.gsm8k.data import Problem

__all__ = ["TEMPLATES", "generate"]

T = TypeVar("T")


class _Person(NamedTuple):
    name: str
    he: str
    him: str
    his: str


_SHE = ("Maya", "Sofia", "Aisha", "Elena", "Priya", "Grace", "Chloe", "Nora", "Lucia", "Hannah")
_HE = ("Liam", "Omar", "Diego", "Ethan", "Noah", "Kenji", "Lucas", "Samuel", "Ravi", "Jamal")
_PEOPLE = tuple(_Person(name, "she", "her", "her") for name in _SHE) + tuple(
    _Person(name, "he", "him", "his") for name in _HE
)
_FRACTION_WORDS = {
    (1, 2): "half",
    (1, 3): "a third",
    (2, 3): "two thirds",
    (1, 4): "a quarter",
    (3, 4): "three quarters",
    (1, 5): "a fifth",
    (2, 5): "two fifths",
    (3, 5): "three fifths",
    (4, 5): "four fifths",
}
_TIMES_WORDS = {2: "twice", 3: "three times", 4: "four times"}


def _pick(rng: np.random.Generator, options: Sequence[T]) -> T:
    return options[int(rng.integers(len(options)))]


def _int(rng: np.random.Generator, low: int, high: int) -> int:
    """A uniform integer in ``[low, high]`` (both ends included)."""
    return int(rng.integers(low, high + 1))


def _people(rng: np.random.Generator, count: int) -> list[_Person]:
    indices = rng.choice(len(_PEOPLE), size=count, replace=False)
    return [_PEOPLE[int(index)] for index in indices]


def _calc(expression: str, value: int) -> str:
    """``"4 * 3"``, 12 → ``"4 * 3 = <<4*3=12>>12"`` (the official calculator note)."""
    return f"{expression} = <<{expression.replace(' ', '')}={value}>>{value}"


_Draft = tuple[str, list[str], int]  # question, solution steps, answer


def _shopping(rng: np.random.Generator) -> _Draft:
    (buyer,) = _people(rng, 1)
    items = ("notebooks", "pens", "apples", "sandwiches", "toy cars", "candles", "mugs", "plants")
    first, second = (items[int(i)] for i in rng.choice(len(items), size=2, replace=False))
    n1, p1, n2, p2 = _int(rng, 2, 9), _int(rng, 2, 15), _int(rng, 2, 6), _int(rng, 3, 20)
    a, b = n1 * p1, n2 * p2
    total = a + b
    paid = (total // 50 + 1) * 50
    change = paid - total
    question = (
        f"{buyer.name} buys {n1} {first} for ${p1} each and {n2} {second} for ${p2} each."
        f" {buyer.he.capitalize()} pays with ${paid}. How much change does {buyer.he} get back?"
    )
    steps = [
        f"The {first} cost {_calc(f'{n1} * {p1}', a)} dollars.",
        f"The {second} cost {_calc(f'{n2} * {p2}', b)} dollars.",
        f"Altogether {buyer.he} spends {_calc(f'{a} + {b}', total)} dollars.",
        f"{buyer.his.capitalize()} change is {_calc(f'{paid} - {total}', change)} dollars.",
    ]
    return question, steps, change


def _wages(rng: np.random.Generator) -> _Draft:
    (worker,) = _people(rng, 1)
    job = _pick(rng, ("tutoring", "walking dogs", "babysitting", "at a bakery", "washing cars"))
    rate, hours, days, weeks = _int(rng, 8, 25), _int(rng, 2, 8), _int(rng, 2, 6), _int(rng, 2, 5)
    daily = rate * hours
    weekly = daily * days
    total = weekly * weeks
    he = worker.he
    question = (
        f"{worker.name} earns ${rate} an hour {job}. {he.capitalize()} works {hours} hours a day,"
        f" {days} days a week. How much money does {he} earn in {weeks} weeks?"
    )
    steps = [
        f"Each day {he} earns {_calc(f'{rate} * {hours}', daily)} dollars.",
        f"Each week {he} earns {_calc(f'{daily} * {days}', weekly)} dollars.",
        f"In {weeks} weeks {he} earns {_calc(f'{weekly} * {weeks}', total)} dollars.",
    ]
    return question, steps, total


def _travel(rng: np.random.Generator) -> _Draft:
    vehicle, low, high = _pick(
        rng, (("train", 40, 90), ("bus", 30, 60), ("car", 35, 70), ("truck", 30, 65))
    )
    slow, fast = sorted(low + int(step) for step in rng.choice(high - low + 1, 2, replace=False))
    t1, t2 = _int(rng, 2, 5), _int(rng, 1, 4)
    d1, d2 = fast * t1, slow * t2
    total = d1 + d2
    question = (
        f"A {vehicle} travels at {fast} miles per hour for {t1} hours, then slows to {slow} miles"
        f" per hour for {t2} more hours. How many miles does it travel in total?"
    )
    steps = [
        f"First it covers {_calc(f'{fast} * {t1}', d1)} miles.",
        f"Then it covers {_calc(f'{slow} * {t2}', d2)} miles.",
        f"In total it travels {_calc(f'{d1} + {d2}', total)} miles.",
    ]
    return question, steps, total


def _ages(rng: np.random.Generator) -> _Draft:
    older, younger = _people(rng, 2)
    young, times = _int(rng, 3, 15), _int(rng, 2, 4)
    later, ahead = _int(rng, 2, 10), _int(rng, 1, 10)
    old = young * times
    question = (
        f"{older.name} is {_TIMES_WORDS[times]} as old as {younger.name}. In {later} years,"
        f" {older.name} will be {old + later} years old. How old will {younger.name} be"
        f" {ahead} years from now?"
    )
    steps = [
        f"{older.name} is {_calc(f'{old + later} - {later}', old)} years old now.",
        f"{younger.name} is {_calc(f'{old} / {times}', young)} years old now.",
        f"In {ahead} years {younger.name} will be {_calc(f'{young} + {ahead}', young + ahead)}"
        " years old.",
    ]
    return question, steps, young + ahead


def _fractions(rng: np.random.Generator) -> _Draft:
    owner, first, second = _people(rng, 3)
    things = _pick(rng, ("marbles", "stickers", "cookies", "baseball cards", "seashells"))
    num1, den1 = _pick(rng, tuple(_FRACTION_WORDS))
    num2, den2 = _pick(rng, tuple(key for key in _FRACTION_WORDS if key[1] <= 4))
    total = den1 * den2 * _int(rng, 1, 6)
    given1 = total * num1 // den1
    rest = total - given1
    given2 = rest * num2 // den2
    left = rest - given2
    he = owner.he
    question = (
        f"{owner.name} has {total} {things}. {he.capitalize()} gives"
        f" {_FRACTION_WORDS[num1, den1]} of them to {first.name}, and then"
        f" {_FRACTION_WORDS[num2, den2]} of the remaining {things} to {second.name}."
        f" How many {things} does {owner.name} have left?"
    )
    steps = [
        f"{owner.name} gives {first.name} {_calc(f'{total} * {num1} / {den1}', given1)} {things}.",
        f"That leaves {_calc(f'{total} - {given1}', rest)} {things}.",
        f"{he.capitalize()} gives {second.name} {_calc(f'{rest} * {num2} / {den2}', given2)}"
        f" {things}.",
        f"So {he} has {_calc(f'{rest} - {given2}', left)} {things} left.",
    ]
    return question, steps, left


def _percent(rng: np.random.Generator) -> _Draft:
    (buyer,) = _people(rng, 1)
    item = _pick(rng, ("jacket", "bicycle", "lamp", "backpack", "desk chair", "tennis racket"))
    price, percent, count = 20 * _int(rng, 1, 10), 5 * _int(rng, 1, 10), _int(rng, 1, 4)
    discount = price * percent // 100
    sale = price - discount
    total = count * sale
    bought = "one" if count == 1 else f"{count} of them"
    question = (
        f"A {item} costs ${price}. During a sale its price is cut by {percent}%."
        f" {buyer.name} buys {bought}. How much does {buyer.he} pay in total?"
    )
    steps = [
        f"The discount is {_calc(f'{price} * {percent} / 100', discount)} dollars.",
        f"The sale price is {_calc(f'{price} - {discount}', sale)} dollars.",
        f"{buyer.name} pays {_calc(f'{count} * {sale}', total)} dollars.",
    ]
    return question, steps, total


def _savings(rng: np.random.Generator) -> _Draft:
    (saver,) = _people(rng, 1)
    item = _pick(rng, ("bike", "video game console", "telescope", "guitar", "skateboard"))
    weekly, weeks, saved = _int(rng, 5, 25), _int(rng, 3, 20), 5 * _int(rng, 2, 20)
    price = saved + weekly * weeks
    need = price - saved
    question = (
        f"{saver.name} wants to buy a {item} that costs ${price}. {saver.he.capitalize()} has"
        f" already saved ${saved} and saves ${weekly} more each week. How many weeks will it"
        f" take {saver.him} to have enough money?"
    )
    steps = [
        f"{saver.name} still needs {_calc(f'{price} - {saved}', need)} dollars.",
        f"That takes {_calc(f'{need} / {weekly}', weeks)} weeks.",
    ]
    return question, steps, weeks


def _bakery(rng: np.random.Generator) -> _Draft:
    goods = _pick(rng, ("cookies", "muffins", "rolls", "bagels"))
    trays, per_tray = _int(rng, 3, 8), _int(rng, 8, 24)
    box, price = _pick(rng, (4, 6, 8, 10, 12)), _int(rng, 3, 12)
    baked = trays * per_tray
    kept = baked % box or box
    packed = baked - kept
    boxes = packed // box
    total = boxes * price
    question = (
        f"A bakery bakes {trays} trays of {goods} with {per_tray} {goods} on each tray. It keeps"
        f" {kept} {goods} for its staff and packs the rest into boxes of {box}. Each box sells"
        f" for ${price}. How much money does the bakery make by selling all the boxes?"
    )
    steps = [
        f"The bakery bakes {_calc(f'{trays} * {per_tray}', baked)} {goods}.",
        f"It packs {_calc(f'{baked} - {kept}', packed)} {goods}.",
        f"That fills {_calc(f'{packed} / {box}', boxes)} boxes.",
        f"The boxes sell for {_calc(f'{boxes} * {price}', total)} dollars.",
    ]
    return question, steps, total


def _comparison(rng: np.random.Generator) -> _Draft:
    first, second, third = _people(rng, 3)
    things = _pick(rng, ("shells", "stamps", "acorns", "pine cones", "postcards"))
    count, extra = _int(rng, 5, 40), _int(rng, 1, 10)
    seconds = 2 * count + extra
    fewer = _int(rng, 1, 15)
    thirds = seconds - fewer
    total = count + seconds + thirds
    question = (
        f"{first.name} collected {count} {things}. {second.name} collected {extra} more than"
        f" twice as many as {first.name}, and {third.name} collected {fewer} fewer than"
        f" {second.name}. How many {things} did the three of them collect altogether?"
    )
    steps = [
        f"{second.name} collected {_calc(f'2 * {count} + {extra}', seconds)} {things}.",
        f"{third.name} collected {_calc(f'{seconds} - {fewer}', thirds)} {things}.",
        f"Together they collected {_calc(f'{count} + {seconds} + {thirds}', total)} {things}.",
    ]
    return question, steps, total


#: Template name → drafting function, in the order of the module docstring's table.
TEMPLATES: dict[str, Callable[[np.random.Generator], _Draft]] = {
    "shopping": _shopping,
    "wages": _wages,
    "travel": _travel,
    "ages": _ages,
    "fractions": _fractions,
    "percent": _percent,
    "savings": _savings,
    "bakery": _bakery,
    "comparison": _comparison,
}


def generate(rng: np.random.Generator, template: str | None = None) -> Problem:
    """One problem from ``rng``: ``template`` if given, else a uniformly drawn one. The
    answer text is a worked solution ending in ``#### <answer>``; the id is
    ``"generated/<template>"``."""
    if template is None:
        template = _pick(rng, tuple(TEMPLATES))
    elif template not in TEMPLATES:
        raise ValueError(f"template must be one of {tuple(TEMPLATES)}, got {template!r}")
    question, steps, answer = TEMPLATES[template](rng)
    solution = "\n".join((*steps, f"#### {answer}"))
    return Problem(question, solution, f"generated/{template}")
