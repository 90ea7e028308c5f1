"""``imaginebench train`` through Typer's CliRunner: exit codes and one-line errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from imaginebench.cli import app
from tests.cli_helpers import error_line
from tests.algos.helpers import HASH_ENCODER, build_toy_data

FAST = ["--profile", "tiny", "--encoder", HASH_ENCODER, "--steps", "20", "--checkpoint-every", "10",
        "--eval-episodes", "1", "--batch-size", "16", "--set", "hidden_units=[16]", "--no-progress"]


@pytest.fixture
def runner():
    return CliRunner()


def test_train_runs_each_seed_and_skips_finished_ones(runner, toy_envs, data_home):
    build_toy_data("Toy-v0", ("train",), episodes=20)
    result = runner.invoke(app, ["train", "--env", "Toy-v0", "--algo", "discrete_bc", "--seeds", "0", "1", *FAST])
    assert result.exit_code == 0, result.output
    assert "seed 0" in result.output and "seed 1" in result.output and "trained" in result.output
    records = sorted((data_home / "runs/Toy-v0/tiny/train/real/discrete_bc").glob("seed*/record.json"))
    assert [p.parent.name for p in records] == ["seed0", "seed1"]
    first = json.loads(records[0].read_text())
    assert first["config"]["algorithm"]["hidden_units"] == [16]
    assert first["timing"]["engine"] == "stacked" and first["timing"]["stacked_seeds"] == 2  # together by default
    again = runner.invoke(app, ["train", "--env", "Toy-v0", "--algo", "discrete_bc", "--seeds", "1", *FAST])
    assert again.exit_code == 0 and "skipped" in again.output


def test_unknown_algorithm_lists_the_choices(runner, toy_envs):
    result = runner.invoke(app, ["train", "--env", "Toy-v0", "--algo", "ppo", *FAST])
    assert result.exit_code == 2
    line = error_line(result)
    from imaginebench.algos import algorithm_names

    assert "Unknown algorithm 'ppo'" in line and ", ".join(algorithm_names()) in line


def test_algorithm_that_does_not_fit_the_action_space(runner, toy_envs):
    result = runner.invoke(app, ["train", "--env", "Toy-v0", "--algo", "td3bc", *FAST])
    assert result.exit_code == 2
    line = error_line(result)
    assert "'td3bc' needs continuous actions" in line and "Discrete(2)" in line
    assert "Algorithms that fit: discrete_bc, discrete_cql, discrete_bcq, discrete_sac" in line


def test_missing_dataset_names_the_command(runner, toy_envs):
    result = runner.invoke(app, ["train", "--env", "Toy-v0", "--algo", "bc", "--level", "easy",
                                 "--real-upper-bound", *FAST])
    assert result.exit_code == 1
    assert "imaginebench data collect --env Toy-v0 --level train --profile tiny" in error_line(result)


def test_bad_seed_and_conflicting_flags(runner, toy_envs):
    result = runner.invoke(app, ["train", "--env", "Toy-v0", "--algo", "bc", "--seeds", "0", "x", *FAST])
    assert result.exit_code == 2 and "Seeds must be integers" in error_line(result)
    result = runner.invoke(app, ["train", "--env", "Toy-v0", "--algo", "bc", "--level", "easy", "--real-only",
                                 "--real-upper-bound", *FAST])
    assert result.exit_code == 2 and "Choose one of" in error_line(result)


def test_no_stack_trains_seeds_one_by_one_and_a_bad_device_is_one_line(runner, toy_envs, data_home):
    build_toy_data("Toy-v0", ("train",), episodes=20)
    result = runner.invoke(app, ["train", "--env", "Toy-v0", "--algo", "discrete_bc", "--seeds", "0", "1",
                                 "--no-stack", *FAST])
    assert result.exit_code == 0, result.output
    record = json.loads((data_home / "runs/Toy-v0/tiny/train/real/discrete_bc/seed1/record.json").read_text())
    assert record["timing"]["engine"] == "d3rlpy" and record["timing"]["stacked_seeds"] == 1
    bad = runner.invoke(app, ["train", "--env", "Toy-v0", "--algo", "discrete_bc", "--device", "tpu", *FAST])
    assert bad.exit_code != 0 and "use cpu or cuda" in error_line(bad)


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_without_a_gpu_is_one_line(runner, toy_envs, data_home):
    build_toy_data("Toy-v0", ("train",), episodes=20)
    result = runner.invoke(app, ["train", "--env", "Toy-v0", "--algo", "discrete_bc", "--device", "cuda", *FAST])
    assert result.exit_code != 0 and "no CUDA device here; use --device cpu" in error_line(result)
    assert not (data_home / "runs/Toy-v0/tiny/train/real/discrete_bc/seed0").exists()


def test_baselines_train_once_per_seed_and_write_every_real_data_cell(runner, toy_envs, data_home):
    build_toy_data("Toy-v0", ("train",), episodes=20)
    result = runner.invoke(app, ["train", "--env", "Toy-v0", "--algo", "bc", "--seeds", "0", "--baselines", *FAST])
    assert result.exit_code == 0, result.output
    cells = sorted(str(p.parent.parent.parent.relative_to(data_home / "runs/Toy-v0/tiny"))
                   for p in data_home.glob("runs/Toy-v0/tiny/*/*/discrete_bc/seed0/record.json"))
    assert cells == ["easy/real", "easy/real-retrieval", "hard/real", "hard/real-retrieval", "rephrase/real",
                     "rephrase/real-retrieval", "train/real"]
    timings = {c: json.loads((data_home / "runs/Toy-v0/tiny" / c / "discrete_bc/seed0/record.json").read_text())
               ["timing"] for c in cells}
    assert "trained_with" not in timings["train/real"]
    assert all(timings[c]["trained_with"] == "train/real" for c in cells if c != "train/real")
    assert result.output.count("seed 0") == 7


def test_baselines_refuse_a_level_or_another_data_variant(runner, toy_envs):
    for extra in (["--level", "easy"], ["--real-upper-bound"], ["--imaginary", "unfiltered"]):
        result = runner.invoke(app, ["train", "--env", "Toy-v0", "--algo", "bc", "--baselines", *extra, *FAST])
        assert result.exit_code == 2, extra
        assert "--baselines trains on real data and covers every level itself" in error_line(result)


def test_the_help_names_exactly_the_algorithms_without_a_stacked_trainer():
    from imaginebench.algos import algorithm_names
    from imaginebench.algos.vectorised import stacked_trainers
    from imaginebench.cli.train import UNSTACKED

    d3rlpy_names = {"BC": "bc", "DiscreteBC": "discrete_bc", "BCQ": "bcq", "DiscreteBCQ": "discrete_bcq", "CQL": "cql",
                    "DiscreteCQL": "discrete_cql", "SAC": "sac", "DiscreteSAC": "discrete_sac", "CalQL": "calql",
                    "IQL": "iql", "TD3PlusBC": "td3bc", "IndexedPRDC": "prdc", "ReBRAC": "rebrac", "COMBO": "combo"}
    stacked = {d3rlpy_names[name] for name in stacked_trainers()}
    assert set(UNSTACKED) == set(algorithm_names()) - stacked
