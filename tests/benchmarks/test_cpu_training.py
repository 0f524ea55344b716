"""benchmarks.cpu_allocator / generation_copy: the side-by-side rounds and their table."""

from __future__ import annotations

from benchmarks.cpu_allocator import alternate, table_rows


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
