#!/usr/bin/env bash
# The wheel check (CI, after `make test`; `make wheel-check`): build the sdist and, from it, the
# wheel; fail unless the wheel's only top-level name is agent_envs and it holds every module of
# the source tree; install it into a fresh venv together with PyPI's `adapters` (AdapterHub) and
# `renderers`, and there, from a folder outside the repository, run the README quickstart,
# `import adapters, renderers` beside agent_envs.adapters and agent_envs.renderers, and an
# `agent-envs leaderboard` smoke run with its --validate.
#
#   bash .ci/wheel_check.sh [SOURCE_TREE]     (default: this checkout)
#
# Environment: VENV, the project's venv (python -m build; its uv when there), default .venv;
# PYTHON, the interpreter of the fresh venv, default python3. Everything happens in a temporary
# folder, removed at the end; each step is under `timeout`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$(cd "${1:-$ROOT}" && pwd)"
VENV="${VENV:-.venv}"
case "$VENV" in /*) ;; *) VENV="$ROOT/$VENV" ;; esac
PYTHON="${PYTHON:-python3}"
# torch: the CPU build on this machine's disk, found through pip's find-links (any other spec
# downloads a CUDA build); PyPI's `adapters` imports torch. The two other projects are pinned to
# the releases this check was written against (bump them here). renderers 0.1.12 imports httpx
# without declaring it (the openai releases before 3.x brought it; 3.x depends on httpx2), so
# httpx comes along.
TORCH="torch==2.13.0"
OTHERS=("adapters==1.3.0" "renderers==0.1.12" "httpx>=0.27")

START=$SECONDS
TMP="$(mktemp -d "${TMPDIR:-/tmp}/wheel-check.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
STEP="start"
PASSED=0
trap 'echo "wheel-check: FAILED at: $STEP ($((SECONDS - START)) s)" >&2' ERR

step() { STEP="$*"; echo "wheel-check: $STEP"; }
ok() { PASSED=$((PASSED + 1)); echo "  ok ($((SECONDS - START)) s)"; }

# An outside folder, and no path, user site or bytecode setting of the caller's that could let
# the checkout be imported instead of the installed wheel.
unset PYTHONPATH PYTHONHOME PYTHONSTARTUP VIRTUAL_ENV
export PYTHONNOUSERSITE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg
mkdir -p "$TMP/src" "$TMP/dist" "$TMP/work"

step "copy the source tree (git's files, tracked and untracked, not ignored)"
(cd "$SRC" && git ls-files -z --cached --others --exclude-standard) \
	| (cd "$SRC" && "$VENV/bin/python" -c '
import os, sys
names = [n for n in sys.stdin.buffer.read().split(b"\0") if n and os.path.isfile(n)]
sys.stdout.buffer.write(b"\0".join(names))') \
	| tar -C "$SRC" --null -T - -cf - | tar -C "$TMP/src" -xf -
ok

step "build the sdist and, from it, the wheel (python -m build)"
if ! timeout 600 "$VENV/bin/python" -m build --outdir "$TMP/dist" "$TMP/src" >"$TMP/build.log" 2>&1; then
	tail -n 30 "$TMP/build.log"
	echo "  the isolated build failed: building again with --no-isolation (the venv's setuptools)"
	rm -rf "$TMP/dist"/*
	timeout 600 "$VENV/bin/python" -m build --no-isolation --skip-dependency-check \
		--outdir "$TMP/dist" "$TMP/src" >"$TMP/build.log" 2>&1 || { tail -n 30 "$TMP/build.log"; false; }
fi
ls "$TMP/dist"
ok

step "the wheel's top-level names (file list, RECORD, top_level.txt) are exactly {agent_envs}; wheel and sdist hold every package module"
"$VENV/bin/python" "$ROOT/.ci/wheel_contents.py" "$TMP/src" "$TMP/dist"
WHEEL="$(ls "$TMP"/dist/*.whl)"
ok

step "a fresh venv: $TORCH first, then the wheel (no extras), ${OTHERS[*]}"
timeout 300 "$PYTHON" -m venv "$TMP/venv"
PY="$TMP/venv/bin/python"
if [ -x "$VENV/bin/uv" ]; then
	# uv reads no pip configuration: hand it pip's find-links, as the Makefile does
	LINKS="${PIP_FIND_LINKS:-$("$PYTHON" -m pip config get global.find-links 2>/dev/null || true)}"
	INSTALL=("$VENV/bin/uv" pip install --quiet --python "$PY")
	for link in $LINKS; do INSTALL+=(--find-links "$link"); done
else
	INSTALL=("$PY" -m pip install --quiet --no-compile)
fi
timeout 900 "${INSTALL[@]}" "$TORCH"
# the torch installed must be the CPU build from disk, and nothing below may replace it
TORCH_VERSION="$("$PY" -c 'import importlib.metadata as m; print(m.version("torch"))')"
echo "  torch $TORCH_VERSION"
timeout 900 "${INSTALL[@]}" "$WHEEL" "${OTHERS[@]}"
[ "$("$PY" -c 'import importlib.metadata as m; print(m.version("torch"))')" = "$TORCH_VERSION" ]
ok

cd "$TMP/work"

step "the README quickstart (first python block under '## Quickstart'), core install"
"$PY" - "$TMP/src/README.md" >"$TMP/work/quickstart.py" <<'EOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
section = text.split("\n## Quickstart", 1)[1].split("\n## ", 1)[0]
print(re.search(r"```python\n(.*?)```", section, re.S).group(1))
EOF
timeout 300 "$PY" quickstart.py
ok

step "PyPI's adapters and renderers import beside agent_envs.adapters and agent_envs.renderers"
timeout 300 "$PY" - "$TMP/venv" <<'EOF'
import importlib.metadata as metadata
import sys
from pathlib import Path

import adapters, renderers  # PyPI's AdapterHub and renderers
import agent_envs, agent_envs.adapters, agent_envs.renderers

venv = Path(sys.argv[1]).resolve()
assert adapters.__file__ != agent_envs.adapters.__file__
assert renderers.__file__ != agent_envs.renderers.__file__
for module in (adapters, renderers, agent_envs, agent_envs.adapters, agent_envs.renderers):
    path = Path(module.__file__).resolve()
    assert venv in path.parents, f"{module.__name__} imported from {path}, not the venv"
    print(f"  {module.__name__:22} {path.relative_to(venv)}")
assert Path(adapters.__file__).parent.name == "adapters"
assert Path(agent_envs.adapters.__file__).parent.parent.name == "agent_envs"
assert hasattr(adapters, "AutoAdapterModel") and hasattr(renderers, "create_renderer")
for name in ("agent-envs", "adapters", "renderers", "transformers", "torch"):
    print(f"  {name} {metadata.version(name)}")
EOF
ok

step "agent-envs leaderboard --preset smoke (random, oracle), then --validate"
# the run writes charts (matplotlib) and replays (Pillow): the [render] extra
timeout 900 "${INSTALL[@]}" "$WHEEL[render]"
timeout 600 "$TMP/venv/bin/agent-envs" leaderboard --preset smoke --agents random oracle \
	--out "$TMP/lb" --no-progress
for file in leaderboard.md report.html summary.json manifest.json episodes.jsonl; do
	[ -s "$TMP/lb/$file" ] || { echo "  $TMP/lb/$file missing or empty"; false; }
done
timeout 300 "$TMP/venv/bin/agent-envs" leaderboard --validate "$TMP/lb"
ok

echo "wheel-check: took $((SECONDS - START)) s"
echo "wheel-check: $PASSED passed, 0 failed"
