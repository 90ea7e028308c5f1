"""Real-only runs of several levels (and the retrieval baseline) train one network per seed and
give the records of runs trained one by one."""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

from imaginebench import make
from imaginebench.run_folder import CHECKPOINT_NAME
from imaginebench.training import RunSpec, run_dir, train, train_seeds
from tests.training.test_runner import SMALL, Stop, toy_data  # noqa: F401  (toy_data: fixture)
from tests.training.test_stacked_runs import comparable

BASELINES = [("train", "imaginary"), ("easy", "real"), ("easy", "real-retrieval")]


def _specs(seeds=(0, 1)):
    return [RunSpec("Toy-v0", "bc", level=lv, seed=s, data=data, **SMALL) for s in seeds for lv, data in BASELINES]


@pytest.mark.parametrize("stack", [True, False])
def test_shared_training_gives_the_records_of_runs_trained_alone(toy_data, stack):
    specs = _specs()
    shared = train_seeds(specs, stack=stack, progress=False)
    assert [r.record["timing"].get("trained_with") for r in shared] == [None, "train/real", "train/real"] * 2
    assert [(r.record["level"], r.record["data"]) for r in shared] == [("train", "real"), ("easy", "real"),
                                                                        ("easy", "real-retrieval")] * 2
    for spec in specs:
        shutil.rmtree(run_dir(spec))
    alone = train_seeds(specs, stack=stack, share=False, progress=False)
    assert all("trained_with" not in r.record["timing"] for r in alone)
    for a, b in zip(shared, alone):
        assert comparable(a.record) == comparable(b.record)
        assert a.record["files"] == b.record["files"]  # the same weights, byte for byte
    # the baselines differ in what they evaluate: the train level, the novel level, with retrieval
    assert "easy" not in shared[0].record["score"] and "easy" in shared[1].record["score"]


def test_runs_with_other_data_or_settings_train_their_own(toy_data):
    specs = [RunSpec("Toy-v0", "bc", level="easy", data="real", **SMALL),
             RunSpec("Toy-v0", "bc", level="easy", data="real-upper-bound", **SMALL),
             RunSpec("Toy-v0", "bc", level="easy", data="real", **{**SMALL, "batch_size": 8}, tag="b8"),
             RunSpec("Toy-v0", "bc", level="easy", data="real", seed=1, **SMALL)]
    results = train_seeds(specs, stack=False, progress=False)
    assert all("trained_with" not in r.record["timing"] for r in results)


def test_an_interrupted_shared_training_resumes_every_run(toy_data):
    specs = _specs(seeds=(0,))

    def kill_at_20(step, entry):
        if step == 20:
            raise Stop

    with pytest.raises(Stop):
        train_seeds(specs, progress=False, on_checkpoint=kill_at_20)
    assert all((run_dir(s) / CHECKPOINT_NAME).exists() and not (run_dir(s) / "record.json").exists() for s in specs)
    resumed = train_seeds(specs, progress=False)
    assert [r.resumed_from for r in resumed] == [20, 20, 20]
    for spec in specs:
        shutil.rmtree(run_dir(spec))
    straight = train_seeds(specs, progress=False)
    for a, b in zip(resumed, straight):
        assert comparable(a.record) == comparable(b.record)


def test_the_runs_of_one_call_share_one_pool_of_evaluation_envs_per_level(toy_data):
    made: Counter = Counter()

    def counting(level):
        made[level] += 1
        return make("Toy-v0", level=level, encode_instruction=False)

    specs = _specs()
    one = train(specs[1], env_factory=counting, progress=False)  # evaluates train and easy
    alone = dict(made)
    assert set(alone) == {"train", "easy"}
    shutil.rmtree(run_dir(specs[1]))
    made.clear()
    together = train_seeds(specs, env_factory=counting, progress=False)
    # six runs (two seeds, three baselines, ten evaluators): no more envs than one run makes
    assert dict(made) == alone
    assert comparable(together[1].record) == comparable(one.record)
    # and the same numbers as runs that each made their own envs
    for spec in specs:
        shutil.rmtree(run_dir(spec))
    separate = [train(spec, env_factory=counting, progress=False) for spec in specs]
    assert [comparable(r.record)["curve"] for r in together] == [comparable(r.record)["curve"] for r in separate]
