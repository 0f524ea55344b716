"""Bookkeeping of a training pipeline run with TRL trainers: stage folders, their records and
clocks, and the checkpoints they read and write.

A run folder holds one folder per stage (``sft``, ``grpo``, ...): ``stage.json`` (its
settings, wall and CPU seconds, metrics; present once the stage is done), ``log.jsonl`` (the
trainer's log history), ``checkpoints/`` (the trainer's, each with the stage's time so far)
and ``model/`` (the trained model as a plain checkpoint folder, LoRA merged). A stage that
was interrupted resumes from its last checkpoint and reports its whole time.
"""

from __future__ import annotations

import copy
import json
import shutil
import time
from pathlib import Path
from typing import Any

from agent_envs.adapters.trl.allocator import loaded_allocator

__all__ = [
    "Stage",
    "StageClock",
    "last_checkpoint",
    "load_model",
    "lora_config",
    "save_merged",
]


class Stage:
    """Folder, timing and the ``stage.json`` record of the stage ``name`` of the run ``out``."""

    def __init__(self, out: Path, name: str) -> None:
        self.name = name
        self.dir = Path(out) / name
        self.record_path = self.dir / "stage.json"

    @property
    def done(self) -> bool:
        return self.record_path.exists()

    @property
    def model_dir(self) -> Path:
        return self.dir / "model"

    @property
    def checkpoints(self) -> Path:
        return self.dir / "checkpoints"

    def kept_models(self) -> dict[int, Path]:
        """The models :meth:`keep_models` kept, by step: ``model-step{N}/`` folders."""
        kept = {}
        for folder in self.dir.glob("model-step*"):
            step = folder.name.removeprefix("model-step")
            if step.isdigit() and (folder / "config.json").exists():
                kept[int(step)] = folder
        return dict(sorted(kept.items()))

    def keep_models(self, steps: list[int]) -> Any:
        """A ``TrainerCallback`` that saves the model at each of ``steps`` as a plain checkpoint
        folder ``model-step{N}/`` (a copy, LoRA merged as :func:`save_merged` merges the final
        model), so intermediate models are evaluated by the pipeline, not merged by hand. A
        stage resumed past a step keeps what it kept before."""
        from transformers import TrainerCallback

        wanted, stage = set(steps), self

        class KeepModels(TrainerCallback):
            def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                if state.global_step in wanted:
                    folder = stage.dir / f"model-step{state.global_step}"
                    if not (folder / "config.json").exists():
                        model, tokenizer = kwargs["model"], kwargs["processing_class"]
                        save_merged(copy.deepcopy(model), tokenizer, folder)

        return KeepModels()

    def record(self) -> dict[str, Any]:
        return json.loads(self.record_path.read_text(encoding="utf-8"))

    def last_checkpoint(self) -> str | None:
        """The newest checkpoint the trainer saved, to resume from (``None``: start)."""
        return last_checkpoint(self.checkpoints)

    def write_log(self, history: list[dict[str, Any]]) -> None:
        """The trainer's ``state.log_history`` as ``log.jsonl``."""
        with (self.dir / "log.jsonl").open("w", encoding="utf-8") as file:
            for row in history:
                file.write(json.dumps(row) + "\n")

    def finish(self, clock: StageClock, *, device: str, **record: Any) -> None:
        """Write ``stage.json``: the stage's times, ``device`` (what it ran on), the memory
        allocator of the process, the peak GPU memory when a GPU was used, and ``record``."""
        import torch

        wall, cpu = clock.elapsed()
        record = {
            "stage": self.name,
            "wall_s": round(wall, 1),
            "cpu_s": round(cpu, 1),
            "stopped_at_time_limit": clock.stopped,
            "device": device,
            "allocator": loaded_allocator(),
            **record,
        }
        if torch.cuda.is_initialized():  # this process's peak (a resumed stage: since resuming)
            record["peak_gpu_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        self.record_path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"[{self.name}] done in {wall / 60:.1f} min wall, {cpu / 60:.1f} min CPU")


class StageClock:
    """Wall and CPU seconds a stage has taken, across resumes: written into every checkpoint
    the trainer saves (``stage_clock.json``) and read back from the one the stage resumes
    from, so a resumed stage reports its whole time."""

    FILE = "stage_clock.json"

    def __init__(self, resume_from: str | None) -> None:
        saved = Path(resume_from) / self.FILE if resume_from else None
        before = json.loads(saved.read_text()) if saved and saved.exists() else {}
        self.before = before.get("wall_s", 0.0), before.get("cpu_s", 0.0)
        self.started = time.perf_counter(), time.process_time()
        self.stopped = False  # ended early by the callback's time limit

    def elapsed(self) -> tuple[float, float]:
        return (
            self.before[0] + time.perf_counter() - self.started[0],
            self.before[1] + time.process_time() - self.started[1],
        )

    def callback(self, time_limit: float = 0.0) -> Any:
        """A ``TrainerCallback`` that writes the time so far into each saved checkpoint and,
        with a ``time_limit`` (wall seconds, resumes included), ends training after the first
        step that reaches it (:attr:`stopped` tells whether it did)."""
        from transformers import TrainerCallback

        clock = self

        class SaveClock(TrainerCallback):
            def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                over = time_limit and clock.elapsed()[0] >= time_limit
                if over and not control.should_training_stop:
                    clock.stopped = state.global_step < state.max_steps
                    control.should_training_stop = True

            def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                wall, cpu = clock.elapsed()
                folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
                (folder / StageClock.FILE).write_text(json.dumps({"wall_s": wall, "cpu_s": cpu}))

        return SaveClock()


def load_model(folder: Path) -> tuple[Any, Any]:
    """``(model, tokenizer)`` of a checkpoint folder; a tokenizer without a pad token pads
    with its EOS token."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(folder))
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def lora_config(r: int, alpha: int) -> Any:
    """peft's ``LoraConfig`` the stages train with: rank ``r`` on every linear layer."""
    from peft import LoraConfig

    return LoraConfig(
        r=r, lora_alpha=alpha, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"
    )


def save_merged(model: Any, tokenizer: Any, folder: Path) -> None:
    """Write a plain checkpoint (LoRA merged into the weights) atomically."""
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(str(partial))
    tokenizer.save_pretrained(str(partial))
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)


def last_checkpoint(folder: Path) -> str | None:
    """The newest ``checkpoint-N`` folder in ``folder`` (``None`` when there is none)."""
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(folder)) if folder.is_dir() else None
