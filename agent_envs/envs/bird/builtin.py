"""Built-in offline data: three SQLite databases the project generates, with BIRD-style
questions, evidence and gold SQL, so the env works without downloading anything.

``ensure_builtin(cache_dir)`` writes, once, in BIRD's own layout::

    <cache>/builtin-v1/builtin.json                       36 questions (BIRD's keys)
    <cache>/builtin-v1/databases/<db>/<db>.sqlite         bookshop, clinic, football
    <cache>/builtin-v1/databases/<db>/database_description/<table>.csv

The rows come from a fixed seed through an explicit ``np.random.Generator`` and are the same
on every run (``content_digest`` checks that); the folder is built in a temporary directory
and renamed into place, so processes racing to build it never see half a database. The
default cache is ``$XDG_CACHE_HOME/agent_envs/bird`` (``~/.cache/agent_envs/bird``), or the
system temporary directory when that is not writable.
"""

from __future__ import annotations

import csv
import datetime
import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agent_envs.envs.bird.builtin_questions import QUESTIONS

__all__ = ["BUILTIN_VERSION", "DATABASES", "content_digest", "default_cache_dir", "ensure_builtin"]

BUILTIN_VERSION = 1
_SEED = 20240627
_CSV_HEADER = (
    "original_column_name",
    "column_name",
    "column_description",
    "data_format",
    "value_description",
)

FIRST_NAMES = (
    "Ana", "Bruno", "Carla", "Diego", "Elena", "Felix", "Grace", "Hugo", "Ines", "Jonas",
    "Kira", "Leo", "Maya", "Nils", "Olga", "Pablo", "Quinn", "Rosa", "Samir", "Tara",
    "Umar", "Vera", "Wen", "Xavier", "Yara", "Zoe", "Amir", "Beatriz", "Chen", "Dmitri",
    "Emma", "Farah", "Gustavo", "Hana", "Ivan", "Julia", "Kofi", "Lina", "Mateo", "Nora",
)  # fmt: skip
LAST_NAMES = (
    "Silva", "Santos", "Costa", "Meyer", "Novak", "Okafor", "Tanaka", "Haddad", "Larsen",
    "Moreau", "Rossi", "Kowalski", "Nguyen", "Patel", "Ferreira", "Schmidt", "Dubois",
    "Jensen", "Ivanova", "Khan", "Garcia", "Lopez", "Walsh", "Byrne", "Murphy", "Fischer",
    "Weber", "Horvat", "Popescu", "Ahmed", "Kim", "Park", "Sato", "Mendes", "Almeida",
    "Duarte", "Pereira", "Ricci", "Marino", "Vidal",
)  # fmt: skip
CITIES = (
    "Lisbon", "Porto", "Braga", "Coimbra", "Faro", "Aveiro",
    "Madrid", "Seville", "Valencia", "Lyon", "Turin", "Dublin",
)  # fmt: skip


@dataclass
class Database:
    """One generated database: DDL, rows per table, and description rows per table."""

    name: str
    ddl: tuple[str, ...]
    rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    notes: dict[str, tuple[tuple[str, str, str, str, str], ...]] = field(default_factory=dict)


# ------------------------------------------------------------------------ helpers
def _pick(rng: np.random.Generator, values: tuple | list, weights: tuple | None = None) -> Any:
    if weights is None:
        return values[int(rng.integers(len(values)))]
    p = np.asarray(weights, dtype=float)
    return values[int(rng.choice(len(values), p=p / p.sum()))]


def _date(rng: np.random.Generator, first: str, last: str) -> str:
    start = datetime.date.fromisoformat(first).toordinal()
    end = datetime.date.fromisoformat(last).toordinal()
    return datetime.date.fromordinal(int(rng.integers(start, end + 1))).isoformat()


def _money(rng: np.random.Generator, low: float, high: float) -> float:
    return round(low + (high - low) * float(rng.random()), 2)


def _person(rng: np.random.Generator) -> tuple[str, str]:
    return _pick(rng, FIRST_NAMES), _pick(rng, LAST_NAMES)


# ------------------------------------------------------------------------ bookshop
PUBLISHERS = (
    ("Harbor House", "Lisbon", 1921), ("Northwind Press", "Dublin", 1950),
    ("Blue Heron Books", "Porto", 1987), ("Atlas & Quill", "Madrid", 1902),
    ("Lantern Editions", "Lyon", 1965), ("Copper Kettle", "Turin", 1999),
    ("Meridian Publishing", "Seville", 1933), ("Pinecone Press", "Braga", 2005),
    ("Silver Birch", "Coimbra", 1978), ("Red Fern Media", "Valencia", 2011),
    ("Tidewater Books", "Faro", 1946), ("Old Mill Editions", "Aveiro", 1890),
)  # fmt: skip
GENRES = (
    "Mystery", "Science Fiction", "Fantasy", "Romance", "History",
    "Biography", "Poetry", "Thriller", "Children", "Cooking",
)  # fmt: skip
COUNTRIES = (
    "Portugal", "Spain", "France", "Italy", "Ireland",
    "Canada", "Brazil", "Japan", "Nigeria", "Germany",
)  # fmt: skip
_ADJECTIVES = (
    "Silent", "Hidden", "Last", "Golden", "Broken", "Endless", "Crimson", "Quiet", "Distant",
    "Forgotten", "Burning", "Frozen", "Secret", "Wandering", "Shattered", "Bright", "Hollow",
    "Lost", "Salt", "Winter",
)  # fmt: skip
_NOUNS = (
    "River", "Garden", "Map", "Tower", "Harbor", "Letter", "Orchard", "Lantern", "Kingdom",
    "Voyage", "Mirror", "Island", "Forest", "Clock", "Bridge", "Song", "Engine", "Archive",
    "Road", "Sky",
)  # fmt: skip
_ORDER_STATUS = ("delivered", "shipped", "cancelled", "pending")


def _bookshop(rng: np.random.Generator) -> Database:
    db = Database(
        "bookshop",
        (
            "CREATE TABLE publishers (\n    publisher_id INTEGER PRIMARY KEY,\n"
            "    name TEXT NOT NULL,\n    city TEXT,\n    founded_year INTEGER\n)",
            "CREATE TABLE authors (\n    author_id INTEGER PRIMARY KEY,\n    first_name TEXT,\n"
            "    last_name TEXT,\n    country TEXT,\n    birth_year INTEGER\n)",
            "CREATE TABLE books (\n    book_id INTEGER PRIMARY KEY,\n    title TEXT NOT NULL,\n"
            "    author_id INTEGER REFERENCES authors (author_id),\n"
            "    publisher_id INTEGER REFERENCES publishers (publisher_id),\n"
            "    genre TEXT,\n    published_year INTEGER,\n    price REAL,\n    pages INTEGER\n)",
            "CREATE TABLE customers (\n    customer_id INTEGER PRIMARY KEY,\n"
            "    first_name TEXT,\n    last_name TEXT,\n    email TEXT,\n    city TEXT,\n"
            "    joined_date TEXT\n)",
            "CREATE TABLE orders (\n    order_id INTEGER PRIMARY KEY,\n"
            "    customer_id INTEGER REFERENCES customers (customer_id),\n"
            "    order_date TEXT,\n    status TEXT\n)",
            "CREATE TABLE order_items (\n    order_id INTEGER REFERENCES orders (order_id),\n"
            "    book_id INTEGER REFERENCES books (book_id),\n    quantity INTEGER,\n"
            "    unit_price REAL,\n    PRIMARY KEY (order_id, book_id)\n)",
        ),
    )
    db.rows["publishers"] = [(i + 1, *p) for i, p in enumerate(PUBLISHERS)]
    db.rows["authors"] = [
        (i, *_person(rng), _pick(rng, COUNTRIES), int(rng.integers(1930, 1996)))
        for i in range(1, 81)
    ]
    titles = [f"The {a} {n}" for a in _ADJECTIVES for n in _NOUNS]
    order = rng.permutation(len(titles))
    books = []
    for book_id, index in enumerate(order, start=1):
        year = (
            int(rng.integers(1950, 2025)) if rng.random() < 0.4 else int(rng.integers(1995, 2025))
        )
        books.append((
            book_id, titles[int(index)], int(rng.integers(1, 81)), int(rng.integers(1, 13)),
            _pick(rng, GENRES, (6, 5, 5, 4, 3, 2, 1, 4, 3, 2)), year,
            _money(rng, 6, 45), int(rng.integers(80, 900)),
        ))  # fmt: skip
    db.rows["books"] = books
    customers = []
    for customer_id in range(1, 601):
        first, last = _person(rng)
        email = f"{first}.{last}{customer_id}@example.com".lower()
        city = _pick(rng, CITIES, (9, 7, 4, 3, 2, 2, 4, 2, 2, 2, 1, 2))
        customers.append(
            (customer_id, first, last, email, city, _date(rng, "2018-01-01", "2023-12-31"))
        )
    db.rows["customers"] = customers
    orders, items = [], []
    for order_id in range(1, 1801):
        customer = customers[int(rng.integers(len(customers)))]
        date = _date(rng, max(customer[5], "2020-01-01"), "2024-12-31")
        status = _pick(rng, _ORDER_STATUS, (70, 10, 12, 8))
        orders.append((order_id, customer[0], date, status))
        for book_index in rng.choice(len(books), size=int(rng.integers(1, 5)), replace=False):
            book = books[int(book_index)]
            quantity = _pick(rng, (1, 2, 3), (6, 3, 1))
            items.append((order_id, book[0], quantity, book[6]))
    db.rows["orders"] = orders
    db.rows["order_items"] = items
    db.notes = {
        "publishers": (
            ("publisher_id", "publisher id", "unique id of the publisher", "integer", ""),
            ("name", "publisher name", "the publisher's name", "text", ""),
            ("city", "", "the city of the publisher's head office", "text", ""),
            ("founded_year", "founded year", "the year the publisher was founded", "integer", ""),
        ),
        "authors": (
            ("author_id", "author id", "unique id of the author", "integer", ""),
            ("first_name", "first name", "the author's first name", "text",
             "full name = first_name, last_name"),
            ("last_name", "last name", "the author's last name", "text", ""),
            ("country", "", "the author's country of origin", "text", ""),
            ("birth_year", "birth year", "the year the author was born", "integer", ""),
        ),
        "books": (
            ("book_id", "book id", "unique id of the book", "integer", ""),
            ("title", "", "the title of the book", "text", ""),
            ("author_id", "author id", "the book's author", "integer", "references authors"),
            ("publisher_id", "publisher id", "the book's publisher", "integer",
             "references publishers"),
            ("genre", "", "the genre of the book", "text", ""),
            ("published_year", "published year", "the year of first publication", "integer", ""),
            ("price", "", "the list price of the book", "real", "the unit is euro"),
            ("pages", "", "the number of pages", "integer", ""),
        ),
        "customers": (
            ("customer_id", "customer id", "unique id of the customer", "integer", ""),
            ("first_name", "first name", "the customer's first name", "text",
             "full name = first_name, last_name"),
            ("last_name", "last name", "the customer's last name", "text", ""),
            ("email", "", "the customer's e-mail address", "text", ""),
            ("city", "", "the city where the customer lives", "text", ""),
            ("joined_date", "joined date", "the day the customer signed up", "text",
             "YYYY-MM-DD"),
        ),
        "orders": (
            ("order_id", "order id", "unique id of the order", "integer", ""),
            ("customer_id", "customer id", "the customer who placed the order", "integer",
             "references customers"),
            ("order_date", "order date", "the day the order was placed", "text", "YYYY-MM-DD"),
            ("status", "", "the state of the order", "text",
             "'delivered', 'shipped' (on its way), 'cancelled' or 'pending' (not yet shipped)"),
        ),
        "order_items": (
            ("order_id", "order id", "the order this line belongs to", "integer",
             "references orders"),
            ("book_id", "book id", "the book ordered", "integer", "references books"),
            ("quantity", "", "the number of copies", "integer", ""),
            ("unit_price", "unit price", "the price paid per copy", "real", "the unit is euro"),
        ),
    }  # fmt: skip
    return db


# ------------------------------------------------------------------------ clinic
DEPARTMENTS = (
    ("Cardiology", 3), ("Pediatrics", 1), ("Neurology", 4), ("Orthopedics", 2),
    ("Dermatology", 2), ("Oncology", 5), ("General Medicine", 1), ("Psychiatry", 4),
)  # fmt: skip
REASONS = {
    "Cardiology": ("chest pain", "hypertension", "palpitations", "check-up"),
    "Pediatrics": ("fever", "vaccination", "check-up", "ear infection"),
    "Neurology": ("migraine", "dizziness", "numbness", "seizure"),
    "Orthopedics": ("back pain", "fracture", "knee pain", "sprain"),
    "Dermatology": ("rash", "acne", "mole check", "eczema"),
    "Oncology": ("screening", "chemotherapy", "follow-up", "biopsy"),
    "General Medicine": ("flu", "check-up", "fatigue", "migraine", "back pain"),
    "Psychiatry": ("anxiety", "depression", "insomnia", "check-up"),
}
DRUGS = {
    "Ibuprofen": (200, 400, 600), "Paracetamol": (500, 1000), "Amoxicillin": (250, 500),
    "Lisinopril": (10, 20), "Sumatriptan": (50, 100), "Sertraline": (50, 100),
    "Metformin": (500, 850), "Hydrocortisone": (10, 20), "Atorvastatin": (10, 20, 40),
    "Omeprazole": (20, 40),
}  # fmt: skip
_REASON_DRUGS = {
    "migraine": (("Sumatriptan", "Ibuprofen", "Paracetamol"), (5, 3, 2)),
    "hypertension": (("Lisinopril", "Atorvastatin"), (3, 1)),
    "back pain": (("Ibuprofen", "Paracetamol"), (3, 2)),
    "anxiety": (("Sertraline",), (1,)),
    "depression": (("Sertraline",), (1,)),
    "rash": (("Hydrocortisone",), (1,)),
    "eczema": (("Hydrocortisone",), (1,)),
    "ear infection": (("Amoxicillin", "Paracetamol"), (3, 1)),
    "fever": (("Paracetamol", "Ibuprofen"), (3, 1)),
}
_INSURANCE = ("MediCare Plus", "HealthFirst", "Unity Health", None)
_OUTCOMES = ("discharged", "follow-up", "referred", "admitted")


def _clinic(rng: np.random.Generator) -> Database:
    db = Database(
        "clinic",
        (
            "CREATE TABLE departments (\n    dept_id INTEGER PRIMARY KEY,\n"
            "    name TEXT NOT NULL,\n    floor INTEGER\n)",
            "CREATE TABLE doctors (\n    doctor_id INTEGER PRIMARY KEY,\n    first_name TEXT,\n"
            "    last_name TEXT,\n    dept_id INTEGER REFERENCES departments (dept_id),\n"
            "    hire_date TEXT,\n    salary INTEGER\n)",
            "CREATE TABLE patients (\n    patient_id INTEGER PRIMARY KEY,\n"
            "    first_name TEXT,\n    last_name TEXT,\n    sex TEXT,\n    birth_date TEXT,\n"
            "    city TEXT,\n    insurance TEXT\n)",
            "CREATE TABLE visits (\n    visit_id INTEGER PRIMARY KEY,\n"
            "    patient_id INTEGER REFERENCES patients (patient_id),\n"
            "    doctor_id INTEGER REFERENCES doctors (doctor_id),\n    visit_date TEXT,\n"
            "    reason TEXT,\n    fee REAL,\n    outcome TEXT\n)",
            "CREATE TABLE prescriptions (\n    prescription_id INTEGER PRIMARY KEY,\n"
            "    visit_id INTEGER REFERENCES visits (visit_id),\n    drug TEXT,\n"
            "    dose_mg INTEGER,\n    days INTEGER\n)",
        ),
    )
    db.rows["departments"] = [(i + 1, name, floor) for i, (name, floor) in enumerate(DEPARTMENTS)]
    doctors = []
    for doctor_id in range(1, 46):
        dept = int(rng.choice(8, p=np.array((6, 5, 5, 5, 3, 4, 12, 5)) / 45)) + 1
        salary = int(rng.integers(600, 2200)) * 100
        doctors.append(
            (doctor_id, *_person(rng), dept, _date(rng, "2000-01-01", "2024-06-30"), salary)
        )
    db.rows["doctors"] = doctors
    patients = []
    for patient_id in range(1, 901):
        first, last = _person(rng)
        patients.append((
            patient_id, first, last, _pick(rng, ("F", "M")), _date(rng, "1935-01-01", "2023-12-31"),
            _pick(rng, CITIES, (9, 7, 4, 3, 2, 2, 4, 2, 2, 2, 1, 2)),
            _pick(rng, _INSURANCE, (35, 30, 20, 15)),
        ))  # fmt: skip
    db.rows["patients"] = patients
    visits, prescriptions = [], []
    for visit_id in range(1, 2601):
        doctor = doctors[int(rng.integers(len(doctors)))]
        department = DEPARTMENTS[doctor[3] - 1][0]
        reason = _pick(rng, REASONS[department])
        visits.append((
            visit_id, int(rng.integers(1, 901)), doctor[0], _date(rng, "2020-01-01", "2024-12-31"),
            reason, _money(rng, 40, 250), _pick(rng, _OUTCOMES, (60, 25, 10, 5)),
        ))  # fmt: skip
        if rng.random() < 0.6:
            names, weights = _REASON_DRUGS.get(reason, (tuple(DRUGS), None))
            drug = _pick(rng, names, weights)
            dose = _pick(rng, DRUGS[drug])
            prescriptions.append(
                (len(prescriptions) + 1, visit_id, drug, dose, int(rng.integers(3, 31)))
            )
    db.rows["visits"] = visits
    db.rows["prescriptions"] = prescriptions
    db.notes = {
        "departments": (
            ("dept_id", "department id", "unique id of the department", "integer", ""),
            ("name", "department name", "the department's name", "text", ""),
            ("floor", "", "the floor of the building the department is on", "integer", ""),
        ),
        "doctors": (
            ("doctor_id", "doctor id", "unique id of the doctor", "integer", ""),
            ("first_name", "first name", "the doctor's first name", "text",
             "full name = first_name, last_name"),
            ("last_name", "last name", "the doctor's last name", "text", ""),
            ("dept_id", "department id", "the doctor's department", "integer",
             "references departments"),
            ("hire_date", "hire date", "the day the doctor was hired", "text", "YYYY-MM-DD"),
            ("salary", "", "the doctor's yearly salary", "integer", "the unit is euro"),
        ),
        "patients": (
            ("patient_id", "patient id", "unique id of the patient", "integer", ""),
            ("first_name", "first name", "the patient's first name", "text",
             "full name = first_name, last_name"),
            ("last_name", "last name", "the patient's last name", "text", ""),
            ("sex", "", "the patient's sex", "text", "'F': female; 'M': male"),
            ("birth_date", "birth date", "the patient's date of birth", "text", "YYYY-MM-DD"),
            ("city", "", "the city where the patient lives", "text", ""),
            ("insurance", "", "the patient's health insurer", "text",
             "NULL means the patient has no insurance"),
        ),
        "visits": (
            ("visit_id", "visit id", "unique id of the visit", "integer", ""),
            ("patient_id", "patient id", "the patient seen", "integer", "references patients"),
            ("doctor_id", "doctor id", "the doctor who saw the patient", "integer",
             "references doctors"),
            ("visit_date", "visit date", "the day of the visit", "text", "YYYY-MM-DD"),
            ("reason", "", "why the patient came", "text", ""),
            ("fee", "", "the fee charged for the visit", "real", "the unit is euro"),
            ("outcome", "", "how the visit ended", "text",
             "'discharged', 'follow-up' (another visit booked), 'referred' (sent to a"
             " specialist) or 'admitted' (admitted to hospital)"),
        ),
        "prescriptions": (
            ("prescription_id", "prescription id", "unique id of the prescription", "integer",
             ""),
            ("visit_id", "visit id", "the visit at which the drug was prescribed", "integer",
             "references visits"),
            ("drug", "", "the drug prescribed", "text", ""),
            ("dose_mg", "dose in mg", "the dose of one intake", "integer", "the unit is mg"),
            ("days", "", "for how many days the drug is to be taken", "integer", ""),
        ),
    }  # fmt: skip
    return db


# ------------------------------------------------------------------------ football
TEAMS = (
    ("Northbridge United", "Northbridge", 1878, "Harbour Road", 42000),
    ("Riverside Rovers", "Riverside", 1892, "Mill Lane", 31000),
    ("Eastport Athletic", "Eastport", 1905, "Quay Park", 27500),
    ("Westfield City", "Westfield", 1880, "Westfield Arena", 51000),
    ("Southgate Albion", "Southgate", 1899, "Albion Ground", 23000),
    ("Highmoor Town", "Highmoor", 1921, "Moor Park", 18500),
    ("Lakeside Wanderers", "Lakeside", 1887, "Lakeside Stadium", 36000),
    ("Kingsbury Forest", "Kingsbury", 1910, "Forest Lane", 29000),
    ("Ashford Rangers", "Ashford", 1895, "Ranger Park", 25000),
    ("Bramwell Villa", "Bramwell", 1930, "Villa Road", 21000),
    ("Coldwater Celtic", "Coldwater", 1888, "Celtic Fields", 33000),
    ("Dunmore Harriers", "Dunmore", 1948, "Harriers Way", 15000),
    ("Elmstead Orient", "Elmstead", 1901, "Orient Road", 26500),
    ("Fairhaven Athletic", "Fairhaven", 1912, "Seafront Stadium", 30500),
    ("Greystone FC", "Greystone", 1965, "Greystone Park", 12000),
    ("Hollins Borough", "Hollins", 1883, "Borough Ground", 38000),
)
NATIONALITIES = (
    "England", "Scotland", "Ireland", "Wales", "Brazil", "France",
    "Spain", "Portugal", "Nigeria", "Netherlands", "Germany", "Argentina",
)  # fmt: skip
_POSITIONS = (("GK", 3, 185, 200, 0.02), ("DF", 8, 175, 195, 0.7), ("MF", 8, 168, 188, 2.5),
              ("FW", 5, 170, 192, 5.0))  # fmt: skip
SEASONS = ("2021/2022", "2022/2023", "2023/2024")


def _football(rng: np.random.Generator) -> Database:
    db = Database(
        "football",
        (
            "CREATE TABLE teams (\n    team_id INTEGER PRIMARY KEY,\n    name TEXT NOT NULL,\n"
            "    city TEXT,\n    founded INTEGER,\n    stadium TEXT,\n    capacity INTEGER\n)",
            "CREATE TABLE players (\n    player_id INTEGER PRIMARY KEY,\n    name TEXT,\n"
            "    team_id INTEGER REFERENCES teams (team_id),\n    position TEXT,\n"
            "    birth_date TEXT,\n    nationality TEXT,\n    height_cm INTEGER\n)",
            "CREATE TABLE matches (\n    match_id INTEGER PRIMARY KEY,\n    season TEXT,\n"
            "    match_date TEXT,\n    home_team_id INTEGER REFERENCES teams (team_id),\n"
            "    away_team_id INTEGER REFERENCES teams (team_id),\n    home_goals INTEGER,\n"
            "    away_goals INTEGER,\n    attendance INTEGER\n)",
            "CREATE TABLE goals (\n    goal_id INTEGER PRIMARY KEY,\n"
            "    match_id INTEGER REFERENCES matches (match_id),\n"
            "    player_id INTEGER REFERENCES players (player_id),\n    minute INTEGER,\n"
            "    is_penalty INTEGER\n)",
        ),
    )
    db.rows["teams"] = [(i + 1, *team) for i, team in enumerate(TEAMS)]
    players, squads = [], {}
    nationality_weights = (30, 6, 5, 4, 4, 5, 5, 4, 3, 3, 3, 2)
    for team_id in range(1, len(TEAMS) + 1):
        squad = []
        for position, count, low, high, weight in _POSITIONS:
            for _ in range(count):
                player_id = len(players) + 1
                first, last = _person(rng)
                players.append((
                    player_id, f"{first} {last}", team_id, position,
                    _date(rng, "1985-01-01", "2006-12-31"),
                    _pick(rng, NATIONALITIES, nationality_weights),
                    int(rng.integers(low, high + 1)),
                ))  # fmt: skip
                squad.append((player_id, weight))
        squads[team_id] = squad
    db.rows["players"] = players
    matches, goals = [], []
    for season_index, season in enumerate(SEASONS):
        first_day = datetime.date(2021 + season_index, 8, 7).toordinal()
        fixtures = [(h, a) for h in range(1, 17) for a in range(1, 17) if h != a]
        for slot, fixture_index in enumerate(rng.permutation(len(fixtures))):
            home, away = fixtures[int(fixture_index)]
            date = datetime.date.fromordinal(first_day + slot * 280 // len(fixtures)).isoformat()
            scores = (int(rng.poisson(1.5)), int(rng.poisson(1.1)))
            capacity = TEAMS[home - 1][4]
            attendance = int(capacity * (0.55 + 0.45 * float(rng.random())))
            match_id = len(matches) + 1
            matches.append((match_id, season, date, home, away, *scores, attendance))
            for team, count in ((home, scores[0]), (away, scores[1])):
                ids = [player_id for player_id, _ in squads[team]]
                weights = np.array([weight for _, weight in squads[team]])
                for _ in range(count):
                    scorer = ids[int(rng.choice(len(ids), p=weights / weights.sum()))]
                    minute = int(rng.integers(1, 95))
                    penalty = int(rng.random() < 0.1)
                    goals.append((len(goals) + 1, match_id, scorer, minute, penalty))
    db.rows["matches"] = matches
    db.rows["goals"] = goals
    db.notes = {
        "teams": (
            ("team_id", "team id", "unique id of the team", "integer", ""),
            ("name", "team name", "the club's name", "text", ""),
            ("city", "", "the club's home town", "text", ""),
            ("founded", "", "the year the club was founded", "integer", ""),
            ("stadium", "", "the name of the home stadium", "text", ""),
            ("capacity", "", "the number of seats in the home stadium", "integer", ""),
        ),
        "players": (
            ("player_id", "player id", "unique id of the player", "integer", ""),
            ("name", "player name", "the player's full name", "text", ""),
            ("team_id", "team id", "the player's club", "integer", "references teams"),
            ("position", "", "the player's position", "text",
             "'GK': goalkeeper; 'DF': defender; 'MF': midfielder; 'FW': forward"),
            ("birth_date", "birth date", "the player's date of birth", "text", "YYYY-MM-DD"),
            ("nationality", "", "the country the player represents", "text", ""),
            ("height_cm", "height in cm", "the player's height", "integer", "the unit is cm"),
        ),
        "matches": (
            ("match_id", "match id", "unique id of the match", "integer", ""),
            ("season", "", "the league season", "text", "e.g. '2022/2023'"),
            ("match_date", "match date", "the day the match was played", "text", "YYYY-MM-DD"),
            ("home_team_id", "home team id", "the team playing at home", "integer",
             "references teams"),
            ("away_team_id", "away team id", "the visiting team", "integer",
             "references teams"),
            ("home_goals", "home goals", "goals scored by the home team", "integer", ""),
            ("away_goals", "away goals", "goals scored by the away team", "integer",
             "home_goals > away_goals: home win; home_goals < away_goals: away win;"
             " equal: draw"),
            ("attendance", "", "the number of spectators", "integer", ""),
        ),
        "goals": (
            ("goal_id", "goal id", "unique id of the goal", "integer", ""),
            ("match_id", "match id", "the match the goal was scored in", "integer",
             "references matches"),
            ("player_id", "player id", "the scorer", "integer", "references players"),
            ("minute", "", "the minute of the match the goal was scored in", "integer",
             "above 90 means stoppage time"),
            ("is_penalty", "is penalty", "whether the goal was a penalty kick", "integer",
             "1: penalty; 0: open play"),
        ),
    }  # fmt: skip
    return db


#: The generators, in the order their random streams are drawn.
DATABASES: tuple[tuple[str, Callable[[np.random.Generator], Database]], ...] = (
    ("bookshop", _bookshop),
    ("clinic", _clinic),
    ("football", _football),
)


def generate() -> list[Database]:
    """Every built-in database, from the fixed seed (one child generator per database)."""
    children = np.random.SeedSequence(_SEED).spawn(len(DATABASES))
    return [
        make(np.random.default_rng(child))
        for (_, make), child in zip(DATABASES, children, strict=True)
    ]


# ------------------------------------------------------------------------ files
def _write_database(db: Database, folder: Path) -> None:
    folder.mkdir(parents=True)
    connection = sqlite3.connect(folder / f"{db.name}.sqlite")
    try:
        for statement in db.ddl:
            connection.execute(statement)
        for table, rows in db.rows.items():
            marks = ", ".join("?" * len(rows[0]))
            connection.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
        connection.commit()
    finally:
        connection.close()
    notes = folder / "database_description"
    notes.mkdir()
    for table, rows in db.notes.items():
        with open(notes / f"{table}.csv", "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(_CSV_HEADER)
            writer.writerows(rows)


def content_digest(databases: list[Database]) -> str:
    """A digest of every generated row, to hold the generator to its output."""
    digest = hashlib.sha256()
    for db in databases:
        for table, rows in db.rows.items():
            digest.update(f"{db.name}.{table}\n".encode())
            for row in rows:
                digest.update(repr(row).encode() + b"\n")
    return digest.hexdigest()


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "agent_envs" / "bird"


def _build(target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".building-", dir=target.parent))
    try:
        for db in generate():
            _write_database(db, scratch / "databases" / db.name)
        records = [{"question_id": i, **question} for i, question in enumerate(QUESTIONS)]
        (scratch / "builtin.json").write_text(json.dumps(records, indent=1) + "\n")
        try:
            os.rename(scratch, target)
        except OSError:
            if not (target / "builtin.json").is_file():  # not a lost race: a real failure
                raise
    finally:
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)


def ensure_builtin(cache_dir: str | Path | None = None) -> tuple[Path, Path]:
    """Generate the built-in data if needed; returns ``(questions json, db_root)``."""
    roots = [Path(cache_dir)] if cache_dir is not None else [default_cache_dir()]
    if cache_dir is None:
        roots.append(
            Path(tempfile.gettempdir()) / f"agent_envs-bird-{getattr(os, 'getuid', lambda: 0)()}"
        )
    errors = []
    for root in roots:
        target = root / f"builtin-v{BUILTIN_VERSION}"
        try:
            if not (target / "builtin.json").is_file():
                _build(target)
            return target / "builtin.json", target / "databases"
        except OSError as error:
            errors.append(f"{root}: {error}")
    raise ValueError(f"cache_dir: cannot write the built-in BIRD data ({'; '.join(errors)})")
