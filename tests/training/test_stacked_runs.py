"""Seeds trained together (stacked) give the records of seeds trained alone; stacked runs resume."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest

from imaginebench.evaluation import stable_view
from imaginebench.training import RunSpec, run_dir
from imaginebench.run_folder import CHECKPOINT_NAME
from imaginebench.training import train_seeds
from tests.training.test_runner import SMALL, Stop, toy_data  # noqa: F401  (toy_data: fixture)


def comparable(record: dict) -> dict:
    """The record without timing, engine and float noise in losses (kept to 4 significant digits)."""
    view = stable_view(record)
    for entry in view["curve"]:
        entry["loss"] = {k: float(f"{v:.4g}") for k, v in entry["loss"].items()}
    return view


@pytest.mark.parametrize("env_id,algo,level", [("Toy-v0", "discrete_cql", "easy"), ("ToyCont-v0", "td3bc", "train"),
                                               ("ToyCont-v0", "cql", "train")])
def test_stacked_seeds_give_the_records_of_seeds_trained_alone(toy_data, env_id, algo, level):
    specs = [RunSpec(env_id, algo, level=level, seed=s, **SMALL) for s in (0, 1, 2)]
    together = train_seeds(specs, progress=False)
    assert all(r.record["timing"]["engine"] == "stacked" and r.record["timing"]["stacked_seeds"] == 3
               for r in together)
    for spec in specs:
        shutil.rmtree(run_dir(spec))
    alone = train_seeds(specs, stack=False, progress=False)
    assert all(r.record["timing"]["engine"] == "d3rlpy" for r in alone)
    for a, b in zip(together, alone):
        assert comparable(a.record) == comparable(b.record)
    assert together[0].record["curve"][-1]["loss"] != together[1].record["curve"][-1]["loss"]


def test_a_killed_stacked_run_resumes_to_the_uninterrupted_records(toy_data):
    specs = [RunSpec("Toy-v0", "discrete_bc", level="easy", seed=s, **SMALL) for s in (0, 1, 2)]

    def kill(step, entry):
        if step == 20:
            raise Stop

    with pytest.raises(Stop):
        train_seeds(specs, progress=False, on_checkpoint=kill)
    assert (run_dir(specs[0]) / CHECKPOINT_NAME).exists()
    seen = []
    resumed = train_seeds(specs, progress=False, on_checkpoint=lambda step, entry: seen.append(step))
    assert [r.resumed_from for r in resumed] == [20, 10, 10]  # killed inside the step-20 checkpoints
    for spec in specs:
        shutil.rmtree(run_dir(spec))
    straight = train_seeds(specs, progress=False)
    for a, b in zip(resumed, straight):
        assert comparable(a.record) == comparable(b.record)
    again = train_seeds(specs, progress=False, on_checkpoint=lambda *a: pytest.fail("trained a finished run"))
    assert all(r.skipped for r in again)


def test_seeds_at_different_steps_train_in_groups(toy_data):
    specs = [RunSpec("Toy-v0", "discrete_bc", level="easy", seed=s, **SMALL) for s in (0, 1, 2)]
    # seed 0 alone to step 20, then all three: seed 0 resumes alone, seeds 1 and 2 train stacked
    with pytest.raises(Stop):
        train_seeds(specs[:1], progress=False, on_checkpoint=lambda step, e: (_ for _ in ()).throw(Stop)
                    if step == 20 else None)
    results = train_seeds(specs, progress=False)
    assert [r.resumed_from for r in results] == [20, 0, 0]
    assert [r.record["timing"]["stacked_seeds"] for r in results] == [1, 2, 2]


@pytest.mark.parametrize("stack", [True, False])
def test_evaluating_only_the_scored_checkpoints_gives_the_same_score(toy_data, stack):
    """``curve=False`` evaluates the last five checkpoints only: the score, per-task success and
    those checkpoints' evaluations equal a full-curve run's (evaluation episodes are fixed per seed),
    including the followers of a shared training (real only and retrieval)."""
    cells = [("easy", "real"), ("easy", "real-retrieval")]
    full = [RunSpec("Toy-v0", "discrete_bc", level=lv, data=d, seed=s, **{**SMALL, "train_steps": 80})
            for s in (0, 1) for lv, d in cells]
    curves = train_seeds(full, stack=stack, progress=False)
    for spec in full:
        shutil.rmtree(run_dir(spec))
    scored = [replace(spec, curve=False) for spec in full]
    steps = []
    short = train_seeds(scored, stack=stack, progress=False, on_checkpoint=lambda step, entry: steps.append(step))
    assert sorted(set(steps)) == full[0].checkpoint_steps() and len(full[0].checkpoint_steps()) == 8
    for a, b in zip(curves, short):
        assert a.record["score"] == b.record["score"] and a.record["per_task"] == b.record["per_task"]
        assert [c["step"] for c in b.record["curve"]] == full[0].checkpoint_steps()[-5:]
        assert comparable(a.record)["curve"][-5:] == comparable(b.record)["curve"]
        assert (a.record["eval"]["checkpoints"], b.record["eval"]["checkpoints"]) == ("every", "scored")
