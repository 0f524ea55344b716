"""agent_envs.benchmarks.cpu_allocator / generation_copy / rl_micro_batch: the side-by-side rounds
and their tables."""

from __future__ import annotations

from agent_envs.benchmarks.cpu_allocator import alternate, table_rows


def test_cpu_training__sides_alternate_in_fresh_folders_that_are_removed():
    calls = []

    def run(side, folder):
        assert not folder.exists()
        folder.mkdir(parents=True)
        calls.append((side, folder))
        return {"step": 2.0 if side == "a" else 1.0, "round": len(calls)}

    results = alternate(3, ("a", "b"), run)
    assert [side for side, _ in calls] == ["a", "b", "b", "a", "a", "b"]
    assert len({folder for _, folder in calls}) == 6
    assert not any(folder.exists() for _, folder in calls)
    assert [run["round"] for run in results["a"]] == [1, 4, 5]
    assert table_rows(results, ("a", "b"), [("step, s", "step", 1)]) == [
        "| step, s | 2.0 (2.0 to 2.0) | 1.0 (1.0 to 1.0) | 2.00 (2.00 to 2.00) |"
    ]
    calls.clear()
    three = alternate(3, ["a", "b", "c"], run)  # more sides: the order rotates
    assert [side for side, _ in calls] == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    assert [len(three[side]) for side in "abc"] == [3, 3, 3]


def test_rl_micro_batch__a_side_killed_by_a_signal_is_reported_not_raised():
    import subprocess
    import sys

    import pytest
    from agent_envs.benchmarks.cpu_allocator import peak_run
    from agent_envs.benchmarks.rl_micro_batch import _cell

    fine = peak_run([sys.executable, "-c", "x = bytearray(300 * 2**20)"])
    assert fine["killed"] is None and fine["peak_gib"] > 0.25
    killed = peak_run(
        [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]
    )
    assert killed["killed"] == "SIGKILL"
    with pytest.raises(subprocess.CalledProcessError):
        peak_run([sys.executable, "-c", "raise SystemExit(3)"])
    runs = [{**fine, "rl_step": 2.0}, killed]
    assert _cell(runs, "rl_step", 1) == "2.0 (2.0 to 2.0)"
    assert _cell(runs, "peak_gib", 2).endswith("; killed in 1 of 2")
    assert _cell([killed], "rl_step", 1) == "-"


def test_rl_trim_padding__a_step_splits_into_rollout_and_update():
    import pytest
    from agent_envs.benchmarks.rl_trim_padding import Args, main, step_parts

    rows = [
        {"loss": 1.0, "num_tokens": 900.0, "step_time": 50.0,
         "episodes/seconds/a": 2.0, "episodes/seconds/b": 3.0, "episodes/success/a": 1.0},
        {"loss": 3.0, "num_tokens": 2000.0, "step_time": 70.0,
         "episodes/seconds/a": 4.0, "episodes/seconds/b": 1.0},
        {"train_runtime": 130.0},  # the trainer's closing row has no step
    ]  # fmt: skip
    parts = step_parts(rows, episodes_per_env=4)
    expected = {"rl_step": 60.0, "rollout": 20.0, "update": 40.0, "loss": 2.0, "tokens": 1000.0}
    assert parts == expected
    with pytest.raises(SystemExit, match="--rl-prompts: 4 is not a multiple of the 3 envs"):
        main(Args(envs=["a", "b", "c"], rl_prompts=4, output=""))


def test_gigpo_from__links_the_sft_run_and_returns_the_step_rows(tmp_path):
    import json
    import sys

    from agent_envs.benchmarks.cpu_allocator import gigpo_from

    sft_run = tmp_path / "sft-run"
    for stage in ("base", "sft"):
        (sft_run / stage).mkdir(parents=True)
    rows = [{"step_time": 1.5, "loss": 0.5}, {"train_runtime": 2.0}]
    log = "\n".join(json.dumps(row) for row in rows)
    stage = (  # a stand-in for agent_envs.benchmarks.train: writes the stage's log under --out
        "import pathlib, sys; argv = sys.argv; "
        "out = pathlib.Path(argv[argv.index('--out') + 1]); "
        "assert argv[argv.index('--stages') + 1] == 'gigpo' and argv[-1] == '--flag'; "
        "assert (out / 'sft').resolve() == pathlib.Path(argv[1]).resolve() / 'sft'; "
        f"(out / 'gigpo').mkdir(); (out / 'gigpo' / 'log.jsonl').write_text({log!r})"
    )
    measured, steps = gigpo_from(
        sft_run, tmp_path / "run", [sys.executable, "-c", stage, str(sft_run)], ["--flag"]
    )
    assert steps == rows[:1] and measured["killed"] is None
    assert (tmp_path / "run" / "base").is_symlink()
    kill = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    measured, steps = gigpo_from(sft_run, tmp_path / "killed", [sys.executable, "-c", kill], [])
    assert measured["killed"] == "SIGKILL" and steps == []
