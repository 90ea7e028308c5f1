"""``imaginebench bench`` through Typer's CliRunner: options -> grid, summary, one-line errors.

The grid itself runs in :mod:`tests.sweep.test_ray_grid`; here ``run_grid`` is replaced so no
Ray instance starts.
"""

from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from imaginebench.cli import app
from tests.cli_helpers import error_line
from imaginebench.sweep import GridSummary
from imaginebench.cli import bench as cli_bench

pytestmark = pytest.mark.xdist_group("ray")  # one local Ray instance at a time under pytest-xdist

runner = CliRunner()
BASE = ["bench", "--envs", "Toy-v0", "--algos", "bc", "--profile", "tiny", "--no-progress"]


@pytest.fixture
def calls(monkeypatch):
    seen = []

    def fake_run_grid(grid, store, **kwargs):
        seen.append((grid, store.path, kwargs))
        return GridSummary(total=4, done=3, failed=int(kwargs["retries"] == 0), skipped=1, resumed=1, wall_time_s=2.5,
                           store_path=store.path, failures=[("Toy-v0 discrete_bc easy/real seed 1", "ValueError: x")]
                           if kwargs["retries"] == 0 else [], excluded=[("Toy-v0 discrete_bc train/real-upper-bound",
                                                                         "the Real upper bound needs a novel level")])

    # where the bench verb looks them up (imported at the top of imaginebench.cli.bench)
    monkeypatch.setattr(cli_bench, "import_ray", lambda: None)
    monkeypatch.setattr(cli_bench, "run_grid", fake_run_grid)
    return seen


def test_options_make_the_grid_and_the_summary_is_printed(toy_envs, data_home, calls, tmp_path):
    result = runner.invoke(app, [*BASE, "--levels", "train,easy", "--seeds", "0", "1", "--cpus", "2",
                                 "--cpus-per-run", "1", "--steps", "40", "--checkpoint-every", "10",
                                 "--eval-episodes", "1", "--lease", "30"])
    assert result.exit_code == 0, result.output
    grid, store_path, kwargs = calls[0]
    assert grid.envs == ("Toy-v0",) and grid.levels == ("train", "easy") and grid.seeds == (0, 1)
    assert grid.data == ("real", "imaginary", "real-upper-bound") and grid.profile == "tiny"
    assert (grid.train_steps, grid.checkpoint_every, grid.eval_episodes_per_task) == (40, 10, 1)
    assert kwargs == {"address": None, "num_cpus": 2, "cpus_per_run": 1.0, "gpus_per_run": 0.0, "retries": 1,
                      "progress": False, "lease_s": 30.0}
    assert store_path == data_home / "results/results.sqlite"
    assert "grid of 4 runs: 3 done now (1 resumed), 1 done before (skipped), 0 failed" in result.output
    assert f"results store: {store_path}" in result.output
    assert "left out: Toy-v0 discrete_bc train/real-upper-bound" in result.output

    failed = runner.invoke(app, [*BASE, "--seeds", "0,2", "--data", "real", "--retries", "0",
                                 "--store", str(tmp_path / "mine.sqlite")])
    assert failed.exit_code == 1
    assert "failed: Toy-v0 discrete_bc easy/real seed 1: ValueError: x" in failed.output
    assert calls[1][0].seeds == (0, 2) and calls[1][1] == tmp_path / "mine.sqlite"


@pytest.mark.parametrize("args, message", [
    (["--envs", "CLEVR-v1"], "Unknown environment id 'CLEVR-v1'. Did you mean 'CLEVR-v0'?"),
    (["--algos", "ppo"], "Unknown algorithm 'ppo'"),
    (["--levels", "train,medium"], "Unknown level 'medium'"),
    (["--data", "real,fake"], "Unknown training data setting 'fake'"),
    (["--seeds", "0", "x"], "Seeds must be integers"),
    (["--lease", "0"], "--lease must be > 0, got 0"),
])
def test_bad_names_give_one_line(toy_envs, calls, args, message):
    result = runner.invoke(app, [*BASE, *args])
    assert result.exit_code == 2 and message in error_line(result) and not calls


def test_a_damaged_store_gives_one_line_and_stays(toy_envs, calls, tmp_path):
    store = tmp_path / "results.sqlite"
    store.write_bytes(b"not a database, but somebody's notes\n" * 100)
    result = runner.invoke(app, [*BASE, "--store", str(store)])
    assert result.exit_code == 1 and str(store) in error_line(result) and not calls
    assert store.read_bytes() == b"not a database, but somebody's notes\n" * 100


def test_without_ray_the_error_names_the_extra(toy_envs, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    result = runner.invoke(app, BASE)
    assert result.exit_code == 1 and "pip install 'imaginebench[ray]'" in error_line(result)


def test_the_estimate_is_printed_before_the_grid_and_measured_once(toy_envs, data_home, calls, monkeypatch):
    from imaginebench.sweep import cost

    measured = []
    real_update, real_eval = cost.measure_update_rate, cost.measure_evaluation
    monkeypatch.setattr(cost, "measure_update_rate", lambda *a, **k: measured.append("update") or real_update(*a, **k))
    monkeypatch.setattr(cost, "measure_evaluation", lambda *a, **k: measured.append("eval") or real_eval(*a, **k))
    args = [*BASE, "--levels", "train,easy", "--data", "real", "--seeds", "0", "1", "--steps", "40",
            "--checkpoint-every", "10", "--eval-episodes", "1", "--cpus", "2"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "estimated cost: 4 runs, ~" in first.output and " wall on 2 CPUs" in first.output
    assert measured.count("update") == 1 and measured.count("eval") == 2  # one algorithm; levels train, easy
    assert runner.invoke(app, args).exit_code == 0
    assert len(measured) == 3  # the second grid reads the machine's cached rates
    assert list((data_home / "cost").glob("*.json"))
    assert "estimated cost" not in runner.invoke(app, [*args, "--no-estimate"]).output


def test_a_grids_estimate_adds_up_its_runs(toy_envs, data_home):
    from imaginebench.sweep.cost import estimate
    from tests.sweep.helpers import toy_grid

    specs = toy_grid(seeds=(0, 1, 2), levels=("easy",), data=("real",)).expand()
    whole = estimate(specs)
    one = estimate(specs[:1])
    assert whole.runs == 3 and one.runs == 1
    assert whole.train_s == pytest.approx(3 * one.train_s) and whole.eval_s == pytest.approx(3 * one.eval_s)
    assert one.train_s > 0 and one.eval_s > 0


def test_combos_dynamics_fit_is_priced_once_per_dataset(toy_envs, data_home):
    from imaginebench.sweep.cost import estimate
    from imaginebench.training import RunSpec
    from tests.algos.helpers import HASH_ENCODER, build_toy_data

    options = (("hidden_units", (16,)), ("dynamics_hidden_units", (16, 16)),
               ("dynamics_weight_decay", (1e-5, 1e-5, 1e-5)), ("ensemble_size", 3), ("n_elites", 2))
    specs = [RunSpec("ToyCont-v0", "combo", seed=s, profile="tiny", encoder=HASH_ENCODER, train_steps=40,
                     checkpoint_every=10, batch_size=16, data="real",
                     algo_options=(*options, ("dynamics_max_epochs", epochs)))
             for s in (0, 1, 2) for epochs in (4,)]
    missing = estimate(specs)
    assert "0 of 1 priced (the rest: data not built yet)" in missing.describe()

    build_toy_data("ToyCont-v0", ("train",), episodes=30)
    three, one = estimate(specs), estimate(specs[:1])
    assert "1 of 1 priced" in three.describe()
    fit = one.train_s - missing.train_s / 3  # one run's training plus the one fit
    assert fit > 0
    assert three.train_s == pytest.approx(missing.train_s + fit)  # the seeds share the fit
    uncapped = [RunSpec("ToyCont-v0", "combo", seed=0, profile="tiny", encoder=HASH_ENCODER, train_steps=40,
                        checkpoint_every=10, batch_size=16, data="real",
                        algo_options=(*options, ("dynamics_max_epochs", None)))]
    assert "(the rest: no epoch cap)" in estimate(uncapped).describe()
