"""The binned action head of continuous domains: each action dimension a categorical over values
in [-1, 1], sampled in generation, where a regression head averages what it is unsure between."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from imaginebench.domains.base import Task
from imaginebench.imagination import checkpoint as ckpt
from imaginebench.imagination.backbones import load_backbone
from imaginebench.imagination.decoding import GenerateConfig, Start, imagine_batch
from imaginebench.imagination.formats import SequenceBuilder, collate
from imaginebench.imagination.model import ModelConfig, Normaliser, RolloutLM

from .test_model import _PointDomain

STATE_DIM, ACTION_DIM, BINS = 3, 2, 11


def point_model(bins: int | None, seed: int = 0) -> RolloutLM:
    torch.manual_seed(seed)
    norm = Normaliser.fit(np.random.default_rng(seed).normal(size=(20, STATE_DIM)))
    return RolloutLM(load_backbone("tiny"), ModelConfig(backbone="tiny", lora=False, action_bins=bins),
                     STATE_DIM, False, ACTION_DIM, norm)


def bang_bang_batch(seed: int, n: int = 8):
    """Rollouts whose every action dimension is -1 or +1 at random: the conditional mean is 0,
    an action the data never shows."""
    rng = np.random.default_rng(seed)
    b = SequenceBuilder(load_backbone("tiny").tokenizer, STATE_DIM, False, ACTION_DIM)
    seqs = [b.rollout("go right", rng.normal(size=(6, STATE_DIM)).astype(np.float32),
                      rng.choice([-1.0, 1.0], size=(5, ACTION_DIM)).astype(np.float32)) for _ in range(n)]
    return collate(seqs)


def starts(n: int) -> list[Start]:
    task = Task("right", "reach", "train", instructions=("go right",))
    rng = np.random.default_rng(1)
    return [Start(task, "go right", rng.normal(size=STATE_DIM).astype(np.float32) * 0.1) for _ in range(n)]


def test_bins_cover_minus_one_to_one_and_take_the_nearest_value():
    model = point_model(BINS)
    values = model.action_values
    assert values.shape == (BINS,) and float(values[0]) == -1.0 and float(values[-1]) == 1.0
    assert float(values[BINS // 2]) == 0.0
    index = model.action_bin_index(torch.tensor([-1.0, -0.91, -0.89, 0.0, 0.09, 1.0, 7.0, -3.0]))
    assert index.tolist() == [0, 0, 1, 5, 5, 10, 10, 0]
    assert model.predict_actions(torch.zeros(4, model.hidden_size)).shape == (4, ACTION_DIM, BINS)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="action_bins must be >= 2"):
        ModelConfig(action_bins=1)
    norm = Normaliser.fit(np.random.default_rng(0).normal(size=(20, STATE_DIM)))
    with pytest.raises(ValueError, match="action_bins is for continuous actions"):
        RolloutLM(load_backbone("tiny"), ModelConfig(backbone="tiny", lora=False, action_bins=5),
                  STATE_DIM, True, 4, norm)
    with pytest.raises(RuntimeError, match="regresses its actions"):
        point_model(None).action_bin_index(torch.zeros(2))


def train(model: RolloutLM, steps: int = 60) -> RolloutLM:
    model.train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    for step in range(steps):
        loss = model.losses(bang_bang_batch(step))["total"]
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


@pytest.fixture(scope="module")
def trained() -> dict[str | None, RolloutLM]:
    return {"bins": train(point_model(BINS)), "regression": train(point_model(None))}


def test_a_binned_head_samples_the_sharp_actions_a_regression_head_averages(trained):
    """On bang-bang data the regression head learns the mean (|a| near 0, a value never seen);
    the binned head puts its mass on the two ends and generation samples them, both signs."""
    gen_cfg = GenerateConfig(temperature=1.0, batch_size=16)
    binned = imagine_batch(trained["bins"], _PointDomain(), starts(16), gen_cfg, torch.Generator().manual_seed(0))
    regressed = imagine_batch(trained["regression"], _PointDomain(), starts(16), gen_cfg,
                              torch.Generator().manual_seed(0))
    a_bins = np.concatenate([e.actions for e in binned])
    a_reg = np.concatenate([e.actions for e in regressed])
    assert a_bins.shape[1:] == a_reg.shape[1:] == (ACTION_DIM,)
    assert np.mean(np.abs(a_reg)) < 0.5
    assert np.mean(np.abs(a_bins) == 1.0) > 0.8
    assert 0.2 < np.mean(a_bins > 0) < 0.8
    grid = trained["bins"].action_values.numpy()
    assert np.all(np.isin(a_bins, grid))  # every generated value is one the head can name


def test_temperature_zero_takes_the_likeliest_value_and_the_seed_fixes_samples(trained):
    model = trained["bins"]
    greedy = [imagine_batch(model, _PointDomain(), starts(4), GenerateConfig(temperature=0.0),
                            torch.Generator().manual_seed(s)) for s in (0, 1)]
    for a, b in zip(*greedy):
        np.testing.assert_array_equal(a.actions, b.actions)
    sampled = [imagine_batch(model, _PointDomain(), starts(8), GenerateConfig(temperature=1.0),
                             torch.Generator().manual_seed(s)) for s in (3, 3, 4)]
    for a, b in zip(sampled[0], sampled[1]):
        np.testing.assert_array_equal(a.actions, b.actions)
    assert any(len(a) != len(c) or not np.array_equal(a.actions, c.actions) for a, c in zip(sampled[0], sampled[2]))


def test_a_binned_model_round_trips_through_its_checkpoint(tmp_path, trained):
    model = trained["bins"]
    ckpt.save_checkpoint(tmp_path / "ck", model, {"env_id": "Point-v0", "step": 1})
    loaded, meta = ckpt.load_checkpoint(tmp_path / "ck", device="cpu")
    assert meta["model"]["action_bins"] == BINS and loaded.action_bins == BINS
    batch = bang_bang_batch(99)
    with torch.no_grad():
        torch.testing.assert_close(model.losses(batch)["action"], loaded.losses(batch)["action"])
    torch.testing.assert_close(loaded.action_values, model.action_values)


class _PointWithPhysics(_PointDomain):
    """The point domain with a physics prior: the first two coordinates move by the action / 10,
    the third never moves."""

    def constrain_step(self, previous, actions, states):
        out = np.array(previous, dtype=np.float64, copy=True)
        out[:, :2] += np.asarray(actions, np.float64) / 10.0
        return out.astype(np.asarray(states).dtype)


def test_the_physics_prior_shapes_every_imagined_step_and_is_off_by_default():
    """``GenerateConfig.physics_prior``: every imagined state is the domain's ``constrain_step`` of
    the previous (shaped) state, the action and the model's prediction, before it is scored and fed
    back; without it the model's own states stand; a domain without a prior is refused."""
    model = point_model(BINS).eval()
    with torch.no_grad():  # a fresh state head is zero (residual): give the model its own motion
        model.state_head.weight.normal_(0, 0.05)
    shaped = imagine_batch(model, _PointWithPhysics(), starts(6), GenerateConfig(temperature=1.0, physics_prior=True),
                           torch.Generator().manual_seed(0))
    for ep in shaped:
        moves = np.diff(ep.states.astype(np.float64), axis=0)
        np.testing.assert_allclose(moves[:, :2], ep.actions / 10.0, atol=1e-6)
        np.testing.assert_allclose(moves[:, 2], 0.0, atol=1e-6)
    free = imagine_batch(model, _PointWithPhysics(), starts(6), GenerateConfig(temperature=1.0),
                         torch.Generator().manual_seed(0))
    assert not all(np.allclose(np.diff(ep.states, axis=0)[:, 2], 0.0, atol=1e-6) for ep in free)
    with pytest.raises(ValueError, match="no physics prior"):
        imagine_batch(model, _PointDomain(), starts(2), GenerateConfig(physics_prior=True),
                      torch.Generator().manual_seed(0))
