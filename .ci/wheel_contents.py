"""What the sdist and the wheel must hold, read from pyproject.toml and the source folders.

The repository's folders adapters/, renderers/ and benchmarks/ install as agent_envs.adapters,
agent_envs.renderers and agent_envs.benchmarks ([tool.setuptools.package-dir]); PyPI's
`adapters` and `renderers` are other projects, so the wheel may hold no top-level name but
``agent_envs``. Used by .ci/wheel_check.sh (``python .ci/wheel_contents.py ROOT DIST_DIR``) and by
tests/test_packaging.py; standard library only.
"""

from __future__ import annotations

import sys
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

#: the one import package the wheel installs
TOP_LEVEL = "agent_envs"
#: folders under a mapped package folder that are never packages (results, peer projects' code)
NOT_PACKAGES = ("benchmarks/results", "benchmarks/peers")
#: files besides the package sources that the sdist must carry
SDIST_FILES = ("pyproject.toml", "README.md", "LICENSE")


def pyproject(root: Path) -> dict:
    with (root / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)


def package_dirs(root: Path) -> dict[str, str]:
    """Every package the source tree holds (a folder with an ``__init__.py`` under a folder of
    [tool.setuptools.package-dir]) → its folder, relative to ``root`` (POSIX)."""
    mapping = pyproject(root)["tool"]["setuptools"]["package-dir"]
    found: dict[str, str] = {}
    for package, folder in mapping.items():
        base = root / folder
        for init in sorted(base.rglob("__init__.py")):
            relative = init.parent.relative_to(root).as_posix()
            parts = init.parent.relative_to(base).parts
            if any(part.startswith((".", "__")) for part in parts):
                continue  # hidden folders, __pycache__
            if any(relative == skip or relative.startswith(skip + "/") for skip in NOT_PACKAGES):
                continue
            found[".".join((package, *parts))] = relative
    return found


def expected_files(root: Path) -> dict[str, str]:
    """Path in the wheel → path in the source tree, for every module of every package listed in
    [tool.setuptools] packages and every file of [tool.setuptools.package-data]."""
    settings = pyproject(root)["tool"]["setuptools"]
    folders = package_dirs(root)
    data = settings.get("package-data", {})
    files: dict[str, str] = {}
    for package in settings["packages"]:
        folder = folders.get(package)
        if folder is None:
            continue  # a listed package without a folder: package_list_problems names it
        names = [path.name for path in (root / folder).glob("*.py")]
        names += [name for name in data.get(package, []) if (root / folder / name).is_file()]
        for name in names:
            files[f"{package.replace('.', '/')}/{name}"] = f"{folder}/{name}"
    return files


def package_list_problems(root: Path) -> list[str]:
    """How [tool.setuptools] packages differs from the packages of the source tree."""
    listed = set(pyproject(root)["tool"]["setuptools"]["packages"])
    present = set(package_dirs(root))
    return [f"not in [tool.setuptools] packages: {name}" for name in sorted(present - listed)] + [
        f"in [tool.setuptools] packages, no folder with an __init__.py: {name}"
        for name in sorted(listed - present)
    ]


def top_level_names(names: list[str]) -> set[str]:
    """The top-level names that a wheel's file list installs (the .dist-info folder aside)."""
    tops = {PurePosixPath(name).parts[0] for name in names if name.strip("/")}
    return {top for top in tops if not top.endswith(".dist-info")}


def wheel_problems(root: Path, wheel: Path) -> list[str]:
    problems = package_list_problems(root)
    with zipfile.ZipFile(wheel) as archive:
        names = [name for name in archive.namelist() if not name.endswith("/")]
        dist_info = {
            PurePosixPath(n).parts[0] for n in names if n.split("/")[0].endswith(".dist-info")
        }
        if len(dist_info) != 1:
            return [*problems, f"{wheel.name}: {len(dist_info)} .dist-info folders"]
        info = dist_info.pop()
        record = [
            line.split(",")[0] for line in archive.read(f"{info}/RECORD").decode().splitlines()
        ]
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
        top_level_txt = (
            archive.read(f"{info}/top_level.txt").decode().split()
            if f"{info}/top_level.txt" in names
            else [TOP_LEVEL]
        )
    for source, listed in (("file list", names), ("RECORD", record)):
        if top_level_names(listed) != {TOP_LEVEL}:
            problems.append(
                f"{wheel.name}: top-level names in its {source}: {sorted(top_level_names(listed))}"
                f", only {TOP_LEVEL!r} allowed"
            )
    if set(top_level_txt) != {TOP_LEVEL}:
        problems.append(f"{wheel.name}: top_level.txt names {top_level_txt}")
    held = {name for name in names if not name.startswith(info + "/")}
    expected = set(expected_files(root))
    problems += [f"{wheel.name}: missing {name}" for name in sorted(expected - held)]
    problems += [f"{wheel.name}: unexpected {name}" for name in sorted(held - expected)]
    if "agent-envs = agent_envs.benchmarks.cli:main" not in entry_points:
        problems.append(f"{wheel.name}: no agent-envs console script in entry_points.txt")
    return problems


def sdist_problems(root: Path, sdist: Path) -> list[str]:
    with tarfile.open(sdist) as archive:
        members = [member.name for member in archive.getmembers() if member.isfile()]
    tops = {PurePosixPath(name).parts[0] for name in members}
    if len(tops) != 1:
        return [f"{sdist.name}: {len(tops)} top-level folders: {sorted(tops)}"]
    top = tops.pop()
    held = {name[len(top) + 1 :] for name in members}
    wanted = set(expected_files(root).values()) | set(SDIST_FILES)
    return [f"{sdist.name}: missing {name}" for name in sorted(wanted - held)]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python .ci/wheel_contents.py ROOT DIST_DIR", file=sys.stderr)
        return 2
    root, dist = Path(argv[0]), Path(argv[1])
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        print(f"{dist}: want one wheel and one sdist, found {wheels + sdists}", file=sys.stderr)
        return 1
    problems = wheel_problems(root, wheels[0]) + sdist_problems(root, sdists[0])
    for problem in problems:
        print(f"  {problem}", file=sys.stderr)
    if problems:
        return 1
    print(
        f"  {wheels[0].name}: top level {{{TOP_LEVEL!r}}}, {len(expected_files(root))} files as"
        f" expected, agent-envs console script; {sdists[0].name}: every package source"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
