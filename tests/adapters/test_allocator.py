"""agent_envs.adapters.trl.allocator: finding tcmalloc, reading the loaded allocator, and starting a
command again under it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from agent_envs.adapters.trl import allocator
from agent_envs.adapters.trl.allocator import (
    check_allocator,
    find_tcmalloc,
    loaded_allocator,
    use_allocator,
)

ROOT = Path(__file__).resolve().parents[2]


def test_allocator__finds_the_first_library_in_folder_order(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    assert find_tcmalloc([first, second]) is None
    (second / "libtcmalloc.so.4").write_bytes(b"")
    (first / "libtcmalloc_minimal.so.4").write_bytes(b"")
    assert find_tcmalloc([first, second]) == first / "libtcmalloc_minimal.so.4"
    (first / "libtcmalloc.so").write_bytes(b"")  # a plainer name wins within a folder
    assert find_tcmalloc([first, second]) == first / "libtcmalloc.so"


def test_allocator__reads_the_mapped_library():
    line = "7f00-7f10 r-xp 0 08:01 1 /usr/lib/x86_64-linux-gnu/{}\n"
    assert loaded_allocator(line.format("libtcmalloc_minimal.so.4.5.10")) == "tcmalloc"
    assert loaded_allocator(line.format("libjemalloc.so.2")) == "jemalloc"
    assert loaded_allocator(line.format("libc.so.6")) == "system"


def test_allocator__bad_value_and_missing_library_name_the_flag(monkeypatch, capsys):
    with pytest.raises(SystemExit, match="--allocator: unknown allocator 'mimalloc'"):
        check_allocator("mimalloc")
    monkeypatch.setattr(allocator, "loaded_allocator", lambda: "system")
    monkeypatch.setattr(allocator, "find_tcmalloc", lambda: None)
    with pytest.raises(SystemExit, match="--allocator tcmalloc: no tcmalloc library was found"):
        use_allocator("tcmalloc")
    assert use_allocator("auto") == "system"  # runs on, with a hint
    assert "no tcmalloc library was found" in capsys.readouterr().err
    assert use_allocator("system") == "system"
    assert capsys.readouterr().err == ""


@pytest.mark.skipif(find_tcmalloc() is None, reason="no tcmalloc installed (make tcmalloc)")
def test_allocator__a_command_starts_again_under_tcmalloc():
    code = (
        "from agent_envs.adapters.trl.allocator import loaded_allocator, use_allocator; "
        "import sys; print(loaded_allocator(), use_allocator(sys.argv[1]))"
    )
    for choice, expected in (("tcmalloc", "tcmalloc"), ("auto", "tcmalloc"), ("system", "system")):
        done = subprocess.run(
            [sys.executable, "-c", code, choice],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        # the started-again process prints once, already under tcmalloc
        assert done.stdout.split() == [expected, expected], (choice, done.stdout, done.stderr)
