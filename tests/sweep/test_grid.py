"""Grid expansion: which runs a grid has, their ids, and one-line errors for bad names."""

from __future__ import annotations

import pytest

from imaginebench.sweep import GridSpec
from imaginebench.sweep.ray_runner import finished_scores
from tests.sweep.helpers import FAST, toy_grid


def _labels(grid: GridSpec) -> list[str]:
    return [run.label for run in grid.plan().runs]


def test_expansion_leaves_out_senseless_combinations(toy_envs):
    grid = toy_grid(seeds=(0, 1), levels=("train", "easy"), data=("real", "imaginary", "real-upper-bound"))
    plan = grid.plan()
    assert [r.label for r in plan.runs] == [
        "Toy-v0 discrete_bc train/real seed 0", "Toy-v0 discrete_bc train/real seed 1",
        "Toy-v0 discrete_bc easy/real seed 0", "Toy-v0 discrete_bc easy/real seed 1",
        "Toy-v0 discrete_bc easy/imaginary seed 0", "Toy-v0 discrete_bc easy/imaginary seed 1",
        "Toy-v0 discrete_bc easy/real-upper-bound seed 0", "Toy-v0 discrete_bc easy/real-upper-bound seed 1",
    ]  # train/imaginary is train/real; train/real-upper-bound makes no sense
    assert plan.excluded == (("Toy-v0 discrete_bc train/real-upper-bound", "the Real upper bound needs a novel level"),)
    assert [s.data_tag for s in grid.expand()][:2] == ["real", "real"]
    unfiltered = toy_grid(levels=("train", "hard"), data=("imaginary-unfiltered",)).plan()
    assert [r.label for r in unfiltered.runs] == ["Toy-v0 discrete_bc hard/imaginary-unfiltered seed 0",
                                                  "Toy-v0 discrete_bc hard/imaginary-unfiltered seed 1"]
    assert "no imaginary rollouts" in unfiltered.excluded[0][1]


def test_algorithms_that_do_not_fit_an_env_are_left_out_there(toy_envs):
    grid = GridSpec(envs="Toy-v0,ImagineBench/ToyCont-v0", algos="bc,td3bc,discrete_bc", levels=("train",),
                    data=("real",), seeds=(0,), **{k: v for k, v in FAST.items()})
    assert grid.envs == ("Toy-v0", "ToyCont-v0")
    assert _labels(grid) == ["Toy-v0 discrete_bc train/real seed 0",  # bc and discrete_bc: one run
                             "ToyCont-v0 bc train/real seed 0", "ToyCont-v0 td3bc train/real seed 0"]
    excluded = dict(grid.plan().excluded)
    assert set(excluded) == {"Toy-v0 td3bc", "ToyCont-v0 discrete_bc"}
    assert "needs continuous" in excluded["Toy-v0 td3bc"]
    with pytest.raises(ValueError, match="No environment of the grid fits 'td3bc'"):
        GridSpec(envs=("Toy-v0",), algos=("td3bc",), levels=("train",), profile="tiny").plan()
    with pytest.raises(ValueError, match="no runs left"):
        GridSpec(envs=("Toy-v0",), algos=("bc",), levels=("train",), data=("real-upper-bound",), profile="tiny").plan()


def test_run_ids_are_stable_and_follow_the_settings(toy_envs, monkeypatch):
    ids = [r.run_id for r in toy_grid().plan().runs]
    assert ids == [r.run_id for r in toy_grid().plan().runs] and len(set(ids)) == len(ids)
    assert all(len(i) == 16 and int(i, 16) >= 0 for i in ids)
    assert not set(ids) & {r.run_id for r in toy_grid(train_steps=41).plan().runs}
    assert not set(ids) & {r.run_id for r in toy_grid(algo_options=(("hidden_units", (32,)),)).plan().runs}
    run = toy_grid().plan().runs[0]
    assert run.config["settings"]["steps"] == 40 and run.config["profile"] == "tiny"
    assert run.config["spec"]["env_id"] == "Toy-v0" and run.config["spec"]["algo_options"] == [["hidden_units", [16]]]
    monkeypatch.setenv("IMAGINEBENCH_PROFILE", "tiny")  # a profile left out is resolved once, here
    assert GridSpec(envs=("Toy-v0",), algos=("bc",)).profile == "tiny"


def test_a_grid_without_curves_keeps_its_run_ids_and_evaluates_five_checkpoints(toy_envs):
    """``curve=False`` changes no result (the same run ids and folders), only which checkpoints
    are evaluated: the five the score averages, and the cost estimate counts those."""
    full, scored = toy_grid(train_steps=80).plan().runs, toy_grid(train_steps=80, curve=False).plan().runs
    assert [r.run_id for r in full] == [r.run_id for r in scored]
    spec = scored[0].spec
    assert not spec.curve and full[0].spec.curve and scored[0].config["spec"]["curve"] is False
    assert spec.checkpoint_steps() == [10, 20, 30, 40, 50, 60, 70, 80]
    assert [s for s in spec.checkpoint_steps() if spec.evaluates_at(s)] == [40, 50, 60, 70, 80]
    assert (spec.evaluated_checkpoints, full[0].spec.evaluated_checkpoints) == (5, 8)
    odd = toy_grid(train_steps=75, curve=False).plan().runs[0].spec  # the last checkpoint comes early
    assert [s for s in odd.checkpoint_steps() if odd.evaluates_at(s)] == [40, 50, 60, 70, 75]


@pytest.mark.parametrize("kwargs, message", [
    ({"envs": ("CLEVR-v1",)}, "Unknown environment id 'CLEVR-v1'. Did you mean 'CLEVR-v0'?"),
    ({"algos": ("ppo",)}, "Unknown algorithm 'ppo'. Valid choices: bc"),
    ({"levels": ("medium",)}, "Unknown level 'medium'. Valid choices: train, rephrase, easy, hard"),
    ({"data": ("imaginery",)}, "Unknown training data setting 'imaginery'. Did you mean 'imaginary'?"),
    ({"seeds": ("0", "x")}, "Seeds must be integers"),
    ({"envs": ""}, "needs at least one environment"),
    ({"algos": ()}, "needs at least one algorithm"),
    ({"profile": "huge"}, "Unknown profile 'huge'"),
    ({"train_steps": 0}, "train_steps must be positive"),
])
def test_validation_errors_are_one_line(toy_envs, kwargs, message):
    args = {"envs": ("Toy-v0",), "algos": ("bc",), "profile": "tiny", **kwargs}
    with pytest.raises(ValueError) as info:
        GridSpec(**args)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_finished_runs_line_names_the_target_level_first_then_train_and_the_wall_time():
    record = {"score": {"train": 0.798, "rephrase": 0.858}, "timing": {"wall_time_s": 311.6}}
    assert finished_scores(record) == "rephrase 85.8%, train 79.8%, 312 s"
    assert finished_scores({"score": {"train": 0.5}}) == "train 50.0%"  # a record without timing
