"""The process's memory allocator for CPU training: run under tcmalloc when it is installed.

PyTorch on CPU allocates each large tensor (a batch's logits, activations, their gradients)
with the C library's ``malloc``; glibc serves every block over its mmap threshold (at most
32 MiB) with a fresh ``mmap`` and returns it on free, so the kernel faults in and zeroes
those pages again on every forward and backward pass. Measured on a 2-core Xeon: two GRPO
steps on Blocksworld spent about a third of their CPU time in the kernel (76-79 of 236-256
CPU seconds, two runs), most of it (``perf``) in ``clear_page``. tcmalloc keeps freed memory
for reuse (PyTorch's CPU performance guide recommends preloading it, as
``torch.backends.xeon.run_cpu`` does); ``benchmarks/results/cpu_allocator.md`` has the step
times side by side.

A library can only be preloaded when a process starts, so :func:`use_allocator` starts the
command again (``os.execve``, same arguments) with ``LD_PRELOAD`` naming it. Debian and
Ubuntu ship it as ``libtcmalloc-minimal4`` (``make tcmalloc`` installs it).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

__all__ = ["ALLOCATORS", "check_allocator", "find_tcmalloc", "loaded_allocator", "use_allocator"]

#: values of the ``--allocator`` flag
ALLOCATORS = ("auto", "tcmalloc", "system")
#: file names tried in each folder, in order
TCMALLOC_NAMES = (
    "libtcmalloc.so",
    "libtcmalloc.so.4",
    "libtcmalloc_minimal.so",
    "libtcmalloc_minimal.so.4",
)
#: set in the started-again process, so that it never starts again
_GUARD = "AGENT_ENVS_ALLOCATOR_EXEC"


def _folders() -> list[Path]:
    """Where tcmalloc is looked for: the active environment's ``lib``, then the system's
    (with Debian's multiarch folder, which PyTorch's own launcher does not search)."""
    folders = [Path(sys.prefix) / "lib"]
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if os.environ.get(variable):
            folders.append(Path(os.environ[variable]) / "lib")
    multiarch = sysconfig.get_config_var("MULTIARCH")
    for root in ("/usr/local/lib", "/usr/lib"):
        if multiarch:
            folders.append(Path(root) / multiarch)
        folders.append(Path(root))
    folders.append(Path("/usr/lib64"))
    return folders


def find_tcmalloc(folders: list[Path] | None = None) -> Path | None:
    """The first tcmalloc shared library in ``folders`` (default: :func:`_folders`)."""
    for folder in _folders() if folders is None else folders:
        for name in TCMALLOC_NAMES:
            path = folder / name
            if path.is_file():
                return path
    return None


def loaded_allocator(maps: str | None = None) -> str:
    """``"tcmalloc"``, ``"jemalloc"`` or ``"system"``: the allocator mapped into this process
    (read from ``/proc/self/maps``, or from the text ``maps``)."""
    if maps is None:
        try:
            maps = Path("/proc/self/maps").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "system"
    for name in ("tcmalloc", "jemalloc"):
        if f"lib{name}" in maps:
            return name
    return "system"


def check_allocator(choice: str, *, flag: str = "--allocator") -> None:
    """A ``SystemExit`` naming ``flag`` unless ``choice`` is one of :data:`ALLOCATORS`."""
    if choice not in ALLOCATORS:
        raise SystemExit(f"{flag}: unknown allocator {choice!r}; choose from {ALLOCATORS}")


def use_allocator(choice: str, *, flag: str = "--allocator") -> str:
    """Make this process run under ``choice`` and return the allocator it runs under.

    ``"system"``: as started. ``"tcmalloc"``: already loaded, or start the command again with
    it preloaded (this call does not return then); a ``SystemExit`` naming ``flag`` when no
    tcmalloc is installed. ``"auto"``: tcmalloc when it is installed, else as started (with a
    one-line hint on stderr). Only for a command's entry point: the process is replaced.
    """
    check_allocator(choice, flag=flag)
    current = loaded_allocator()
    if choice == "system" or current != "system":
        return current
    library = find_tcmalloc()
    if library is None or os.environ.get(_GUARD):
        why = f"{library} did not load" if library else "no tcmalloc library was found"
        if choice == "tcmalloc":
            raise SystemExit(
                f"{flag} tcmalloc: {why} (install it with `make tcmalloc` or "
                f"`apt-get install libtcmalloc-minimal4`), or pass {flag} system"
            )
        print(
            f"note: running on the system allocator ({why}); CPU RL steps ran 1.41x faster "
            f"under tcmalloc (`make tcmalloc`; {flag} system silences this)",
            file=sys.stderr,
        )
        return current
    environment = dict(os.environ, **{_GUARD: "1"})
    preload = [str(library), *filter(None, environment.get("LD_PRELOAD", "").split(":"))]
    environment["LD_PRELOAD"] = ":".join(preload)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], environment)
    raise AssertionError("unreachable")  # pragma: no cover
