"""The questions of the built-in BIRD databases, in BIRD's format (``question_id`` is
the position in this tuple). Each gold query returns a non-empty result with no tie at a
``LIMIT 1``; ``tests/envs/bird/test_builtin.py`` holds them to that."""

from __future__ import annotations

__all__ = ["QUESTIONS"]

QUESTIONS: tuple[dict[str, str], ...] = (
    {
        "db_id": "bookshop",
        "question": "How many Mystery books cost more than 30 euros?",
        "evidence": (
            "Mystery books refers to genre = 'Mystery'; cost more than 30 euros "
            "refers to price > 30"
        ),
        "SQL": "SELECT COUNT(book_id) FROM books WHERE genre = 'Mystery' AND price > 30",
        "difficulty": "simple",
    },
    {
        "db_id": "bookshop",
        "question": "List the titles of the books published in 2015 that have more than 600 pages.",
        "evidence": (
            "published in 2015 refers to published_year = 2015; more than 600 pages "
            "refers to pages > 600"
        ),
        "SQL": "SELECT title FROM books WHERE published_year = 2015 AND pages > 600",
        "difficulty": "simple",
    },
    {
        "db_id": "bookshop",
        "question": "How many customers from Porto joined in 2021?",
        "evidence": (
            "from Porto refers to city = 'Porto'; joined in 2021 refers to joined_date LIKE '2021%'"
        ),
        "SQL": (
            "SELECT COUNT(customer_id) FROM customers WHERE city = 'Porto' AND "
            "joined_date LIKE '2021%'"
        ),
        "difficulty": "simple",
    },
    {
        "db_id": "bookshop",
        "question": "Which publisher has published the most Mystery books? Give its name.",
        "evidence": (
            "Mystery books refers to genre = 'Mystery'; the most books refers to "
            "MAX(COUNT(book_id))"
        ),
        "SQL": (
            "SELECT T2.name FROM books AS T1 INNER JOIN publishers AS T2 ON "
            "T1.publisher_id = T2.publisher_id WHERE T1.genre = 'Mystery' GROUP BY "
            "T2.publisher_id ORDER BY COUNT(T1.book_id) DESC LIMIT 1"
        ),
        "difficulty": "moderate",
    },
    {
        "db_id": "bookshop",
        "question": (
            "What was the revenue of the delivered orders placed in 2023? Round it to"
            " 2 decimal places."
        ),
        "evidence": (
            "revenue = SUM(quantity * unit_price); delivered refers to status = "
            "'delivered'; placed in 2023 refers to SUBSTR(order_date, 1, 4) = '2023'"
        ),
        "SQL": (
            "SELECT ROUND(SUM(T2.quantity * T2.unit_price), 2) FROM orders AS T1 "
            "INNER JOIN order_items AS T2 ON T1.order_id = T2.order_id WHERE "
            "T1.status = 'delivered' AND SUBSTR(T1.order_date, 1, 4) = '2023'"
        ),
        "difficulty": "moderate",
    },
    {
        "db_id": "bookshop",
        "question": "How many orders placed by customers living in Lisbon were cancelled?",
        "evidence": (
            "living in Lisbon refers to city = 'Lisbon'; cancelled refers to status = 'cancelled'"
        ),
        "SQL": (
            "SELECT COUNT(T1.order_id) FROM orders AS T1 INNER JOIN customers AS T2 "
            "ON T1.customer_id = T2.customer_id WHERE T2.city = 'Lisbon' AND "
            "T1.status = 'cancelled'"
        ),
        "difficulty": "moderate",
    },
    {
        "db_id": "bookshop",
        "question": "Give the full names of the authors from Canada who wrote at least 6 books.",
        "evidence": (
            "from Canada refers to country = 'Canada'; full name refers to "
            "first_name, last_name; at least 6 books refers to COUNT(book_id) >= 6"
        ),
        "SQL": (
            "SELECT T1.first_name, T1.last_name FROM authors AS T1 INNER JOIN books "
            "AS T2 ON T1.author_id = T2.author_id WHERE T1.country = 'Canada' GROUP "
            "BY T1.author_id HAVING COUNT(T2.book_id) >= 6"
        ),
        "difficulty": "moderate",
    },
    {
        "db_id": "bookshop",
        "question": (
            "What is the average price of the books published by Harbor House? Round "
            "it to 2 decimal places."
        ),
        "evidence": (
            "published by Harbor House refers to name = 'Harbor House'; average price = AVG(price)"
        ),
        "SQL": (
            "SELECT ROUND(AVG(T1.price), 2) FROM books AS T1 INNER JOIN publishers AS"
            " T2 ON T1.publisher_id = T2.publisher_id WHERE T2.name = 'Harbor House'"
        ),
        "difficulty": "simple",
    },
    {
        "db_id": "bookshop",
        "question": "Which genre has the highest average number of pages?",
        "evidence": "highest average number of pages refers to MAX(AVG(pages))",
        "SQL": "SELECT genre FROM books GROUP BY genre ORDER BY AVG(pages) DESC LIMIT 1",
        "difficulty": "moderate",
    },
    {
        "db_id": "bookshop",
        "question": "What percentage of the orders placed in 2022 were cancelled?",
        "evidence": (
            "percentage = DIVIDE(COUNT(status = 'cancelled'), COUNT(order_id)) * 100;"
            " placed in 2022 refers to order_date LIKE '2022%'"
        ),
        "SQL": (
            "SELECT CAST(SUM(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END) AS "
            "REAL) * 100 / COUNT(order_id) FROM orders WHERE order_date LIKE '2022%'"
        ),
        "difficulty": "challenging",
    },
    {
        "db_id": "bookshop",
        "question": (
            "Which customer spent the most on Science Fiction books in delivered "
            "orders? Give the customer's full name."
        ),
        "evidence": (
            "Science Fiction books refers to genre = 'Science Fiction'; delivered "
            "refers to status = 'delivered'; spent = SUM(quantity * unit_price); full"
            " name refers to first_name, last_name"
        ),
        "SQL": (
            "SELECT T4.first_name, T4.last_name FROM order_items AS T1 INNER JOIN "
            "books AS T2 ON T1.book_id = T2.book_id INNER JOIN orders AS T3 ON "
            "T1.order_id = T3.order_id INNER JOIN customers AS T4 ON T3.customer_id ="
            " T4.customer_id WHERE T2.genre = 'Science Fiction' AND T3.status = "
            "'delivered' GROUP BY T4.customer_id ORDER BY SUM(T1.quantity * "
            "T1.unit_price) DESC LIMIT 1"
        ),
        "difficulty": "challenging",
    },
    {
        "db_id": "bookshop",
        "question": (
            "Among the books published before 1970, which one sold the most copies? Give its title."
        ),
        "evidence": (
            "published before 1970 refers to published_year < 1970; copies sold = SUM(quantity)"
        ),
        "SQL": (
            "SELECT T1.title FROM books AS T1 INNER JOIN order_items AS T2 ON "
            "T1.book_id = T2.book_id WHERE T1.published_year < 1970 GROUP BY "
            "T1.book_id ORDER BY SUM(T2.quantity) DESC LIMIT 1"
        ),
        "difficulty": "challenging",
    },
    {
        "db_id": "clinic",
        "question": "How many female patients live in Braga?",
        "evidence": "female refers to sex = 'F'; live in Braga refers to city = 'Braga'",
        "SQL": "SELECT COUNT(patient_id) FROM patients WHERE sex = 'F' AND city = 'Braga'",
        "difficulty": "simple",
    },
    {
        "db_id": "clinic",
        "question": "How many patients have no health insurance?",
        "evidence": "no health insurance refers to insurance IS NULL",
        "SQL": "SELECT COUNT(patient_id) FROM patients WHERE insurance IS NULL",
        "difficulty": "simple",
    },
    {
        "db_id": "clinic",
        "question": "Which department has the fewest doctors? Give its name.",
        "evidence": "the fewest doctors refers to MIN(COUNT(doctor_id))",
        "SQL": (
            "SELECT T1.name FROM departments AS T1 INNER JOIN doctors AS T2 ON "
            "T1.dept_id = T2.dept_id GROUP BY T1.dept_id ORDER BY COUNT(T2.doctor_id)"
            " ASC LIMIT 1"
        ),
        "difficulty": "moderate",
    },
    {
        "db_id": "clinic",
        "question": (
            "What is the average fee of the visits to doctors of the Cardiology "
            "department? Round it to 2 decimal places."
        ),
        "evidence": "Cardiology department refers to name = 'Cardiology'; average fee = AVG(fee)",
        "SQL": (
            "SELECT ROUND(AVG(T1.fee), 2) FROM visits AS T1 INNER JOIN doctors AS T2 "
            "ON T1.doctor_id = T2.doctor_id INNER JOIN departments AS T3 ON "
            "T2.dept_id = T3.dept_id WHERE T3.name = 'Cardiology'"
        ),
        "difficulty": "moderate",
    },
    {
        "db_id": "clinic",
        "question": "How many visits in 2023 ended with the patient admitted to hospital?",
        "evidence": (
            "in 2023 refers to visit_date LIKE '2023%'; admitted to hospital refers "
            "to outcome = 'admitted'"
        ),
        "SQL": (
            "SELECT COUNT(visit_id) FROM visits WHERE visit_date LIKE '2023%' AND "
            "outcome = 'admitted'"
        ),
        "difficulty": "simple",
    },
    {
        "db_id": "clinic",
        "question": (
            "List the full names of the doctors hired after 2018 who work on the fourth floor."
        ),
        "evidence": (
            "full name refers to first_name, last_name; hired after 2018 refers to "
            "hire_date >= '2019-01-01'; fourth floor refers to floor = 4"
        ),
        "SQL": (
            "SELECT T1.first_name, T1.last_name FROM doctors AS T1 INNER JOIN "
            "departments AS T2 ON T1.dept_id = T2.dept_id WHERE T1.hire_date >= "
            "'2019-01-01' AND T2.floor = 4"
        ),
        "difficulty": "moderate",
    },
    {
        "db_id": "clinic",
        "question": (
            "How many distinct patients born before 1950 visited the Cardiology department?"
        ),
        "evidence": (
            "born before 1950 refers to birth_date < '1950-01-01'; Cardiology "
            "department refers to name = 'Cardiology'"
        ),
        "SQL": (
            "SELECT COUNT(DISTINCT T1.patient_id) FROM patients AS T1 INNER JOIN "
            "visits AS T2 ON T1.patient_id = T2.patient_id INNER JOIN doctors AS T3 "
            "ON T2.doctor_id = T3.doctor_id INNER JOIN departments AS T4 ON "
            "T3.dept_id = T4.dept_id WHERE T1.birth_date < '1950-01-01' AND T4.name ="
            " 'Cardiology'"
        ),
        "difficulty": "challenging",
    },
    {
        "db_id": "clinic",
        "question": "Which drug was prescribed most often at visits for migraine?",
        "evidence": (
            "visits for migraine refers to reason = 'migraine'; prescribed most often"
            " refers to MAX(COUNT(prescription_id))"
        ),
        "SQL": (
            "SELECT T1.drug FROM prescriptions AS T1 INNER JOIN visits AS T2 ON "
            "T1.visit_id = T2.visit_id WHERE T2.reason = 'migraine' GROUP BY T1.drug "
            "ORDER BY COUNT(T1.prescription_id) DESC LIMIT 1"
        ),
        "difficulty": "moderate",
    },
    {
        "db_id": "clinic",
        "question": (
            "What is the total number of days of the Ibuprofen prescriptions with a "
            "dose of at least 400 mg?"
        ),
        "evidence": (
            "Ibuprofen refers to drug = 'Ibuprofen'; a dose of at least 400 mg refers"
            " to dose_mg >= 400; total number of days = SUM(days)"
        ),
        "SQL": "SELECT SUM(days) FROM prescriptions WHERE drug = 'Ibuprofen' AND dose_mg >= 400",
        "difficulty": "simple",
    },
    {
        "db_id": "clinic",
        "question": "How many different patients did the doctor with the highest salary see?",
        "evidence": "the highest salary refers to MAX(salary)",
        "SQL": (
            "SELECT COUNT(DISTINCT T1.patient_id) FROM visits AS T1 INNER JOIN "
            "doctors AS T2 ON T1.doctor_id = T2.doctor_id WHERE T2.salary = (SELECT "
            "MAX(salary) FROM doctors)"
        ),
        "difficulty": "challenging",
    },
    {
        "db_id": "clinic",
        "question": "What is the highest fee charged for a visit that ended with a referral?",
        "evidence": (
            "ended with a referral refers to outcome = 'referred'; highest fee refers to MAX(fee)"
        ),
        "SQL": "SELECT MAX(fee) FROM visits WHERE outcome = 'referred'",
        "difficulty": "simple",
    },
    {
        "db_id": "clinic",
        "question": (
            "In 2022, how many times more visits were made by patients insured by "
            "MediCare Plus than by patients without insurance?"
        ),
        "evidence": (
            "in 2022 refers to visit_date LIKE '2022%'; insured by MediCare Plus "
            "refers to insurance = 'MediCare Plus'; without insurance refers to "
            "insurance IS NULL; times more = DIVIDE(COUNT(insurance = 'MediCare "
            "Plus'), COUNT(insurance IS NULL))"
        ),
        "SQL": (
            "SELECT CAST(SUM(CASE WHEN T1.insurance = 'MediCare Plus' THEN 1 ELSE 0 "
            "END) AS REAL) / SUM(CASE WHEN T1.insurance IS NULL THEN 1 ELSE 0 END) "
            "FROM patients AS T1 INNER JOIN visits AS T2 ON T1.patient_id = "
            "T2.patient_id WHERE T2.visit_date LIKE '2022%'"
        ),
        "difficulty": "challenging",
    },
    {
        "db_id": "football",
        "question": "How many goalkeepers are there?",
        "evidence": "goalkeepers refers to position = 'GK'",
        "SQL": "SELECT COUNT(player_id) FROM players WHERE position = 'GK'",
        "difficulty": "simple",
    },
    {
        "db_id": "football",
        "question": "What is the name of the stadium with the largest capacity?",
        "evidence": "the largest capacity refers to MAX(capacity)",
        "SQL": "SELECT stadium FROM teams ORDER BY capacity DESC LIMIT 1",
        "difficulty": "simple",
    },
    {
        "db_id": "football",
        "question": (
            "How many goals did the players of Riverside Rovers score in the 2022/2023 season?"
        ),
        "evidence": (
            "Riverside Rovers refers to name = 'Riverside Rovers'; the 2022/2023 "
            "season refers to season = '2022/2023'"
        ),
        "SQL": (
            "SELECT COUNT(T1.goal_id) FROM goals AS T1 INNER JOIN players AS T2 ON "
            "T1.player_id = T2.player_id INNER JOIN teams AS T3 ON T2.team_id = "
            "T3.team_id INNER JOIN matches AS T4 ON T1.match_id = T4.match_id WHERE "
            "T3.name = 'Riverside Rovers' AND T4.season = '2022/2023'"
        ),
        "difficulty": "moderate",
    },
    {
        "db_id": "football",
        "question": "Which player scored the most penalties? Give the player's name.",
        "evidence": "penalties refers to is_penalty = 1; the most refers to MAX(COUNT(goal_id))",
        "SQL": (
            "SELECT T2.name FROM goals AS T1 INNER JOIN players AS T2 ON T1.player_id"
            " = T2.player_id WHERE T1.is_penalty = 1 GROUP BY T1.player_id ORDER BY "
            "COUNT(T1.goal_id) DESC LIMIT 1"
        ),
        "difficulty": "moderate",
    },
    {
        "db_id": "football",
        "question": "How many home wins did Northbridge United have in the 2021/2022 season?",
        "evidence": (
            "Northbridge United refers to name = 'Northbridge United'; home win "
            "refers to home_goals > away_goals; the 2021/2022 season refers to season"
            " = '2021/2022'"
        ),
        "SQL": (
            "SELECT COUNT(T1.match_id) FROM matches AS T1 INNER JOIN teams AS T2 ON "
            "T1.home_team_id = T2.team_id WHERE T2.name = 'Northbridge United' AND "
            "T1.season = '2021/2022' AND T1.home_goals > T1.away_goals"
        ),
        "difficulty": "moderate",
    },
    {
        "db_id": "football",
        "question": (
            "On which date was the best-attended match that the away team won, and "
            "how many spectators came?"
        ),
        "evidence": (
            "the away team won refers to away_goals > home_goals; best-attended "
            "refers to MAX(attendance)"
        ),
        "SQL": (
            "SELECT match_date, attendance FROM matches WHERE away_goals > home_goals"
            " ORDER BY attendance DESC LIMIT 1"
        ),
        "difficulty": "moderate",
    },
    {
        "db_id": "football",
        "question": (
            "What is the average height of the Brazilian defenders? Round it to 1 decimal place."
        ),
        "evidence": (
            "Brazilian refers to nationality = 'Brazil'; defenders refers to position"
            " = 'DF'; average height = AVG(height_cm)"
        ),
        "SQL": (
            "SELECT ROUND(AVG(height_cm), 1) FROM players WHERE nationality = "
            "'Brazil' AND position = 'DF'"
        ),
        "difficulty": "simple",
    },
    {
        "db_id": "football",
        "question": (
            "Which team scored the most goals in the 2023/2024 season, home and away "
            "matches together?"
        ),
        "evidence": (
            "the 2023/2024 season refers to season = '2023/2024'; goals of a team = "
            "SUM(home_goals) as home team + SUM(away_goals) as away team"
        ),
        "SQL": (
            "SELECT T1.name FROM teams AS T1 INNER JOIN (SELECT home_team_id AS "
            "team_id, home_goals AS scored FROM matches WHERE season = '2023/2024' "
            "UNION ALL SELECT away_team_id, away_goals FROM matches WHERE season = "
            "'2023/2024') AS T2 ON T1.team_id = T2.team_id GROUP BY T1.team_id ORDER "
            "BY SUM(T2.scored) DESC LIMIT 1"
        ),
        "difficulty": "challenging",
    },
    {
        "db_id": "football",
        "question": "How many matches ended in a draw?",
        "evidence": "a draw refers to home_goals = away_goals",
        "SQL": "SELECT COUNT(match_id) FROM matches WHERE home_goals = away_goals",
        "difficulty": "simple",
    },
    {
        "db_id": "football",
        "question": (
            "List the names of the players who scored in stoppage time of a 2023/2024 match."
        ),
        "evidence": (
            "stoppage time refers to minute > 90; the 2023/2024 season refers to "
            "season = '2023/2024'"
        ),
        "SQL": (
            "SELECT DISTINCT T2.name FROM goals AS T1 INNER JOIN players AS T2 ON "
            "T1.player_id = T2.player_id INNER JOIN matches AS T3 ON T1.match_id = "
            "T3.match_id WHERE T1.minute > 90 AND T3.season = '2023/2024'"
        ),
        "difficulty": "moderate",
    },
    {
        "db_id": "football",
        "question": "What percentage of the goals scored in the 2021/2022 season were penalties?",
        "evidence": (
            "the 2021/2022 season refers to season = '2021/2022'; penalties refers to"
            " is_penalty = 1; percentage = DIVIDE(SUM(is_penalty), COUNT(goal_id)) * "
            "100"
        ),
        "SQL": (
            "SELECT CAST(SUM(T1.is_penalty) AS REAL) * 100 / COUNT(T1.goal_id) FROM "
            "goals AS T1 INNER JOIN matches AS T2 ON T1.match_id = T2.match_id WHERE "
            "T2.season = '2021/2022'"
        ),
        "difficulty": "challenging",
    },
    {
        "db_id": "football",
        "question": "How many players born in 2000 or later play for clubs founded before 1890?",
        "evidence": (
            "born in 2000 or later refers to birth_date >= '2000-01-01'; founded "
            "before 1890 refers to founded < 1890"
        ),
        "SQL": (
            "SELECT COUNT(T1.player_id) FROM players AS T1 INNER JOIN teams AS T2 ON "
            "T1.team_id = T2.team_id WHERE T1.birth_date >= '2000-01-01' AND "
            "T2.founded < 1890"
        ),
        "difficulty": "moderate",
    },
)
