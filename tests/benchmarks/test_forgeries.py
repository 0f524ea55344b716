"""Forged leaderboard runs are caught by ``--validate``: each forgery of
`agent_envs.benchmarks.forgeries` (the audit's nine and more) applied to a small honest run
(random, oracle and two tiny random checkpoints, 2 ids x 2 seeds), every aggregate rebuilt
with the project's report code, and the check that must catch it named. The full sweep with
the before/after table: ``benchmarks/results/forgeries.md``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from agent_envs.benchmarks import forgeries, leaderboard
from agent_envs.benchmarks.leaderboard import provenance

pytest.importorskip("transformers")

EXPECTED = {  # forgery → the check that must report it
    "swap_scripted": "scripted re-play",
    "swap_models": "re-score",
    "oracle_for_model": "token record",
    "oracle_for_random": "scripted re-play",
    "seed_changed": "published seeds",
    "extra_seed": "published seeds",
    "drop_failures": "published seeds",
    "relabel_checkpoint": "weights pin",
    "reward_edited": "env replay",
    "reply_edited": "env replay",
    "episode_dropped": "episode set",
    "relabel_checkpoint_and_pin": "re-score",
    "duplicated": "episode set",
    "tokens_edited": "re-score",
    "commit_changed": "commit pin",
    "decoding_relabelled": "re-score",
}
FORGERIES = {forgery.name: forgery for forgery in forgeries.forgeries(drop=1)}


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("forgeries")


@pytest.fixture(scope="module")
def base(work: Path) -> Path:
    args = forgeries.Args(seeds=2, drop=1, max_new_tokens=6, output="")
    return forgeries.base_run(args, work)


def test_forgeries__every_forgery_has_an_expected_check():
    assert set(EXPECTED) == set(FORGERIES)
    assert sum(forgery.issue for forgery in FORGERIES.values()) >= 9


def test_forgeries__the_honest_run_validates_and_says_what_it_re_scored(base):
    notes: list[str] = []
    assert leaderboard.validate(base, rescore_limit=10**6, notes=notes) == []
    manifest = json.loads((base / "manifest.json").read_text())
    pins = manifest["pins"]["agents"]
    assert set(pins) == {"a", "b"} and pins["a"]["weights_sha256"] != pins["b"]["weights_sha256"]
    assert pins["a"]["weight_files"] == ["model.safetensors"]
    assert any(note.startswith("a: re-scored 4 of 4 episodes") for note in notes), notes
    assert any(note.startswith("random, oracle: 8 episodes re-played") for note in notes), notes


@pytest.mark.parametrize("name", list(EXPECTED))
def test_forgeries__each_is_caught_by_its_check(base, work, name):
    result = forgeries.forge_and_validate(base, FORGERIES[name], work, before=False)
    assert EXPECTED[name] in result["after"], result["problems"][:5]


def test_forgeries__a_run_without_pins_names_what_it_cannot_check(base, tmp_path):
    """An old manifest (no ``pins``) still validates; the notes say its model rows are not
    tied to weights. Its seed lists are still checked."""
    run = tmp_path / "old"
    shutil.copytree(base, run)
    manifest = json.loads((run / "manifest.json").read_text())
    del manifest["pins"]
    (run / "manifest.json").write_text(json.dumps(manifest))
    notes: list[str] = []
    assert leaderboard.validate(run, notes=notes) == []
    assert "a: 4 episodes not re-scored (no weights pin)" in notes
    manifest["settings"]["seeds"]["grl/GSM8K-v0"][0] += 1
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert any("not its published list" in p for p in leaderboard.validate(run, notes=[]))


def test_forgeries__resuming_a_run_without_pins_pins_its_models_from_then_on(base, tmp_path):
    """Agents of a run written before pins get pinned when it is resumed (a checkpoint that
    is not what played fails the re-score); the commit checked stays the manifest's own."""
    from agent_envs.benchmarks.leaderboard.run import check_pins

    run = tmp_path / "old"
    shutil.copytree(base, run)
    manifest = json.loads((run / "manifest.json").read_text())
    del manifest["pins"]
    check_pins(manifest, provenance.pins_of(manifest["settings"]))
    assert set(manifest["pins"]["agents"]) == {"a", "b"} and "code" not in manifest["pins"]
    (run / "manifest.json").write_text(json.dumps(manifest))
    notes: list[str] = []
    assert leaderboard.validate(run, rescore_limit=10**6, notes=notes) == []
    assert any(note.startswith("a: re-scored 4 of 4 episodes") for note in notes), notes
    # the pins hold from then on: a checkpoint other than the pinned one is a problem
    pins = manifest["pins"]["agents"]
    pins["a"]["weights_sha256"] = pins["b"]["weights_sha256"]
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert any("the pin says" in p for p in leaderboard.validate(run, notes=[]))


def test_forgeries__a_checkpoint_that_is_not_here_is_noted_not_failed(base, tmp_path):
    run = tmp_path / "moved"
    shutil.copytree(base, run)
    forger = forgeries.Forger(run)
    forger.agent("a")["target"] = str(tmp_path / "gone")
    assert forger.save()
    notes: list[str] = []
    assert leaderboard.validate(run, notes=notes) == []
    assert f"a: 4 episodes not re-scored (the checkpoint is not here: {tmp_path / 'gone'} " \
        "is not here)" in notes  # fmt: skip


def test_provenance__weights_hash_covers_names_sizes_and_bytes(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"abc")
    (tmp_path / "training_args.bin").write_bytes(b"not weights")
    files, why = provenance.weight_files({"kind": "transformers", "target": str(tmp_path)})
    assert (why, [path.name for path in files]) == (None, ["model.safetensors"])
    import hashlib

    expected = hashlib.sha256(b"model.safetensors\0" + (3).to_bytes(8, "big") + b"abc")
    assert provenance.weights_sha256(files) == expected.hexdigest()
    (tmp_path / "model.safetensors").write_bytes(b"abd")
    assert provenance.weights_sha256(files) != expected.hexdigest()


def test_provenance__fresh_seeds_are_a_slice_of_the_published_list(tmp_path):
    """``--seed-offset K`` plays published seeds K+1.. and the check still holds."""
    out = tmp_path / "fresh"
    leaderboard.main(leaderboard.parse_args([
        "--preset", "smoke", "--envs", "grl/GSM8K-v0", "--seeds", "2", "--seed-offset", "3",
        "--no-progress", "--out", str(out)]))  # fmt: skip
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["settings"]["seeds"]["grl/GSM8K-v0"] == \
        leaderboard.eval_seeds("grl/GSM8K-v0", 5)[3:]  # fmt: skip
    assert leaderboard.validate(out) == []
    manifest["settings"]["seed_offset"] = 2
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert any("not its published list" in p for p in leaderboard.validate(out))


def test_provenance__bad_offsets_and_limits_name_their_flag():
    with pytest.raises(SystemExit, match="--seed-offset must be >= 0"):
        leaderboard.resolve(leaderboard.parse_args(["--seed-offset", "-1"]))
    with pytest.raises(SystemExit, match="--rescore-limit must be >= 0"):
        leaderboard.main(leaderboard.parse_args(["--validate", "x", "--rescore-limit", "-1"]))
