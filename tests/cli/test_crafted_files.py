"""Crafted files in a run folder never run code.

Every file a verb reads from a run folder is replaced by a pickle whose loading would create a
marker file (``open(marker, "w")`` as the payload).  Every verb that reads the folder must refuse
it with one line (or, where it has no reason to read that file, not read it), and the marker must
never appear.  This checks the loading paths themselves, including those inside d3rlpy and torch,
which a grep of our own source cannot see.
"""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest

from imaginebench.cli import run_app
from tests.algos.helpers import toy_envs  # noqa: F401 (fixture)
from tests.cli.test_bad_input import FINETUNE, TOY, TRAIN_FAST, template  # noqa: F401 (fixture)

RUN = Path("runs/Toy-v0/tiny/train/real/discrete_bc/seed0")


class _Payload:
    """Unpickling calls ``open(marker, "w")``: the marker's existence proves code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _plant(path: Path, marker: Path) -> None:
    with open(path, "wb") as f:
        pickle.dump({"format": "imaginebench-model/1", "model": _Payload(marker), "config": "{}"}, f)


@pytest.fixture
def home(template, tmp_path, monkeypatch, toy_envs):
    home = tmp_path / "home"
    shutil.copytree(template, home)
    monkeypatch.setenv("IMAGINEBENCH_HOME", str(home))
    assert run_app([*TOY, "--seeds", "0", *TRAIN_FAST]) == 0
    assert (home / RUN / "model.pt").exists() and (home / RUN / "model.d3").exists()
    return home


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def test_the_payload_does_run_when_unpickled(tmp_path):
    """The planted file is a working exploit for a plain unpickler (so the tests below mean something)."""
    marker = tmp_path / "marker"
    _plant(tmp_path / "x.pkl", marker)
    with open(tmp_path / "x.pkl", "rb") as f:
        pickle.load(f)  # noqa: S301  (the point of this test)
    assert marker.exists()


@pytest.mark.parametrize("start", ["folder", "algo/data"])
def test_finetune_from_a_folder_with_crafted_model_files(home, tmp_path, capsys, start):
    marker = tmp_path / "marker"
    for name in ("model.pt", "model.d3"):
        _plant(home / RUN / name, marker)
    capsys.readouterr()
    frm = str(home / RUN) if start == "folder" else "discrete_bc/real"
    code = run_app([*FINETUNE, "--from", frm, "--method", "discrete_sac", "--budget", "16", "--num-envs", "4",
                    "--eval-every", "16", "--eval-episodes", "1", "--set", "hidden_units=[16]"])
    line = _one_line(capsys)
    assert code == 1 and "model.pt" in line and not marker.exists(), line


def test_finetune_from_a_folder_whose_model_d3_alone_is_crafted_never_reads_it(home, tmp_path, capsys):
    """``model.d3`` is an export: a fine-tune from the run works and never touches it."""
    marker = tmp_path / "marker"
    _plant(home / RUN / "model.d3", marker)
    code = run_app([*FINETUNE, "--from", str(home / RUN), "--method", "discrete_sac", "--budget", "16", "--num-envs",
                    "4", "--eval-every", "16", "--eval-episodes", "1", "--set", "hidden_units=[16]", "--seeds", "0"])
    assert code == 0 and not marker.exists()


def test_finetune_from_a_truncated_model_is_one_line(home, capsys):
    path = home / RUN / "model.pt"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    capsys.readouterr()
    code = run_app([*FINETUNE, "--from", str(home / RUN), "--method", "discrete_sac", "--budget", "16"])
    line = _one_line(capsys)
    assert code == 1 and "SHA-256" in line


def test_train_resuming_from_a_crafted_checkpoint(home, tmp_path, capsys):
    marker = tmp_path / "marker"
    (home / RUN / "record.json").unlink()  # an unfinished run: train resumes from checkpoint.pt
    _plant(home / RUN / "checkpoint.pt", marker)
    capsys.readouterr()
    code = run_app([*TOY, "--seeds", "0", *TRAIN_FAST])
    line = _one_line(capsys)
    assert code == 1 and "checkpoint.pt" in line and not marker.exists(), line


def test_finetune_resuming_from_a_crafted_checkpoint(home, tmp_path, capsys):
    marker = tmp_path / "marker"
    args = [*FINETUNE, "--from", "discrete_bc/real", "--method", "discrete_sac", "--budget", "16", "--num-envs",
            "4", "--eval-every", "16", "--eval-episodes", "1", "--set", "hidden_units=[16]", "--seeds", "0"]
    assert run_app(args) == 0
    folder = next(home.joinpath("finetune").rglob("record.json")).parent
    (folder / "record.json").unlink()
    _plant(folder / "checkpoint.pt", marker)
    capsys.readouterr()
    code = run_app(args)
    line = _one_line(capsys)
    assert code == 1 and "checkpoint.pt" in line and not marker.exists(), line


def test_report_never_loads_model_files(home, tmp_path):
    marker = tmp_path / "marker"
    for name in ("model.pt", "model.d3"):
        _plant(home / RUN / name, marker)
    code = run_app(["report", "--env", "Toy-v0", "--profile", "tiny", "--quiet", "--no-pictures", "--out",
                    str(tmp_path / "report")])
    assert code == 0 and not marker.exists()
