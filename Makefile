# Two commands do all set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test bench lint clean

$(STAMP): pyproject.toml setup.cfg
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

run: $(STAMP)  ## the main job: the leaderboard on built-in defaults
	$(PY) -m benchmarks.leaderboard

test: $(STAMP)  ## the whole test suite
	$(PY) -m pytest -q

bench: $(STAMP)  ## throughput benchmarks (peers gym-sokoban and tetris-gymnasium in own venvs)
	bash benchmarks/peers/setup_gym_sokoban.sh
	bash benchmarks/peers/setup_tetris_gymnasium.sh
	$(PY) -m benchmarks.throughput

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

clean:
	rm -rf $(VENV) runs .pytest_cache
