"""Fault injection and determinism (issue 18).

Each writer runs in a subprocess that is killed with SIGKILL at a precise point (a *stop point*
of :mod:`tests.fault_helpers`: the process writes a marker there and waits; the test kills it),
then restarts.  After every kill: nothing finished is lost, no partial or uncommitted file is
read as valid; after the restart: nothing is done twice and the result equals an uninterrupted
("straight") run — byte for byte for datasets, tensor for tensor for the rollout LM, and equal
records apart from ``timing`` for offline RL runs and grids.

The grid's plain kill-and-resume test (a SIGKILL once some runs are done) is
``tests/sweep/test_ray_grid.py::test_a_killed_grid_resumes_without_rerunning_finished_runs``;
the grid test here kills inside a run, right after a checkpoint, and compares the resumed record
with a straight run's.  Determinism tests already elsewhere: arrays of a collection do not depend
on the worker count (``tests/data/test_collect.py``), equal datasets give equal bytes
(``tests/data/test_storage.py``), the same seed gives the same record in one process
(``tests/training/test_runner.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

from imaginebench.cli import run_app
from imaginebench.data.hub import dataset_path, load_real
from imaginebench.data.storage import DatasetError, load_dataset
from tests.algos.helpers import build_toy_data, toy_envs  # noqa: F401  (toy_envs: fixture)
from tests.fault_helpers import (
    DATASET_ARGS,
    GRID_STOP_MARKER,
    GRID_STOP_SEED,
    GRID_STOP_STEP,
    fault_grid,
    finetune_lm,
    greedy_imaginary_dataset,
    rl_spec,
)

ROOT = Path(__file__).resolve().parents[1]
STOP_TIMEOUT_S = 180.0
"""Longest wait for a subprocess to reach its stop point (a guard against a hang, not a timing)."""
DRIVER = "import sys; from tests.fault_helpers import run_driver; run_driver(sys.argv[1], sys.argv[2])"


# ------------------------------------------------------------------------------ subprocesses
def _subprocess_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(IMAGINEBENCH_HOME=str(home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def _log_tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:] if log.exists() else ""


def run_until_killed(driver: str, home: Path, marker: Path, log: Path, **kwargs: Any) -> tuple[int, int]:
    """Run ``driver`` (with ``marker`` and ``kwargs``) in a new session, wait for its stop point's
    ``marker``, SIGKILL the process that stopped there and the session's process group; return
    ``(stopped pid, session id)``."""
    with open(log, "wb") as out:
        args = json.dumps({**kwargs, "marker": str(marker)})
        proc = subprocess.Popen([sys.executable, "-c", DRIVER, driver, args], cwd=ROOT,
                                env=_subprocess_env(home), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        stopped = None
        try:
            deadline = time.monotonic() + STOP_TIMEOUT_S
            while not marker.exists():
                if proc.poll() is not None:
                    pytest.fail(f"{driver} ended (exit {proc.returncode}) before its stop point:\n{_log_tail(log)}")
                if time.monotonic() > deadline:
                    pytest.fail(f"{driver} did not reach its stop point in {STOP_TIMEOUT_S:.0f} s:\n{_log_tail(log)}")
                time.sleep(0.05)
            stopped = int(marker.read_text().split()[0])
        finally:
            # the process that stopped first (a Ray worker has a process group of its own), then the rest
            for kill, pid in ((os.kill, stopped), (os.killpg, proc.pid)):
                try:
                    if pid is not None:
                        kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.wait()
    assert proc.returncode == -signal.SIGKILL and stopped is not None
    marker.unlink()
    return stopped, proc.pid


def run_to_end(driver: str, home: Path, log: Path, **kwargs: Any) -> None:
    """Run ``driver`` in a subprocess to its end (no stop point); fail with its output if it fails."""
    with open(log, "wb") as out:
        proc = subprocess.run([sys.executable, "-c", DRIVER, driver, json.dumps(kwargs)], cwd=ROOT,
                              env=_subprocess_env(home), stdout=out, stderr=subprocess.STDOUT, timeout=STOP_TIMEOUT_S)
    if proc.returncode != 0:
        pytest.fail(f"{driver} failed (exit {proc.returncode}):\n{_log_tail(log)}")


def temporaries(path: Path) -> list[Path]:
    """Temporary files that :func:`imaginebench.fileio.atomic_path` leaves beside ``path`` when killed."""
    return sorted(path.parent.glob(f".{path.name}.*.tmp"))


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """One torch thread here, as in the subprocesses (same float arithmetic); restored afterwards."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# ---------------------------------------------------------------------------------- datasets
def _collect(seed: int, *extra: str) -> None:
    assert run_app([*DATASET_ARGS, "--seed", str(seed), *extra]) == 0


def _clevr_dataset() -> Path:
    return dataset_path("CLEVR-v0", "real", "train", "tiny")


@pytest.fixture(scope="module")
def straight_datasets(tmp_path_factory) -> dict[int, bytes]:
    """The bytes of uninterrupted collections with seeds 0 and 1 (this process, one worker)."""
    pytest.importorskip("mujoco")
    home = tmp_path_factory.mktemp("straight_datasets")
    found = {}
    with pytest.MonkeyPatch.context() as mp:
        for seed in (0, 1):
            mp.setenv("IMAGINEBENCH_HOME", str(home / f"seed{seed}"))
            _collect(seed)
            found[seed] = _clevr_dataset().read_bytes()
    return found


def test_collection_killed_mid_write_or_before_its_rename_leaves_no_dataset_behind_and_reruns_byte_identical(
        data_home, tmp_path, straight_datasets, capsys):
    path = _clevr_dataset()

    # Killed while the temporary file is half written: no dataset, and the remains are no dataset.
    run_until_killed("collect_dataset", data_home, tmp_path / "stop1", tmp_path / "log1", stop="half-written", seed=1)
    assert not path.exists()
    (partial,) = temporaries(path)
    assert 0 < partial.stat().st_size < len(straight_datasets[1])
    with pytest.raises(DatasetError):
        load_dataset(partial)
    with pytest.raises(FileNotFoundError, match="imaginebench data collect"):
        load_real("CLEVR-v0", "train", "tiny")
    capsys.readouterr()
    assert run_app(["data", "info"]) == 0 and "No datasets" in capsys.readouterr().out
    _collect(1)  # no --overwrite needed: the remains are not taken for an existing dataset
    assert path.read_bytes() == straight_datasets[1]

    # --overwrite killed with the new temporary file complete, before its rename: the old file stays.
    run_until_killed("collect_dataset", data_home, tmp_path / "stop2", tmp_path / "log2", stop="before-rename", seed=0,
                     extra=["--overwrite"])
    assert path.read_bytes() == straight_datasets[1]
    assert load_dataset(path).metadata["seed"] == 1
    (complete,) = set(temporaries(path)) - {partial}
    assert complete.read_bytes() == straight_datasets[0]  # the kill landed between the write and the rename
    _collect(0, "--overwrite")
    assert path.read_bytes() == straight_datasets[0]
    capsys.readouterr()
    assert run_app(["data", "info", "--json"]) == 0
    listed = [d for d in json.loads(capsys.readouterr().out) if not d["shipped"]]  # the data home's, not the package's
    assert [(Path(d["path"]), d["seed"]) for d in listed] == [(path, 0)]  # the temporaries are not datasets
    assert temporaries(path) == []  # and the next write of the dataset removed them


def test_same_seed_gives_a_byte_identical_dataset_file_in_another_process_with_two_workers(
        data_home, tmp_path, straight_datasets):
    run_to_end("collect_dataset", data_home, tmp_path / "log", stop="none", seed=0, extra=["--workers", "2"])
    assert _clevr_dataset().read_bytes() == straight_datasets[0]
    assert straight_datasets[0] != straight_datasets[1]


# -------------------------------------------------------------------------------- rollout LM
@pytest.fixture(scope="module")
def straight_lm(tmp_path_factory) -> tuple[Path, dict[int, dict[str, Any]]]:
    """An uninterrupted fine-tuning (this process) and the trainable tensors of each checkpoint."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("peft")
    from safetensors.torch import load_file

    from imaginebench.imagination import checkpoint as ckpt

    folder = tmp_path_factory.mktemp("straight_lm") / "checkpoint"
    snapshots: dict[int, dict[str, Any]] = {}

    def keep_checkpoint(done: int) -> None:
        if (folder / ckpt.META).exists() and ckpt.read_checkpoint_meta(folder)["step"] == done:
            snapshots[done] = load_file(str(folder / ckpt.read_checkpoint_meta(folder)["files"]["weights"]))

    threads = torch.get_num_threads()
    try:
        finetune_lm(str(folder), on_step=keep_checkpoint)
    finally:
        torch.set_num_threads(threads)
    assert sorted(snapshots) == [2, 4, 6, 8]
    return folder, snapshots


def _assert_same_tensors(found: dict[str, Any], expected: dict[str, Any]) -> None:
    import torch

    assert set(found) == set(expected)
    for name in expected:
        assert torch.equal(found[name], expected[name]), name


def _same_state(a: Any, b: Any) -> bool:
    """Whether two nested resume states (dicts, lists, tensors, numbers) are equal."""
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_state(x, y) for x, y in zip(a, b))
    return bool(a == b)


def test_lm_finetuning_killed_at_its_commit_point_and_between_checkpoints_resumes_to_the_straight_weights(
        data_home, tmp_path, straight_lm, one_torch_thread):
    from imaginebench.imagination import checkpoint as ckpt
    from tests.imagination.test_lm_training import _val_log, _weights

    straight, snapshots = straight_lm
    folder = tmp_path / "checkpoint"

    # Killed with step 4's data files in place and its checkpoint.json written but not renamed:
    # the step-2 checkpoint is the checkpoint; step 4's files are not read.
    run_until_killed("finetune_lm", data_home, tmp_path / "stop1", tmp_path / "log1", out_dir=str(folder),
                     stop="commit-step-4")
    meta = ckpt.read_checkpoint_meta(folder)
    assert meta["step"] == 2
    _assert_same_tensors(_weights(folder, "last")[0], snapshots[2])
    left = sorted(p.name for p in folder.iterdir() if p.name not in {ckpt.META, ckpt.LOG, *meta["files"].values()})
    assert [name.split("-")[:2] for name in left if not name.startswith(".")] == [
        ["optimizer", "00000004"], ["weights", "00000004"]]
    (uncommitted,) = temporaries(folder / ckpt.META)
    assert json.loads(uncommitted.read_text())["step"] == 4  # complete: the kill landed before the rename

    # Resumed from step 2 and killed after step 5: the step-4 checkpoint holds; the killed save's files are gone.
    run_until_killed("finetune_lm", data_home, tmp_path / "stop2", tmp_path / "log2", out_dir=str(folder),
                     stop="after-step-5")
    meta = ckpt.read_checkpoint_meta(folder)
    assert meta["step"] == 4
    _assert_same_tensors(_weights(folder, "last")[0], snapshots[4])
    assert {p.name for p in folder.iterdir()} == {ckpt.META, ckpt.LOG, *meta["files"].values()}
    assert 5 in [step for _, step, *_ in _val_log(folder)]  # logged, but lost with the kill

    # Resumed from step 4 to the end: the straight run's weights, validations and log, each step once.
    result = finetune_lm(str(folder))
    assert (result.steps_run, result.steps_done, result.ended) == (4, 8, "steps")
    resumed, resumed_meta = _weights(folder, "last")
    expected, expected_meta = _weights(straight, "last")
    _assert_same_tensors(resumed, expected)
    _assert_same_tensors(resumed, snapshots[8])
    assert _same_state(ckpt.load_resume_state(folder), ckpt.load_resume_state(straight))  # optimiser, RNGs
    named_by_file = ("files", "sha256", "loaded")  # data file names are fresh at every save
    assert ({k: v for k, v in resumed_meta.items() if k not in named_by_file}
            == {k: v for k, v in expected_meta.items() if k not in named_by_file})
    assert _val_log(folder) == _val_log(straight)


def test_lm_finetuning_killed_before_its_first_checkpoint_restarts_with_each_step_logged_once(
        data_home, tmp_path, straight_lm, one_torch_thread):
    from imaginebench.imagination import checkpoint as ckpt
    from tests.imagination.test_lm_training import _val_log, _weights

    straight, _ = straight_lm
    folder = tmp_path / "checkpoint"
    run_until_killed("finetune_lm", data_home, tmp_path / "stop", tmp_path / "log", out_dir=str(folder),
                     stop="commit-step-2")
    assert not (folder / ckpt.META).exists()  # nothing committed: the restart starts over
    result = finetune_lm(str(folder))
    assert (result.steps_run, result.steps_done) == (8, 8)
    _assert_same_tensors(_weights(folder, "last")[0], _weights(straight, "last")[0])
    assert {p.name for p in folder.iterdir()} == {ckpt.META, ckpt.LOG,
                                                 *ckpt.read_checkpoint_meta(folder)["files"].values()}
    # the killed attempt's log lines are dropped with it (they were once appended to: steps logged twice)
    assert _val_log(folder) == _val_log(straight)


def test_greedy_generation_is_identical_across_processes_and_sampling_seeds(
        tmp_path, straight_lm, one_torch_thread, monkeypatch):
    pytest.importorskip("mujoco")
    import torch

    from imaginebench.envs.registry import load_domain
    from imaginebench.imagination.checkpoint import load_checkpoint
    from imaginebench.imagination.decoding import GenerateConfig, imagine_batch, initial_starts

    checkpoint = straight_lm[0]
    run_to_end("greedy_imaginary_dataset", tmp_path / "home_a", tmp_path / "log", checkpoint=str(checkpoint))
    monkeypatch.setenv("IMAGINEBENCH_HOME", str(tmp_path / "home_b"))
    here = Path(greedy_imaginary_dataset(str(checkpoint)))
    there = tmp_path / "home_a" / here.relative_to(tmp_path / "home_b")
    assert there.read_bytes() == here.read_bytes()
    imagined = load_dataset(here)
    assert len(imagined) == 6 and imagined.lengths.max() > 1

    # Greedy choices do not read the sampling generator (sampled ones do).
    model, _ = load_checkpoint(checkpoint, device="cpu")
    domain, starts = load_domain("CLEVR-v0"), initial_starts("CLEVR-v0", "rephrase", 4, seed=5)

    def imagined_with_generators(temperature: float) -> tuple[list[Any], list[Any]]:
        cfg = GenerateConfig(temperature=temperature, max_steps=6)
        first, second = (imagine_batch(model, domain, starts, cfg, torch.Generator().manual_seed(s)) for s in (0, 1))
        return first, second

    first, second = imagined_with_generators(0.0)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_array_equal(a.states, b.states)
    assert max(len(ep) for ep in first) > 1
    first, second = imagined_with_generators(1.0)
    assert any(not np.array_equal(a.actions, b.actions) for a, b in zip(first, second))


# ------------------------------------------------------------------------------ offline RL
def _predictions(model_file: Path, obs_dim: int) -> np.ndarray:
    """The saved policy's actions on fixed observations."""
    import d3rlpy

    obs = np.random.default_rng(0).normal(size=(32, obs_dim)).astype(np.float32)
    return d3rlpy.load_learnable(str(model_file)).predict(obs)


def _checkpoint_state(path: Path) -> dict[str, Any]:
    import torch

    return torch.load(path, map_location="cpu", weights_only=True)


def test_offline_rl_run_killed_in_renames_and_between_checkpoints_resumes_to_the_straight_record(
        data_home, tmp_path, toy_envs, one_torch_thread):
    pytest.importorskip("d3rlpy")
    from imaginebench.evaluation import load_records, stable_view
    from imaginebench.training import train
    from imaginebench.evaluation.records import RECORD_NAME
    from imaginebench.run_folder import CHECKPOINT_NAME, MODEL_NAME

    build_toy_data("ToyCont-v0", ("train",), episodes=30)
    spec = rl_spec()
    straight = train(spec, progress=False)
    obs_dim = straight.record["config"]["state_dim"] + straight.record["config"]["embedding_dim"]
    straight_actions = _predictions(straight.path / MODEL_NAME, obs_dim)
    curve = straight.record["curve"]
    assert [c["step"] for c in curve] == [10, 20, 30, 40]
    shutil.rmtree(straight.path)
    checkpoint, record = straight.path / CHECKPOINT_NAME, straight.path / RECORD_NAME

    # Killed with step 20's checkpoint written to its temporary file, not renamed: step 10's holds.
    run_until_killed("train_rl", data_home, tmp_path / "stop1", tmp_path / "log1", stop="checkpoint-20-rename")
    state = _checkpoint_state(checkpoint)
    assert state["step"] == 10 and state["curve"] == curve[:1] and not record.exists()
    (uncommitted,) = temporaries(checkpoint)
    assert _checkpoint_state(uncommitted)["step"] == 20  # complete: the kill landed before the rename

    # Resumed and killed before its 15th update: had it not resumed from step 10, no step-20 checkpoint.
    run_until_killed("train_rl", data_home, tmp_path / "stop2", tmp_path / "log2", stop="update-15")
    state = _checkpoint_state(checkpoint)
    assert state["step"] == 20 and state["curve"] == curve[:2] and not record.exists()

    # Resumed from step 20 and killed with record.json written to its temporary file, not renamed.
    run_until_killed("train_rl", data_home, tmp_path / "stop3", tmp_path / "log3", stop="record-rename")
    state = _checkpoint_state(checkpoint)
    assert state["step"] == 40 and state["curve"] == curve and not record.exists()
    assert len(temporaries(record)) == 1

    # The restart trains nothing more and writes the straight run's record and policy.
    seen: list[int] = []
    resumed = train(spec, progress=False, on_checkpoint=lambda step, entry: seen.append(step))
    assert not resumed.skipped and resumed.resumed_from == 40 and seen == []
    assert stable_view(resumed.record) == stable_view(straight.record)
    np.testing.assert_array_equal(_predictions(resumed.path / MODEL_NAME, obs_dim), straight_actions)
    assert [r["seed"] for r in load_records()] == [spec.seed]  # the temporaries are not records
    assert temporaries(checkpoint) == [] and temporaries(record) == []  # removed when the run resumed
    finished = record.read_bytes()
    again = train(spec, progress=False, on_checkpoint=lambda *a: pytest.fail("trained a finished run"))
    assert again.skipped and record.read_bytes() == finished


# ------------------------------------------------------------------------------------ grid
@pytest.mark.xdist_group("ray")
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to watch the killed processes")
def test_grid_killed_inside_a_run_resumes_it_to_the_straight_record_and_keeps_the_finished_run(
        data_home, tmp_path, toy_envs, one_torch_thread):
    pytest.importorskip("ray")
    from imaginebench.evaluation import stable_view
    from imaginebench.training import run_dir, train
    from imaginebench.evaluation.records import RECORD_NAME, read_record
    from imaginebench.run_folder import CHECKPOINT_NAME
    from imaginebench.sweep import ResultsStore, run_grid
    from tests.sweep.helpers import register_toys, toy_data
    from tests.sweep.test_ray_grid import _session

    toy_data()
    store_path = tmp_path / "results.sqlite"
    runs = {run.spec.seed: run for run in fault_grid().plan().runs}
    finished_seed = next(seed for seed in runs if seed != GRID_STOP_SEED)
    stopped_dir = run_dir(runs[GRID_STOP_SEED].spec)

    # One CPU: the other run finishes first; the grid is killed (driver, Ray and the worker) right after
    # the stopping run's step-20 checkpoint.
    worker, session = run_until_killed("run_stopping_grid", data_home, data_home.resolve() / GRID_STOP_MARKER,
                                       tmp_path / "log", store_path=str(store_path))
    assert worker != session
    deadline = time.monotonic() + 60
    while _session(session) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _session(session), f"processes of the killed grid are still alive: {_session(session)}"

    with ResultsStore(store_path) as store:
        before = {row["seed"]: row for row in store.rows()}
        assert {s: (r["status"], r["attempts"]) for s, r in before.items()} == {
            finished_seed: ("done", 1), GRID_STOP_SEED: ("running", 1)}
        finished_record = Path(before[finished_seed]["record_path"]).read_bytes()
        assert _checkpoint_state(stopped_dir / CHECKPOINT_NAME)["step"] == GRID_STOP_STEP
        assert not (stopped_dir / RECORD_NAME).exists()

        summary = run_grid(fault_grid(), store, num_cpus=1, progress=False, setup=register_toys)
        assert (summary.skipped, summary.done, summary.resumed, summary.failed) == (1, 1, 1, 0)
        after = {row["seed"]: row for row in store.rows()}
    assert after[finished_seed] == before[finished_seed]
    assert Path(after[finished_seed]["record_path"]).read_bytes() == finished_record
    assert (after[GRID_STOP_SEED]["status"], after[GRID_STOP_SEED]["attempts"]) == ("done", 2)
    resumed = read_record(after[GRID_STOP_SEED]["record_path"])
    assert resumed["timing"]["resumed_from_step"] == GRID_STOP_STEP

    shutil.rmtree(stopped_dir)
    straight = train(runs[GRID_STOP_SEED].spec, progress=False).record
    assert stable_view(resumed) == stable_view(straight)
