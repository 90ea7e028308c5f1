"""``imaginebench.evaluate``, ``get_dataset`` and ``arrays()``: the path of a user with their own method."""

from __future__ import annotations

import numpy as np
import pytest

import imaginebench
from imaginebench.training import RunSpec, train
from imaginebench.evaluation.protocol import d3rlpy_policy
from imaginebench.evaluation.reference import reference_scores, wilson_interval
from tests.algos.helpers import HASH_ENCODER, HashEncoder, build_toy_data

OFFLINE = dict(profile="tiny", encoder=HASH_ENCODER, train_steps=40, checkpoint_every=20, eval_episodes_per_task=3,
               batch_size=16, algo_options=(("hidden_units", (16,)),))


@pytest.fixture
def finished(toy_envs, data_home):
    build_toy_data("Toy-v0", ("train",), episodes=20)
    return train(RunSpec("Toy-v0", "discrete_bc", level="train", seed=1, **OFFLINE), progress=False)


def _run_policy(result):
    from imaginebench.algos.weights import load_model

    algo = load_model(result.path / "model.pt", sha256=result.record["files"]["model.pt"])
    return d3rlpy_policy(algo)


def test_a_stored_runs_policy_scores_what_its_record_says(finished):
    policy = _run_policy(finished)
    out = imaginebench.evaluate(policy, "Toy-v0", "train", episodes_per_task=3, seed=1, encoder=HashEncoder())
    last = finished.record["curve"][-1]["train"]
    assert out.success == last["success"] and dict(out.per_task) == last["per_task"]
    assert out.episodes == last["episodes"] and out.mean_length == pytest.approx(last["mean_length"])
    # the references are the record's (the report's) for that schedule
    ref = finished.record["reference"]["train"]
    assert (out.random, out.expert) == (ref["random"], ref["expert"])
    assert len(out.schedule) == out.episodes and out.schedule[0][1] == out.schedule[0][1]


def test_num_envs_does_not_change_the_result(finished):
    policy = _run_policy(finished)
    one = imaginebench.evaluate(policy, "Toy-v0", "train", episodes_per_task=4, seed=2, encoder=HashEncoder(),
                                references=False)
    eight = imaginebench.evaluate(policy, "Toy-v0", "train", episodes_per_task=4, seed=2, encoder=HashEncoder(),
                                  num_envs=8, references=False)
    assert one.to_dict() == eight.to_dict()


def test_a_random_policy_lands_on_the_chance_row():
    rng = np.random.default_rng(0)

    def random_policy(observations):
        return rng.integers(0, 40, len(observations))

    out = imaginebench.evaluate(random_policy, "CLEVR-v0", "easy", episodes_per_task=10, seed=0, num_envs=8,
                                encoder=HASH_ENCODER)
    refs = reference_scores("CLEVR-v0", "easy", 10, 0)
    assert out.random == refs["random"]["success"] and out.expert == refs["expert"]["success"]
    low, high = wilson_interval(round(out.random * out.episodes), out.episodes)
    assert low <= out.success <= high, (out.success, out.random)
    assert out.expert > 0.9 and out.normalised is not None


def test_raw_policies_get_states_and_instruction_strings():
    seen = {}

    def raw_policy(states, instructions):
        seen["shape"], seen["text"] = states.shape, instructions[0]
        return np.zeros(len(states), dtype=np.int64)

    out = imaginebench.evaluate(raw_policy, "CLEVR-v0", "easy", episodes_per_task=1, raw=True, references=False)
    assert seen["shape"][1] == 10 and isinstance(seen["text"], str) and out.encoder == "raw"


def _raises(policy, needle):
    with pytest.raises(ValueError) as info:
        imaginebench.evaluate(policy, "CLEVR-v0", "easy", episodes_per_task=1, encoder=HASH_ENCODER,
                              references=False, num_envs=4)
    message = str(info.value)
    assert "\n" not in message and needle in message, message


def test_bad_policies_get_one_line_errors():
    _raises(lambda obs: np.zeros(len(obs) + 1, dtype=np.int64), "shape (4,)")
    _raises(lambda obs: np.zeros((len(obs), 3)), "integer array of shape (4,)")
    _raises(lambda obs: np.full(len(obs), np.nan), "non-integer or NaN")
    _raises(lambda obs: np.full(len(obs), 99), "values in 0..39")
    _raises(lambda obs: None, "got None")
    _raises(lambda obs: ["left"] * len(obs), "integer array")

    def broken(obs):
        raise RuntimeError("out of ideas\nsecond line")

    _raises(broken, "The policy raised RuntimeError: out of ideas")
    with pytest.raises(ValueError) as info:  # the user's own error is kept as the cause (their traceback)
        imaginebench.evaluate(broken, "CLEVR-v0", "easy", episodes_per_task=1, encoder=HASH_ENCODER,
                              references=False, num_envs=4)
    assert isinstance(info.value.__cause__, RuntimeError) and info.value.__cause__.__traceback__ is not None
    _raises(lambda obs: [[0], [1, 2]] * (len(obs) // 2), "numpy cannot read as one")


def test_a_policy_may_return_torch_tensors_with_gradients_attached():
    import torch

    weight = torch.zeros(1, requires_grad=True)

    def policy(obs):  # float action ids 0.0 that still carry the graph
        return torch.zeros(len(obs)) * weight

    out = imaginebench.evaluate(policy, "CLEVR-v0", "easy", episodes_per_task=1, encoder=HASH_ENCODER,
                                references=False, num_envs=4)
    assert out.episodes > 0
    with pytest.raises(ValueError, match="policy must be a callable"):
        imaginebench.evaluate("bc", "CLEVR-v0", "easy")
    with pytest.raises(ValueError, match="episodes_per_task must be at most 10000, got 1000000000"):
        imaginebench.evaluate(lambda obs: [0] * len(obs), "CLEVR-v0", "easy", episodes_per_task=10**9)


def test_bad_continuous_actions_are_named():
    pytest.importorskip("mujoco")
    with pytest.raises(ValueError, match=r"float array of shape \(2, 6\) of finite values"):
        imaginebench.evaluate(lambda obs: np.full((len(obs), 6), np.nan), "HalfCheetah-v0", "easy",
                              episodes_per_task=1, num_envs=2, encoder=HASH_ENCODER, references=False)


def test_arrays_round_trip_against_transitions(toy_envs, data_home):
    build_toy_data("Toy-v0", ("train",), episodes=6)
    real, imaginary = imaginebench.get_dataset("Toy-v0", "train", profile="tiny")
    assert imaginary is None
    flat = real.arrays(encoder=HashEncoder())
    t = real.transitions()
    n, dim = len(t), real.state_dim
    assert {k: len(v) for k, v in flat.items()} == dict.fromkeys(flat, n)
    assert flat["observations"].dtype == np.float32 and flat["rewards"].dtype == np.float32
    np.testing.assert_array_equal(flat["observations"][:, :dim], t.observations.astype(np.float32))
    np.testing.assert_array_equal(flat["next_observations"][:, :dim], t.next_observations.astype(np.float32))
    np.testing.assert_array_equal(flat["actions"], t.actions)
    np.testing.assert_array_equal(flat["terminals"], t.terminals)
    np.testing.assert_array_equal(flat["timeouts"], t.truncations)
    texts = [real.episode_instructions()[e] for e in t.episode_ids]
    assert list(flat["instructions"]) == texts and set(flat["source"]) == {"real"}
    emb = HashEncoder().encode(texts)
    np.testing.assert_allclose(flat["observations"][:, dim:], emb, rtol=0, atol=0)
    raw = real.arrays(raw=True)
    assert raw["observations"].shape == (n, dim)


def test_get_dataset_builds_missing_real_data_when_asked(toy_envs, data_home, monkeypatch):
    from imaginebench.config import PROFILES

    monkeypatch.setitem(PROFILES["tiny"].real_episodes, "Toy-v0", 8)
    with pytest.raises(FileNotFoundError, match=r"imaginebench data collect --env Toy-v0 --level train .* or from "
                                                r"Python with get_dataset\(\.\.\., build=True, workers=2\)"):
        imaginebench.get_dataset("Toy-v0", "easy", profile="tiny")
    real, _ = imaginebench.get_dataset("Toy-v0", "easy", profile="tiny", build=True, progress=False, workers=2)
    assert len(real) == 8


def test_published_rows_are_measured_rows_with_their_command_and_show_in_the_report():
    from imaginebench.report.sections import published_section

    rows = imaginebench.reference_results(profile="small")
    assert rows, "the package ships published rows"
    for row in rows:
        assert row["n"] == len(row["seeds"]) >= 1 and 0.0 <= row["mean"] <= 1.0
        assert (row["std"] is None) == (row["n"] == 1)
        assert row["command"].startswith(f"imaginebench train --env {row['env']} --algo ")
        assert row["version"] and row["commit"] and row["machine"]
    env = rows[0]["env"]
    text = "\n".join(published_section([(env, "small")]))
    assert "Published rows" in text and "not your runs" in text and rows[0]["algorithm"] in text
    assert "Not comparable" not in text  # no runs of ours beside them

    from imaginebench.report.aggregate import Cell

    short = Cell(env, "small", rows[0]["level"], "real", rows[0]["algorithm"], "BC", scores=[0.5], seeds=[0],
                 steps=2000, step_counts={2000}, reference={(0, 1): (0.1, 1.0)})
    text = "\n".join(published_section([(env, "small")], [short]))
    steps = "/".join(f"{v:,}" for v in sorted({r["steps"] for r in rows if r["env"] == env}))
    assert (f"**Not comparable with the runs above**: they used 2,000 gradient steps (published: {steps}), "
            "1 evaluation episode per task (published: 2), 1 seed (published: 3)") in text
    published_steps = int(rows[0]["steps"])
    same = Cell(env, "small", rows[0]["level"], "real", rows[0]["algorithm"], "BC", scores=[0.5, 0.4, 0.3],
                seeds=[0, 1, 2], steps=published_steps, step_counts={published_steps},
                reference={(s, 2): (0.1, 1.0) for s in range(3)})
    assert "Not comparable" not in "\n".join(published_section([(env, "small")], [same]))
    assert imaginebench.reference_results(env, "tiny") == []  # nothing measured there: nothing shipped
