"""Writers that :mod:`tests.test_fault_injection` runs in a subprocess and kills with SIGKILL.

Each driver installs a *stop point* and then starts one of the package's writers.  A stop point
wraps a function of the package (or ``os.replace``, which every atomic write renames with); at
the chosen call it writes a marker file holding this process's id and then waits forever.  The
test waits for the marker and sends SIGKILL, so the kill lands exactly at that point and never
depends on timing.  The package itself has no hooks for this.

Drivers are called as ``python -c "...; run_driver(name, json_kwargs)"`` (see
:func:`run_driver`) with ``IMAGINEBENCH_HOME`` pointing at the test's data home.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, NoReturn

GRID_STOP_MARKER = "grid-stop-point"
"""File under the data home that the stopping grid task writes (Ray workers find the data home)."""
GRID_STOP_SEED, GRID_STOP_STEP = 6, 20
"""The grid run (by seed) that stops, right after its checkpoint of this step is saved."""


# ------------------------------------------------------------------------------------ stop points
def wait_forever(marker: str | Path, note: str = "") -> NoReturn:
    """Write ``marker`` (this process's id, then ``note``) and block until killed."""
    marker = Path(marker)
    tmp = marker.with_name(marker.name + ".writing")
    tmp.write_text(f"{os.getpid()}\n{note}\n")
    os.rename(tmp, marker)  # not os.replace: a stop point may wrap that
    while True:
        time.sleep(60)


def stop_before_rename(name: str, nth: int, marker: str | Path) -> None:
    """Stop at the ``nth`` ``os.replace`` onto a file called ``name``: the temporary file is
    complete and closed, the rename onto ``name`` is not done."""
    real_replace = os.replace
    seen = 0

    def replace_or_stop(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal seen
        if Path(dst).name == name:
            seen += 1
            if seen == nth:
                wait_forever(marker, f"before renaming {src} onto {dst}")
        real_replace(src, dst, *args, **kwargs)

    setattr(os, "replace", replace_or_stop)


def stop_at_call(owner: Any, attr: str, nth: int, marker: str | Path) -> None:
    """Stop when ``owner.attr`` is called for the ``nth`` time, before that call runs."""
    real = getattr(owner, attr)
    seen = 0

    def call_or_stop(*args: Any, **kwargs: Any) -> Any:
        nonlocal seen
        seen += 1
        if seen == nth:
            wait_forever(marker, f"at call {nth} of {attr}")
        return real(*args, **kwargs)

    setattr(owner, attr, call_or_stop)


def _check_stop(stop: str, known: tuple[str, ...]) -> None:
    if stop not in (*known, "none"):
        raise ValueError(f"Unknown stop point {stop!r}; known: {', '.join(known)}, none.")


def _marker(marker: str | None) -> Path:
    if marker is None:
        raise ValueError("A stop point needs a marker file.")
    return Path(marker)


# --------------------------------------------------------------------------------- the writers
DATASET_ARGS = ("data", "collect", "--env", "CLEVR-v0", "--level", "train", "--profile", "tiny", "--episodes", "60")
"""``imaginebench data collect`` of the dataset tests (two chunks of 50 episodes), plus ``--seed``."""


def collect_dataset(seed: int, stop: str = "none", marker: str | None = None, extra: tuple[str, ...] = ()) -> None:
    """``imaginebench data collect`` (:data:`DATASET_ARGS`) stopped at ``stop``:

    ``"half-written"``: while the temporary file is written (before its third array);
    ``"before-rename"``: temporary file complete, not renamed onto the dataset;
    ``"none"``: no stop.
    """
    import numpy as np

    from imaginebench.cli import run_app

    _check_stop(stop, ("half-written", "before-rename"))
    if stop == "half-written":  # the dataset's write, not a kept chunk's (those are written by collect itself)
        import imaginebench.data.hub as hub

        write = hub.save_dataset

        def armed(*args: Any, **kwargs: Any) -> Any:
            stop_at_call(np.lib.format, "write_array", 3, _marker(marker))
            return write(*args, **kwargs)

        setattr(hub, "save_dataset", armed)
    elif stop == "before-rename":
        stop_before_rename("real-train.npz", 1, _marker(marker))
    sys.exit(run_app([*DATASET_ARGS, "--seed", str(seed), *extra]))


def lm_train_config() -> Any:
    """The fine-tuning of ``tests.imagination.test_lm_training`` (8 steps, validation every 2), with a
    checkpoint every 2 steps and one torch thread (same numbers in every process)."""
    from tests.imagination.test_lm_training import TRAIN

    return replace(TRAIN, checkpoint_every=2, threads=1)


def finetune_lm(out_dir: str, marker: str | None = None, stop: str = "none",
                on_step: Callable[[int], None] | None = None) -> Any:
    """Fine-tune the tiny rollout LM (resuming what ``out_dir`` holds), stopped at ``stop``:

    ``"commit-step-2"``/``"commit-step-4"`` (a fresh run): that step's checkpoint data files are
    renamed into place and its ``checkpoint.json`` (the commit point) is written to a temporary
    file, not renamed;
    ``"after-step-5"``: after step 5, between the checkpoints of steps 4 and 6;
    ``"none"``: no stop.
    """
    from imaginebench.imagination.lm_training import train_rollout_model
    from tests.imagination.test_lm_training import ENV, MODEL, _dataset

    def stop_after_step_5(done: int) -> None:
        if done == 5:
            wait_forever(_marker(marker), "after step 5")

    commits = {"commit-step-2": 1, "commit-step-4": 2}  # a checkpoint every 2 steps
    _check_stop(stop, (*commits, "after-step-5"))
    hook = stop_after_step_5 if stop == "after-step-5" else on_step
    if stop in commits:
        stop_before_rename("checkpoint.json", commits[stop], _marker(marker))
    return train_rollout_model(ENV, _dataset(), out_dir, MODEL, lm_train_config(), progress=False, device="cpu",
                    on_step=hook)


def greedy_imaginary_dataset(checkpoint: str) -> str:
    """Imagine 6 rephrase-level CLEVR rollouts greedily (temperature 0, every rollout kept) from
    ``checkpoint`` into the data home; return the dataset file."""
    import torch

    from imaginebench.imagination.checkpoint import load_checkpoint
    from imaginebench.imagination.decoding import GenerateConfig
    from imaginebench.imagination.generate import generate_level

    torch.set_num_threads(1)
    model, meta = load_checkpoint(Path(checkpoint), device="cpu")
    cfg = GenerateConfig(temperature=0.0, keep="none", batch_size=6, max_steps=8, seed=5)
    result = generate_level("CLEVR-v0", "rephrase", model, meta, checkpoint, profile="tiny", episodes=6, cfg=cfg,
                            progress=False, score=False)
    return str(result.path)


def rl_spec() -> Any:
    """The offline RL run of the tests: TD3+BC on ``ToyCont-v0`` (40 steps, a checkpoint every 10)."""
    from imaginebench.training import RunSpec
    from tests.training.test_runner import SMALL

    return RunSpec("ToyCont-v0", "td3bc", level="train", seed=3, **SMALL)


def train_rl(stop: str, marker: str | None = None) -> None:
    """Train (or resume) :func:`rl_spec` with one torch thread, stopped at ``stop``:

    ``"checkpoint-20-rename"``: step 20's ``checkpoint.pt`` written to its temporary file, not renamed;
    ``"update-15"``: before the 15th gradient update of this process (mid-way between checkpoints);
    ``"record-rename"``: ``record.json`` written to its temporary file, not renamed.
    """
    import torch

    from imaginebench.algos import sampler
    from imaginebench.training import train
    from tests.sweep.helpers import register_toys

    _check_stop(stop, ("checkpoint-20-rename", "update-15", "record-rename"))
    register_toys()
    torch.set_num_threads(1)
    if stop == "checkpoint-20-rename":
        stop_before_rename("checkpoint.pt", 2, _marker(marker))  # the first is step 10's
    elif stop == "update-15":
        stop_at_call(sampler, "fast_update", 15, _marker(marker))
    elif stop == "record-rename":
        stop_before_rename("record.json", 1, _marker(marker))
    train(rl_spec(), progress=False)


def fault_grid() -> Any:
    """Two toy runs (seeds 5 and 6, 40 steps, a checkpoint every 10), run one after the other."""
    from tests.sweep.helpers import toy_grid

    return toy_grid(seeds=(5, GRID_STOP_SEED), levels=("train",), data=("real",))


def register_toys_and_stop_in_seed6() -> None:
    """The grid's task setup: :func:`~tests.sweep.helpers.register_toys`, and run seed 6 stops
    right after its step-20 checkpoint is saved (marker: :data:`GRID_STOP_MARKER` in the data home)."""
    from imaginebench.config import data_home
    from imaginebench.run_folder import RunFolder
    from tests.sweep.helpers import register_toys

    register_toys()
    if getattr(RunFolder.save_checkpoint, "stops", False):  # Ray reuses workers
        return
    real_save = RunFolder.save_checkpoint

    def save_then_maybe_stop(folder: RunFolder, state: dict[str, Any]) -> None:
        real_save(folder, state)
        step = state.get("step")
        if step == GRID_STOP_STEP and folder.path.name == f"seed{GRID_STOP_SEED}":
            wait_forever(data_home() / GRID_STOP_MARKER, f"after the step-{step} checkpoint {folder.checkpoint_path}")

    save_then_maybe_stop.stops = True  # type: ignore[attr-defined]
    RunFolder.save_checkpoint = save_then_maybe_stop  # type: ignore[method-assign]


def run_stopping_grid(store_path: str, marker: str) -> None:
    """:func:`fault_grid` on a local Ray instance with one CPU (runs in order), seed 6 stopping.

    ``marker`` must be :data:`GRID_STOP_MARKER` in the data home: the Ray task knows no other place.
    """
    from imaginebench.config import data_home
    from imaginebench.sweep import ResultsStore, run_grid
    from tests.sweep.helpers import register_toys

    if Path(marker).resolve() != (data_home() / GRID_STOP_MARKER).resolve():
        raise ValueError(f"The grid's stop marker is {data_home() / GRID_STOP_MARKER}, not {marker}.")
    register_toys()
    with ResultsStore(store_path) as store:
        run_grid(fault_grid(), store, num_cpus=1, progress=False, setup=register_toys_and_stop_in_seed6)


DRIVERS: dict[str, Callable[..., Any]] = {
    "collect_dataset": collect_dataset, "finetune_lm": finetune_lm, "train_rl": train_rl,
    "greedy_imaginary_dataset": greedy_imaginary_dataset, "run_stopping_grid": run_stopping_grid,
}


def run_driver(name: str, kwargs_json: str) -> None:
    """Entry point of the subprocesses: call driver ``name`` with the JSON-encoded keyword arguments."""
    DRIVERS[name](**json.loads(kwargs_json))
