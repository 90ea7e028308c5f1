"""The bad-input table: every verb given wrong ids, levels, values, files and folders.

Each case runs the real entry point (:func:`imaginebench.cli.run_app`, what the
``imaginebench`` script calls) in-process and must give exactly one line on stderr that starts
with ``error:`` and says what is wrong, exit code 2 for a bad argument and 1 for anything else,
no traceback, and leave the data home and the working folder byte for byte as they were (no
partial file, nothing already written lost).  Every command and option an error message
suggests must exist (checked on each case's message, and on every ``imaginebench …`` command
written anywhere in the package's source).

``python -m tests.cli.test_bad_input`` prints the table (for the notes).
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import tomllib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import typer

from imaginebench.cli import app, run_app
from tests.algos.helpers import HASH_ENCODER, build_toy_data, save_imaginary, toy_envs  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[2]
TRAIN_FAST = ["--profile", "tiny", "--encoder", HASH_ENCODER, "--steps", "20", "--checkpoint-every", "10",
              "--eval-episodes", "1", "--batch-size", "16", "--set", "hidden_units=[16]", "--no-progress"]
TOY = ["train", "--env", "Toy-v0", "--algo", "discrete_bc"]
FINETUNE = ["finetune", "--env", "Toy-v0", "--level", "train", "--profile", "tiny", "--no-progress"]
TOY_EASY = [*TOY, "--level", "easy"]
CALIBRATE = ["calibrate", "--env", "CLEVR-v0", "--level", "easy", "--no-progress"]
COLLECT = ["data", "collect", "--env", "Toy-v0", "--level", "easy", "--profile", "tiny", "--episodes", "4"]
BENCH = ["bench", "--envs", "Toy-v0", "--algos", "bc", "--levels", "train", "--data", "real", "--store",
         "{home}/s.sqlite", "--no-progress"]
IMAGINE_TRAIN = ["imagine", "train", "--env", "CLEVR-v0", "--profile", "tiny", "--backbone", "tiny", "--no-progress"]
IMAGINE_GENERATE = ["imagine", "generate", "--env", "CLEVR-v0", "--profile", "tiny", "--backbone", "tiny",
                    "--no-progress"]
IMAGINE_QUALITY = ["imagine", "quality", "--env", "Toy-v0", "--profile", "tiny", "--level", "easy"]
IMAGINE_RENDER = ["imagine", "render", "--env", "Toy-v0", "--profile", "tiny", "--level", "easy", "--out",
                  "{home}/x.png"]
FT_SCRATCH = [*FINETUNE, "--from", "scratch", "--method", "discrete_cql"]


def _real(home: Path, env: str = "Toy-v0", level: str = "train") -> Path:
    return home / "datasets" / env / "tiny" / f"real-{level}.npz"


def _imaginary(home: Path, level: str = "easy", env: str = "Toy-v0") -> Path:
    return home / "datasets" / env / "tiny" / f"imaginary-{level}.npz"


def _rewrite(path: Path, change: Callable) -> None:
    """Load ``path`` without checks, apply ``change`` to its arrays/metadata, save it with fresh checksums."""
    from imaginebench.data.dataset import EpisodeDataset
    from imaginebench.data.storage import load_dataset, save_dataset

    ds = load_dataset(path)
    arrays = {k: np.array(getattr(ds, k)) for k in ds.ARRAYS}
    metadata = dict(ds.metadata)
    change(arrays, metadata)
    save_dataset(EpisodeDataset(**arrays, tasks=ds.tasks, instructions=ds.instructions, metadata=metadata), path,
                 overwrite=True)


def nan_state(home: Path) -> None:
    def change(arrays, metadata):
        arrays["states"][5, 0] = np.nan
    _rewrite(_real(home), change)


def truncated(home: Path) -> None:
    path = _real(home)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def byte_flipped(home: Path) -> None:
    path = _real(home)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def foreign_text(home: Path) -> None:
    _real(home).write_text("not a dataset\n")


def foreign_zip(home: Path) -> None:
    with zipfile.ZipFile(_real(home), "w") as zf:
        zf.writestr("hello.txt", "a zip file of somebody else's")


def empty_episodes(home: Path) -> None:
    def change(arrays, metadata):
        for key in arrays:
            arrays[key] = arrays[key][:0] if key != "states" else arrays[key][:0]
        arrays["lengths"] = arrays["lengths"][:0]
    _rewrite(_real(home), change)


def action_out_of_range(home: Path) -> None:
    def change(arrays, metadata):
        arrays["actions"][0] = 7
    _rewrite(_real(home), change)


def wrong_state_width(home: Path) -> None:
    def change(arrays, metadata):
        metadata["state_dim"] = arrays["states"].shape[1] + 3
    _rewrite(_real(home), change)


def imaginary_of_other_domain(home: Path) -> None:
    save_imaginary("ToyCont-v0", "easy", episodes=6)
    shutil.move(_imaginary(home, env="ToyCont-v0"), _imaginary(home))


def imaginary_of_other_level(home: Path) -> None:
    save_imaginary("Toy-v0", "hard", episodes=6)
    shutil.move(_imaginary(home, "hard"), _imaginary(home))


def imaginary_with_other_actions(home: Path) -> None:
    """ToyCont's (continuous) rollouts relabelled as Toy-v0's: the domain matches, the action space does not."""
    imaginary_of_other_domain(home)

    def change(arrays, metadata):
        metadata["domain"] = "Toy-v0"
    _rewrite(_imaginary(home), change)


def finished_run(home: Path) -> None:
    assert run_app([*TOY, "--seeds", "0", *TRAIN_FAST]) == 0


def negative_task_id(home: Path) -> None:
    def change(arrays, metadata):
        arrays["task_ids"][0] = -1
    _rewrite(_real(home), change)


def text_states(home: Path) -> None:
    def change(arrays, metadata):
        arrays["states"] = arrays["states"].astype("U8")
    _rewrite(_real(home), change)


def float_lengths(home: Path) -> None:
    def change(arrays, metadata):
        arrays["lengths"] = arrays["lengths"].astype(np.float64)
    _rewrite(_real(home), change)


RUN_FOLDER = "{home}/runs/Toy-v0/tiny/train/real/discrete_bc/seed0"


def _record(home: Path) -> Path:
    return home / "runs/Toy-v0/tiny/train/real/discrete_bc/seed0/record.json"


def nan_score_record(home: Path) -> None:
    import json

    finished_run(home)
    record = json.loads(_record(home).read_text())
    record["score"]["train"] = float("nan")
    _record(home).write_text(json.dumps(record, allow_nan=True))


def run_without_model_pt(home: Path) -> None:
    """A run finished before model.pt existed: record.json and d3rlpy's model.d3 only."""
    import json

    finished_run(home)
    (_record(home).parent / "model.pt").unlink()
    record = json.loads(_record(home).read_text())
    record.pop("files")
    _record(home).write_text(json.dumps(record))


def truncated_model_pt(home: Path) -> None:
    finished_run(home)
    path = _record(home).parent / "model.pt"
    path.write_bytes(path.read_bytes()[:100])


def imaginary_data(home: Path) -> None:
    save_imaginary("Toy-v0", "easy", episodes=6)


@dataclass(frozen=True)
class Case:
    """One bad input: the command line, the exit code and a phrase its one-line error must hold."""

    name: str
    args: list[str]
    code: int
    needle: str
    setup: Callable[[Path], None] | None = None
    env: dict[str, str] = field(default_factory=dict)


def _edit_record(field: str, value: object) -> Callable[[Path], None]:
    def setup(home: Path) -> None:
        import json

        finished_run(home)
        record = json.loads(_record(home).read_text())
        record[field] = value
        _record(home).write_text(json.dumps(record))
    return setup


_HELD: list = []


def held_run_folder(home: Path) -> None:
    """Another process is writing the run ``TOY`` trains (its writer lock is held)."""
    from imaginebench.fileio import WriterLock

    folder = home / "runs" / "Toy-v0" / "tiny" / "train" / "real" / "discrete_bc" / "seed0"
    folder.mkdir(parents=True)
    _HELD.append(WriterLock(folder).acquire())


CASES = [
    # click's own usage errors, made one line
    Case("unknown verb", ["trian"], 2, "No such command 'trian'. Did you mean 'train'?"),
    Case("unknown option", [*TOY, "--bogus", "1"], 2, "No such option: --bogus"),
    Case("missing option", ["train", "--env", "Toy-v0"], 2, "Missing option '--algo'"),
    Case("int option given text", [*TOY, "--steps", "abc"], 2, "Invalid value for '--steps'"),
    Case("float option given text", [*TOY, "--mix-ratio", "half"], 2, "Invalid value for '--mix-ratio'"),
    # train: arguments
    Case("unknown env", ["train", "--env", "CLEVR-v9", "--algo", "bc"], 2, "Did you mean 'CLEVR-v0'?"),
    Case("unknown algo", ["train", "--env", "Toy-v0", "--algo", "ppo"], 2, "Unknown algorithm 'ppo'"),
    Case("algo of the wrong action kind", ["train", "--env", "Toy-v0", "--algo", "td3bc", *TRAIN_FAST], 2,
         "'td3bc' needs continuous actions"),
    Case("continuous-only algo on CLEVR", ["train", "--env", "CLEVR-v0", "--algo", "prdc", *TRAIN_FAST], 2,
         "'prdc' needs continuous actions, but CLEVR-v0 has discrete actions (Discrete(40)). Algorithms that fit: "
         "discrete_bc"),
    Case("unknown level", [*TOY, "--level", "medium", *TRAIN_FAST], 2, "Unknown level 'medium'"),
    Case("unknown profile", [*TOY, "--profile", "huge"], 2, "Unknown profile 'huge'"),
    Case("seed not an integer", [*TOY, "--seeds", "0", "x", *TRAIN_FAST], 2, "Seeds must be integers"),
    Case("contradicting data flags", [*TOY_EASY, "--real-only", "--real-upper-bound", *TRAIN_FAST], 2,
         "Choose one of --real-upper-bound and --real-only"),
    Case("upper bound at train", [*TOY, "--real-upper-bound", *TRAIN_FAST], 2, "needs a novel level"),
    Case("mix ratio outside (0, 1)", [*TOY_EASY, "--mix-ratio", "1.5", *TRAIN_FAST], 2, "mix_ratio must lie"),
    Case("zero steps", [*TOY, *TRAIN_FAST, "--steps", "0"], 2, "must be positive"),
    Case("unknown imaginary variant", [*TOY_EASY, "--imaginary", "dreamt", *TRAIN_FAST], 2,
         "Unknown --imaginary 'dreamt'"),
    Case("unknown device", [*TOY, "--device", "tpu", *TRAIN_FAST], 2, "Unknown --device 'tpu'"),
    Case("--set without =", [*TOY, *TRAIN_FAST, "--set", "learning_rate"], 2, "--set takes FIELD=VALUE"),
    Case("--set unknown field", [*TOY, *TRAIN_FAST, "--set", "dropout=0.1"], 2, "has no field(s) ['dropout']"),
    Case("--set wrong type", [*TOY, *TRAIN_FAST, "--set", "learning_rate=fast"], 2,
         "learning_rate must be a number, got 'fast'"),
    Case("--set NaN learning rate", [*TOY, *TRAIN_FAST, "--set", "learning_rate=NaN"], 2,
         "learning_rate must be positive"),
    Case("--set negative layer", [*TOY, *TRAIN_FAST, "--set", "hidden_units=[-4]"], 2,
         "hidden_units must be positive layer sizes"),
    Case("--set BCQ flexibility 1", ["train", "--env", "Toy-v0", "--algo", "discrete_bcq", *TRAIN_FAST, "--set",
                                      "action_flexibility=1"], 2, "action_flexibility must lie strictly between 0 and 1"),
    Case("bad tag", [*TOY, *TRAIN_FAST, "--tag", "a b"], 2, "tag must be letters"),
    Case("unknown encoder", [*TOY, *TRAIN_FAST, "--encoder", "word2vec"], 2, "Unknown instruction encoder"),
    # train: data and folders
    Case("no real data", [*TOY, *TRAIN_FAST], 1, "imaginebench data collect --env Toy-v0 --level train",
         setup=lambda home: _real(home).unlink()),
    Case("no imaginary data", [*TOY_EASY, *TRAIN_FAST], 1, "--real-only"),
    Case("real data with a NaN state", [*TOY, *TRAIN_FAST], 1, "a state holds NaN or inf", setup=nan_state),
    Case("truncated dataset", [*TOY, *TRAIN_FAST], 1, "real-train.npz", setup=truncated),
    Case("byte-flipped dataset", [*TOY, *TRAIN_FAST], 1, "real-train.npz", setup=byte_flipped),
    Case("text file as dataset", [*TOY, *TRAIN_FAST], 1, "corrupt or truncated dataset file", setup=foreign_text),
    Case("foreign zip as dataset", [*TOY, *TRAIN_FAST], 1, "not an ImagineBench dataset", setup=foreign_zip),
    Case("dataset with no episodes", [*TOY, *TRAIN_FAST], 1, "holds no episodes", setup=empty_episodes),
    Case("action id out of range", [*TOY, *TRAIN_FAST], 1, "action", setup=action_out_of_range),
    Case("state width vs metadata", [*TOY, *TRAIN_FAST], 1, "state", setup=wrong_state_width),
    Case("imaginary data of another domain", [*TOY_EASY, *TRAIN_FAST], 1, "made for ToyCont-v0",
         setup=imaginary_of_other_domain),
    Case("imaginary data of another level", [*TOY_EASY, *TRAIN_FAST], 1, "holds hard-level data",
         setup=imaginary_of_other_level),
    Case("imaginary actions unlike the real ones", [*TOY_EASY, *TRAIN_FAST], 1, "continuous actions",
         setup=imaginary_with_other_actions),
    Case("run folder holds other settings", [*TOY, "--seeds", "0", *TRAIN_FAST, "--set", "learning_rate=0.01"], 2,
         "Give this run a --tag", setup=finished_run),
    Case("data home is a file", [*TOY, *TRAIN_FAST], 1, "is a file, not a folder", env={"IMAGINEBENCH_HOME": "{home}/real-file"},
         setup=lambda home: (home / "real-file").write_text("x")),
    Case("data home set but empty", [*TOY, *TRAIN_FAST], 2, "IMAGINEBENCH_HOME is set but empty",
         env={"IMAGINEBENCH_HOME": ""}),
    Case("data home is a dangling link", [*TOY, *TRAIN_FAST], 1, "which does not exist",
         env={"IMAGINEBENCH_HOME": "{home}/gone-link"},
         setup=lambda home: (home / "gone-link").symlink_to(home / "nowhere")),
    # data
    Case("collect: unknown env", ["data", "collect", "--env", "Nope-v0"], 2, "Unknown environment id 'Nope-v0'"),
    Case("collect: unknown level", ["data", "collect", "--env", "Toy-v0", "--level", "medium"], 2,
         "Unknown level 'medium'"),
    Case("collect: zero episodes", ["data", "collect", "--env", "Toy-v0", "--profile", "tiny", "--episodes", "0",
                                    "--overwrite"], 2, "--episodes must be at least 1"),
    Case("collect: dataset exists", ["data", "collect", "--env", "Toy-v0", "--profile", "tiny", "--episodes", "3"], 1,
         "already exists; pass --overwrite"),
    Case("info: missing file", ["data", "info", "{home}/nothing.npz"], 1, "nothing.npz"),
    Case("info: NaN inside", ["data", "info", "{home}/datasets/Toy-v0/tiny/real-train.npz"], 1, "NaN or inf",
         setup=nan_state),
    Case("info: foreign zip", ["data", "info", "{home}/datasets/Toy-v0/tiny/real-train.npz"], 1,
         "not an ImagineBench dataset", setup=foreign_zip),
    Case("export: unknown source", ["data", "export-minari", "--env", "Toy-v0", "--source", "dreamt", "--profile",
                                    "tiny", "--root", "{home}/minari"], 2, "Unknown data source 'dreamt'"),
    Case("export: missing dataset", ["data", "export-minari", "--env", "Toy-v0", "--level", "hard", "--profile",
                                     "tiny", "--root", "{home}/minari"], 1,
         "imaginebench data collect --env Toy-v0 --level hard"),
    # calibrate, imagine, experts, bench, report
    Case("calibrate: unknown level", ["calibrate", "--env", "CLEVR-v0", "--level", "medium", "--no-progress"], 2,
         "Unknown level 'medium'"),
    Case("calibrate: unknown task", ["calibrate", "--env", "CLEVR-v0", "--level", "easy", "--task", "fly",
                                     "--no-progress"], 2, "matches --task fly"),
    Case("imagine: unknown backbone", ["imagine", "train", "--env", "CLEVR-v0", "--profile", "tiny", "--backbone",
                                       "gpt-17"], 2, "Unknown"),
    Case("imagine: bad task weights", ["imagine", "train", "--env", "CLEVR-v0", "--profile", "tiny", "--backbone",
                                       "tiny", "--task-weights", "1,2"], 2, "--task-weights needs four finite numbers"),
    Case("imagine: negative numeric layers", ["imagine", "train", "--env", "CLEVR-v0", "--profile", "tiny",
                                              "--backbone", "tiny", "--numeric-layers", "-1"], 2,
         "--numeric-layers must be >= 0"),
    Case("imagine: no fine-tuned model", ["imagine", "generate", "--env", "CLEVR-v0", "--profile", "tiny",
                                          "--backbone", "tiny", "--no-progress"], 1, "imaginebench imagine train"),
    Case("imagine: unknown quality level", ["imagine", "quality", "--env", "CLEVR-v0", "--profile", "tiny",
                                            "--level", "medium"], 2, "rephrase, easy, hard, all"),
    Case("experts: scripted domain", ["experts", "train", "--env", "CLEVR-v0"], 2, "scripted, nothing to train"),
    Case("experts: zero steps", ["experts", "train", "--env", "HalfCheetah-v0", "--steps", "0"], 2,
         "--steps must be positive"),
    Case("bench: unknown env", ["bench", "--envs", "CLEVR-v1", "--algos", "bc", "--store", "{home}/s.sqlite"], 2,
         "Did you mean 'CLEVR-v0'?"),
    Case("bench: zero lease", ["bench", "--envs", "CLEVR-v0", "--algos", "bc", "--lease", "0", "--store",
                               "{home}/s.sqlite"], 2, "--lease must be > 0"),
    Case("finetune: scratch without a method", [*FINETUNE, "--from", "scratch"], 2, "needs --method"),
    Case("finetune: unknown method", [*FINETUNE, "--from", "scratch", "--method", "ppo"], 2,
         "Unknown online method 'ppo'"),
    Case("finetune: budget not a multiple of the envs", [*FINETUNE, "--from", "scratch", "--method", "discrete_cql",
                                                         "--budget", "50"], 2, "multiples of num_envs"),
    Case("finetune: no offline run", [*FINETUNE, "--from", "discrete_cql/real"], 1,
         "imaginebench train --env Toy-v0 --algo discrete_cql"),
    Case("report: no runs", ["report", "--env", "Toy-v0", "--profile", "tiny", "--quiet", "--no-pictures", "--out",
                             "{home}/report"], 1, "imaginebench train --env Toy-v0"),
    Case("report: unknown env", ["report", "--env", "Nope-v0", "--quiet", "--out", "{home}/report"], 2,
         "Unknown environment id 'Nope-v0'"),
    # issue 36: counts bounded by the machine, values that make sense, checked before any work
    Case("calibrate: zero workers", [*CALIBRATE, "--workers", "0"], 2, "--workers must be at least 1"),
    Case("calibrate: negative workers", [*CALIBRATE, "--workers", "-4"], 2, "--workers must be at least 1"),
    Case("calibrate: a fork storm of workers", [*CALIBRATE, "--workers", "100000"], 2,
         "more worker processes than the"),
    Case("calibrate: zero expert episodes", [*CALIBRATE, "--expert-episodes", "0"], 2,
         "--expert-episodes must be at least 1"),
    Case("calibrate: negative random episodes", [*CALIBRATE, "--random-episodes", "-1"], 2,
         "--random-episodes must be at least 1"),
    Case("calibrate: random cap below the first count", [*CALIBRATE, "--max-random-episodes", "10"], 2,
         "--max-random-episodes must be at least 100"),
    Case("collect: zero workers", [*COLLECT, "--workers", "0"], 2, "--workers must be at least 1"),
    Case("collect: a fork storm of workers", [*COLLECT, "--workers", "100000"], 2, "more worker processes than the"),
    Case("collect: negative episodes", [*COLLECT[:-1], "-3"], 2, "--episodes must be at least 1"),
    Case("collect: cluster that does not answer", [*COLLECT, "--ray", "127.0.0.1:1"], 1,
         "No Ray cluster answered at 127.0.0.1:1"),
    Case("collect: cluster address that is no address", [*COLLECT, "--ray", "nowhere"], 2, "is not HOST:PORT"),
    Case("bench: cluster that does not answer", [*BENCH, "--address", "127.0.0.1:1"], 1,
         "No Ray cluster answered at 127.0.0.1:1"),
    Case("bench: zero cpus", [*BENCH, "--cpus", "0"], 2, "--cpus must be at least 1"),
    Case("bench: more cpus than the machine", [*BENCH, "--cpus", "100000"], 2, "more worker processes than the"),
    Case("bench: zero cpus per run", [*BENCH, "--cpus-per-run", "0"], 2, "--cpus-per-run must be > 0"),
    Case("bench: NaN cpus per run", [*BENCH, "--cpus-per-run", "nan"], 2, "--cpus-per-run must be a finite number"),
    Case("bench: more cpus per run than the instance", [*BENCH, "--cpus", "1", "--cpus-per-run", "2"], 2,
         "is more than the local instance's --cpus 1"),
    Case("bench: negative gpus per run", [*BENCH, "--gpus-per-run", "-1"], 2, "--gpus-per-run must be >= 0"),
    Case("bench: negative retries", [*BENCH, "--retries", "-1"], 2, "--retries must be at least 0"),
    Case("bench: cpus with an address", [*BENCH, "--cpus", "1", "--address", "auto"], 2,
         "--cpus sizes a local Ray instance"),
    Case("bench: zero steps", [*BENCH, "--steps", "0"], 2, "must be positive"),
    Case("train: --baselines with a level", [*TOY, *TRAIN_FAST, "--baselines", "--level", "easy"], 2,
         "--baselines trains on real data and covers every level itself"),
    Case("results: unknown level", ["results", "--level", "medium"], 2, "Unknown level 'medium'"),
    Case("results: unknown data variant", ["results", "--data", "fake"], 2, "Unknown training data variant 'fake'"),
    Case("results: unknown algorithm", ["results", "--algo", "ppo"], 2, "Unknown algorithm 'ppo'"),
    Case("data levels: a domain without imaginary data", ["data", "levels", "--env", "Toy-v0"], 1,
         "No imaginary data for Toy-v0 at any novel level"),
    Case("results: the side-by-side table with a filter", ["results", "--baselines", "--env", "CLEVR-v0"], 2,
         "--baselines shows the whole side-by-side table"),
    Case("train: a run another process is writing", [*TOY, *TRAIN_FAST, "--seeds", "0"], 1,
         "is being written by pid", setup=held_run_folder),
    Case("train: a billion evaluation episodes", [*TOY, *TRAIN_FAST, "--eval-episodes", "1000000000"], 2,
         "--eval-episodes must be at most 10000"),
    Case("train: zero threads", [*TOY, *TRAIN_FAST, "--threads", "0"], 2, "--threads must be at least 1"),
    Case("train: a thread storm", [*TOY, *TRAIN_FAST, "--threads", "100000"], 2, "--threads must be at most"),
    Case("train: negative evaluation episodes", [*TOY, *TRAIN_FAST, "--eval-episodes", "-2"], 2, "must be positive"),
    Case("train: zero checkpoint interval", [*TOY, *TRAIN_FAST, "--checkpoint-every", "0"], 2, "must be positive"),
    Case("train: a batch far beyond memory", [*TOY, *TRAIN_FAST, "--batch-size", "100000000000"], 2,
         "GiB of memory, more than the"),
    Case("train: a network far beyond memory", [*TOY, *TRAIN_FAST, "--set", "hidden_units=[4000000000]"], 2,
         "GiB of memory, more than the"),
    Case("train: NaN mix ratio", [*TOY_EASY, *TRAIN_FAST, "--mix-ratio", "nan"], 2, "mix_ratio must lie"),
    Case("finetune: zero envs", [*FT_SCRATCH, "--num-envs", "0"], 2, "num_envs must be at least 1"),
    Case("finetune: a process per env beyond the CPUs", [*FT_SCRATCH, "--num-envs", "512", "--vectorization", "async",
                                                       "--budget", "512", "--eval-every", "512"], 2,
         "--vectorization sync (one process)"),
    Case("finetune: NaN exploration noise", [*FT_SCRATCH, "--noise-std", "nan"], 2, "--noise-std must be a finite"),
    Case("finetune: NaN epsilon", [*FT_SCRATCH, "--epsilon", "nan"], 2, "epsilon must lie in [0, 1]"),
    Case("finetune: offline ratio of 1", [*FT_SCRATCH, "--offline-ratio", "1"], 2, "offline_ratio must lie in [0, 1)"),
    Case("finetune: zero updates per step", [*FT_SCRATCH, "--updates-per-step", "0"], 2,
         "updates_per_step must be at least 1"),
    Case("finetune: a thread storm", [*FT_SCRATCH, "--threads", "100000"], 2, "--threads must be at most"),
    Case("finetune: a budget beyond memory", [*FT_SCRATCH, "--budget", "800000000000", "--eval-every",
                                             "800000000000"], 2, "give a smaller --budget"),
    Case("finetune: a run from before model.pt", [*FINETUNE, "--from", RUN_FOLDER, "--method", "discrete_sac"], 1,
         "has no model.pt", setup=run_without_model_pt),
    Case("finetune: a truncated model.pt", [*FINETUNE, "--from", RUN_FOLDER, "--method", "discrete_sac"], 1,
         "does not match the SHA-256", setup=truncated_model_pt),
    Case("imagine train: zero steps", [*IMAGINE_TRAIN, "--steps", "0"], 2, "--steps must be at least 1"),
    Case("imagine train: NaN learning rate", [*IMAGINE_TRAIN, "--lr", "nan"], 2, "--lr must be a finite number"),
    Case("imagine train: negative adapter learning rate", [*IMAGINE_TRAIN, "--adapter-lr", "-1e-3"], 2,
         "--adapter-lr must be > 0"),
    Case("imagine train: zero batch", [*IMAGINE_TRAIN, "--batch-size", "0"], 2, "--batch-size must be at least 1"),
    Case("imagine train: start-window share above 1", [*IMAGINE_TRAIN, "--start-window-share", "1.5"], 2,
         "--start-window-share must lie in [0, 1]"),
    Case("imagine train: NaN task weight", [*IMAGINE_TRAIN, "--task-weights", "1,nan,1,1"], 2,
         "--task-weights needs four finite numbers"),
    Case("imagine train: all-zero task weights", [*IMAGINE_TRAIN, "--task-weights", "0,0,0,0"], 2,
         "--task-weights needs four finite numbers"),
    Case("imagine train: a thread storm", [*IMAGINE_TRAIN, "--threads", "100000"], 2, "--threads must be at most"),
    Case("imagine train: one action bin", [*IMAGINE_TRAIN, "--action-bins", "1"], 2, "--action-bins must be at least 2"),
    Case("imagine train: action bins on a discrete domain", [*IMAGINE_TRAIN, "--action-bins", "21"], 2,
         "--action-bins is for continuous actions; CLEVR-v0's actions are discrete"),
    Case("imagine train: a warm start from nowhere", [*IMAGINE_TRAIN, "--init-from", "no/such/folder"], 1,
         "No rollout-model checkpoint at no/such/folder"),
    Case("imagine generate: negative temperature", [*IMAGINE_GENERATE, "--temperature", "-1"], 2,
         "--temperature must be >= 0"),
    Case("imagine generate: NaN temperature", [*IMAGINE_GENERATE, "--temperature", "nan"], 2,
         "--temperature must be a finite number"),
    Case("imagine generate: budget below one", [*IMAGINE_GENERATE, "--budget", "0.5"], 2, "--budget must be >= 1"),
    Case("imagine generate: a physics prior the domain lacks", [*IMAGINE_GENERATE, "--physics-prior"], 2,
         "--physics-prior: CLEVR-v0 has no physics prior"),
    Case("imagine generate: zero batch", [*IMAGINE_GENERATE, "--batch-size", "0"], 2,
         "--batch-size must be at least 1"),
    Case("imagine generate: a batch beyond memory", [*IMAGINE_GENERATE, "--batch-size", "100000000000000"], 2,
         "give a smaller --batch-size"),
    Case("imagine generate: negative episodes", [*IMAGINE_GENERATE, "--episodes", "-5"], 2,
         "--episodes must be at least 1"),
    Case("imagine quality: negative tolerance", [*IMAGINE_QUALITY, "--tolerance", "-1"], 2,
         "--tolerance must be > 0", setup=imaginary_data),
    Case("imagine quality: NaN tolerance", [*IMAGINE_QUALITY, "--tolerance", "nan"], 2,
         "--tolerance must be a finite number", setup=imaginary_data),
    Case("imagine render: episode outside the dataset", [*IMAGINE_RENDER, "--source", "real", "--level", "train",
                                                         "--episode", "999"], 1, "episode 999 does not exist"),
    Case("imagine render: negative episode", [*IMAGINE_RENDER, "--episode", "-1"], 2, "--episode must be at least 0"),
    Case("imagine render: one frame", [*IMAGINE_RENDER, "--frames", "1"], 2, "--frames must be at least 2"),
    Case("experts: negative evaluation episodes", ["experts", "train", "--env", "HalfCheetah-v0", "--eval-episodes",
                                                   "-5", "--out-dir", "{home}/experts"], 2,
         "--eval-episodes must be at least 1"),
    Case("experts: too few steps for the warm-up", ["experts", "train", "--env", "HalfCheetah-v0", "--steps", "3",
                                                    "--out-dir", "{home}/experts"], 2, "--steps must be at least 5"),
    Case("data: negative task id", ["data", "info", "{home}/datasets/Toy-v0/tiny/real-train.npz"], 1,
         "task_ids", setup=negative_task_id),
    Case("data: states stored as text", [*TOY, *TRAIN_FAST], 1, "states", setup=text_states),
    Case("data: lengths stored as floats", [*TOY, *TRAIN_FAST], 1, "lengths", setup=float_lengths),
    Case("report: a record with a NaN score", ["report", "--env", "Toy-v0", "--profile", "tiny", "--quiet",
                                               "--no-pictures", "--out", "{home}/report"], 1, "holds NaN",
         setup=nan_score_record),
    Case("train: a record whose settings are text", [*TOY, "--seeds", "0", *TRAIN_FAST], 1,
         "settings that is not a mapping", setup=_edit_record("settings", "fast")),
    Case("report: a record with a normalised score as text", ["report", "--env", "Toy-v0", "--profile", "tiny",
                                                              "--quiet", "--no-pictures", "--out", "{home}/report"],
         1, "normalised score at train that is not a number ('high')",
         setup=_edit_record("normalised", {"train": "high"})),
    Case("export: root is a file", ["data", "export-minari", "--env", "Toy-v0", "--profile", "tiny", "--root",
                                    "{home}/minari-file"], 1, "minari-file",
         setup=lambda home: (home / "minari-file").write_text("x")),
    Case("export: unknown level", ["data", "export-minari", "--env", "Toy-v0", "--level", "medium", "--profile",
                                   "tiny", "--root", "{home}/minari"], 2, "Unknown level 'medium'"),
    Case("embed: unknown level", ["embed", "--env", "Toy-v0", "--levels", "medium", "--encoder", HASH_ENCODER], 2,
         "Unknown level 'medium'"),
]


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A data home with the toy real data (train, tiny profile), copied for each case."""
    home = tmp_path_factory.mktemp("bad_input_template")
    with pytest.MonkeyPatch.context() as mp:
        from tests.algos.helpers import register_toy_envs

        mp.setenv("IMAGINEBENCH_HOME", str(home))
        register_toy_envs(mp)
        build_toy_data("Toy-v0", ("train",), episodes=12)
    return home


def _snapshot(*folders: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for folder in folders for p in sorted(folder.rglob("*")) if p.is_file()}


COMMANDS: dict[str, set[str]] = {}


def _commands() -> dict[str, set[str]]:
    """``{"data collect": {"--env", …}, …}``: every command path of the tool and its options."""
    if not COMMANDS:
        def walk(cmd, path: list[str]) -> None:
            COMMANDS[" ".join(path)] = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}
            for name, sub in getattr(cmd, "commands", {}).items():
                walk(sub, [*path, name])
        walk(typer.main.get_command(app), [])
    return COMMANDS


SUGGESTION = re.compile(r"imaginebench((?: [a-z][a-z-]*)+)((?: --[a-z][a-z0-9-]*(?: (?!--)[^\s,;)'\"`]+)?)*)")


def suggested_commands(text: str) -> list[tuple[str, str, list[str]]]:
    """``(command path, unresolved words, options)`` of every ``imaginebench …`` command line in
    ``text``.  Words after the deepest command path that exists are prose unless the path is a
    group (``imaginebench imagine dream`` leaves ``dream`` unresolved).  A first word that is no
    top-level name at all, with no option after it, is prose (``imaginebench reads …``)."""
    commands = _commands()
    found = []
    for words, opts in SUGGESTION.findall(text):
        words_list = words.split()
        options = re.findall(r"--[a-z][a-z0-9-]*", opts)
        if words_list[0] not in commands and not options:
            continue
        path: list[str] = []
        for word in words_list:
            if " ".join([*path, word]) in commands:
                path.append(word)
            else:
                break
        rest = words_list[len(path):]
        is_group = any(c.startswith(" ".join(path) + " ") for c in commands) if path else True
        found.append((" ".join(path), " ".join(rest) if is_group and (rest or options) else "", options))
    return found


def check_suggestions(text: str, invoked: str, given: list[str] = ()) -> None:
    """Every command and option ``text`` suggests exists; a bare ``--option`` belongs to ``invoked``
    (options the user gave, which an error may echo, are not suggestions)."""
    commands = _commands()
    for path, unresolved, opts in suggested_commands(text):
        assert not unresolved, f"suggests a command that does not exist: imaginebench {path} {unresolved}"
        assert set(opts) <= commands[path], f"imaginebench {path} has no {set(opts) - commands[path]}"
    rest = SUGGESTION.sub("", text)
    for extra in re.findall(r"pip install '?imaginebench\[([a-z,]+)\]", rest):
        extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
        assert set(extra.split(",")) <= set(extras), f"suggests a missing extra: {extra}"
    rest = re.sub(r"pip install \S+", "", rest)
    for opt in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", rest):
        if opt in given:
            continue
        assert opt in commands[invoked], f"suggests {opt}, which imaginebench {invoked} does not have"


def _invoked(args: list[str]) -> str:
    path: list[str] = []
    for word in args:
        if " ".join([*path, word]) in _commands() and not word.startswith("-"):
            path.append(word)
        else:
            break
    return " ".join(path)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_gives_one_line_and_changes_nothing(case, template, tmp_path, monkeypatch, capsys, caplog, toy_envs):
    home = tmp_path / "home"
    shutil.copytree(template, home)
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("IMAGINEBENCH_HOME", str(home))
    if case.setup:
        case.setup(home)
    for key, value in case.env.items():
        monkeypatch.setenv(key, value.format(home=home))
    before = _snapshot(home, workdir)
    capsys.readouterr()

    code = run_app([a.format(home=home) for a in case.args])

    err = capsys.readouterr().err
    # warnings logged on the way would reach the user's stderr too (pytest diverts them to caplog)
    err += "".join(f"{r.getMessage()}\n" for r in caplog.records if r.levelno >= logging.WARNING)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("error: ") and "Traceback" not in err
    assert case.needle in line, line
    assert code == case.code, line
    assert _snapshot(home, workdir) == before, "the failed command changed or left files"
    assert not any(p.name.startswith(".") and p.suffix == ".tmp" for p in home.rglob("*"))
    check_suggestions(line, _invoked(case.args), case.args)


def test_the_table_is_large():
    assert len(CASES) >= 40 and len({c.name for c in CASES}) == len(CASES)
    assert {c.code for c in CASES} == {1, 2}


def _source_strings() -> list[tuple[Path, str]]:
    return [(p, p.read_text()) for p in sorted((ROOT / "src" / "imaginebench").rglob("*.py"))]


def test_every_command_written_in_the_package_exists():
    """Commands in messages, hints and docstrings name real verbs and real options."""
    seen = 0
    for path, text in _source_strings():
        flat = re.sub(r"\"\s*\n\s*f?\"", "", text)  # join implicitly concatenated string literals
        for command, unresolved, opts in suggested_commands(flat):
            seen += 1
            assert not unresolved, f"{path.name}: imaginebench {command} {unresolved} does not exist"
            assert set(opts) <= _commands()[command], f"{path.name}: imaginebench {command} has no " \
                                                      f"{set(opts) - _commands()[command]}"
    assert seen >= 10


def test_the_suggestion_check_catches_wrong_hints():
    """The checker itself: an option of another verb, a missing verb and a missing extra are caught."""
    with pytest.raises(AssertionError, match="--data"):
        check_suggestions("error: no imaginary data; pass --data real", "train")
    with pytest.raises(AssertionError, match="does not exist"):
        check_suggestions("error: build it with: imaginebench imagine dream --env X", "train")
    with pytest.raises(AssertionError, match="has no"):
        check_suggestions("error: run imaginebench data collect --env X --out y", "train")
    with pytest.raises(AssertionError, match="extra"):
        check_suggestions("error: pip install 'imaginebench[quantum]'", "train")
    check_suggestions("error: run imaginebench data collect --env X --level easy (or --real-only)", "train")


def render_table() -> str:
    """The table as Markdown: case, command line, exit code, the error line."""
    import contextlib
    import io
    import os
    import tempfile

    from tests.algos.helpers import register_toy_envs

    rows = ["| # | case | command | exit | error |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        template_home = Path(tmp) / "template"
        mp.setenv("IMAGINEBENCH_HOME", str(template_home))
        register_toy_envs(mp)
        build_toy_data("Toy-v0", ("train",), episodes=12)
        for i, case in enumerate(CASES, 1):
            home = Path(tmp) / f"home{i}"
            shutil.copytree(template_home, home)
            mp.setenv("IMAGINEBENCH_HOME", str(home))
            if case.setup:
                case.setup(home)
            for key, value in case.env.items():
                mp.setenv(key, value.format(home=home))
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = run_app([a.format(home=home) for a in case.args])
            line = err.getvalue().strip().replace(str(home), "$HOME").replace("|", "\\|")
            shown = " ".join(case.args).replace("{home}", "$HOME").replace(" ".join(TRAIN_FAST), "…")
            rows.append(f"| {i} | {case.name} | `imaginebench {shown}` | {code} | {line} |")
            os.environ.pop("IMAGINEBENCH_HOME", None)
    return "\n".join(rows)


if __name__ == "__main__":
    print(render_table())


READ_ONLY_DRIVER = """
import contextlib, io, json, sys
import pytest
from tests.algos.helpers import register_toy_envs
from imaginebench.cli import run_app

register_toy_envs(pytest.MonkeyPatch())
results = []
for args in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = run_app(args)
    results.append([code, err.getvalue()])
print(json.dumps(results))
"""


def _read_only_prefix(home: Path) -> list[str]:
    """A command prefix under which ``home`` is read-only: plain permissions for a normal user;
    for root (whom permissions do not stop) a read-only bind mount in a private mount namespace."""
    import os
    import subprocess

    if os.geteuid() != 0:
        for p in [home, *home.rglob("*")]:
            p.chmod(0o555 if p.is_dir() else 0o444)
        return []
    if shutil.which("unshare") is None:
        pytest.skip("running as root without unshare: cannot make a read-only folder")
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"running as root and unshare -rm is not allowed here: {probe.stderr.decode().strip()}")
    return ["unshare", "-rm", "sh", "-c", f'mount --bind "{home}" "{home}" && mount -o remount,ro,bind "{home}" '
                                          '&& exec "$0" "$@"']


def test_read_only_data_home_gives_one_line_and_loses_nothing(template, tmp_path):
    import json
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    shutil.copytree(template, home)
    before = _snapshot(home)
    commands = [["data", "collect", "--env", "Toy-v0", "--level", "easy", "--profile", "tiny", "--episodes", "3"],
                [*TOY, "--seeds", "0", *TRAIN_FAST]]
    env = {**os.environ, "IMAGINEBENCH_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    try:
        done = subprocess.run([*_read_only_prefix(home), sys.executable, "-c", READ_ONLY_DRIVER, json.dumps(commands)],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    finally:
        for p in [home, *home.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
    assert done.returncode == 0, done.stderr
    for (code, err), args in zip(json.loads(done.stdout.strip().splitlines()[-1]), commands):
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: cannot use "), (args, err)
        assert ("Read-only file system" in lines[0] or "Permission denied" in lines[0]) and code == 1, lines[0]
        assert "IMAGINEBENCH_HOME" in lines[0]
    assert _snapshot(home) == before


ADVICE = {
    # case name -> the command line to retry after running the advice (None: the case's own)
    "no real data": None,
    "no imaginary data": None,  # the advice's alternative, --real-only, is tried below
    "real data with a NaN state": None,
    "export: missing dataset": None,
    "finetune: no offline run": None,
    "report: no runs": None,
    "run folder holds other settings": None,
    "finetune: a run from before model.pt": [*FINETUNE, "--from", "discrete_bc@retrained/real", "--method",
                                             "discrete_sac", "--budget", "16", "--num-envs", "4", "--eval-every",
                                             "16", "--eval-episodes", "1", "--set", "hidden_units=[16]"],
}
"""Errors whose advice is cheap to follow: the test runs it as written, then the retry."""

ADVICE_EXTRA = {"train": ["--steps", "20", "--checkpoint-every", "10", "--eval-episodes", "1", "--set",
                          "hidden_units=[16]", "--no-progress"]}
"""Options appended to a suggested command only to keep it short (never ones that change what it makes)."""


def _suggested_argv(line: str) -> list[str]:
    match = re.search(r"imaginebench((?: [a-z][a-z-]*)+(?: --[a-z][a-z0-9-]*(?: (?!--)[^\s,;)'\"`]+)?)*)", line)
    assert match, f"no command in: {line}"
    argv = match.group(1).split()
    if argv[-1].endswith("."):
        argv[-1] = argv[-1][:-1]
    return argv


@pytest.mark.parametrize("name", list(ADVICE))
def test_following_the_advice_gets_past_the_error(name, template, tmp_path, monkeypatch, capsys, toy_envs):
    """Not only does the suggested command exist: run as written, it makes the original command (or
    the one the message names) get past the error."""
    from imaginebench.config import PROFILES

    case = next(c for c in CASES if c.name == name)
    for table in ("real_episodes", "upper_bound_episodes"):  # sizes of the toy env (a plugin has none)
        monkeypatch.setitem(getattr(PROFILES["tiny"], table), "Toy-v0", 12)
    home = tmp_path / "home"
    shutil.copytree(template, home)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("IMAGINEBENCH_HOME", str(home))
    if case.setup:
        case.setup(home)
    args = [a.format(home=home) for a in case.args]
    capsys.readouterr()
    assert run_app(args) == case.code
    line = capsys.readouterr().err.strip()
    if "--tag" in line and "imaginebench" not in line:  # "give this run a --tag (e.g. --tag variant)"
        retry = [*args, "--tag", "variant"]
    elif name == "no imaginary data":
        retry = [*args, "--real-only"]
    else:
        advice = _suggested_argv(line)
        verb = advice[0]
        extra = ADVICE_EXTRA.get(verb, []) if verb == "train" else []
        assert run_app([*advice, *extra]) == 0, capsys.readouterr().err
        retry = ADVICE[name] or args
    capsys.readouterr()
    code = run_app(retry)
    err = capsys.readouterr().err
    assert code == 0, f"after following {line!r}: {err}"


def test_the_readme_states_the_tables_size():
    found = re.search(r"The table of bad inputs the tests\s+run \((\d+) cases", (ROOT / "README.md").read_text())
    assert found and int(found.group(1)) == len(CASES), "update the README's count of bad-input cases"
