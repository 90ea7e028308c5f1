"""COMBO: the dynamics ensemble, the conservative critic, checkpoints, resume and the runner path."""

from __future__ import annotations

import io
import shutil

import numpy as np
import pytest
import torch

from imaginebench.algos.combo.dynamics import GaussianEnsemble, TransitionTable
from imaginebench.algos import COMBOConfig
from imaginebench.data import Episode, EpisodeDataset
from tests.algos.helpers import HASH_ENCODER, HashEncoder, build_toy_data, toy_envs  # noqa: F401  (fixture)

TINY_DYNAMICS = {"dynamics_hidden_units": (16, 16), "dynamics_weight_decay": (2.5e-5, 5e-5, 1e-4),
                 "dynamics_max_epochs": 3, "ensemble_size": 3, "n_elites": 2}


def _linear_table(n: int, seed: int) -> TransitionTable:
    """``n`` random transitions (states drawn with ``seed``) of one fixed linear system
    s' = A s + B a, r = c·s, as a table whose s, s' pairs are consecutive state rows."""
    system = np.random.default_rng(0)
    a_mat, b_mat, c = system.normal(size=(3, 3)) * 0.5, system.normal(size=(3, 2)), system.normal(size=3)
    rng = np.random.default_rng(seed + 1)
    s = rng.normal(size=(n, 3))
    a = rng.uniform(-1, 1, size=(n, 2))
    nxt = s @ a_mat.T + a @ b_mat.T
    states = np.empty((2 * n, 3))
    states[0::2], states[1::2] = s, nxt
    f32 = lambda x: torch.as_tensor(np.asarray(x, dtype=np.float32))  # noqa: E731
    return TransitionTable(states=f32(states), obs_rows=torch.arange(n) * 2, instr=torch.zeros(n, dtype=torch.long),
                           embeddings=torch.zeros(1, 0), actions=f32(a), rewards=f32((s @ c)[:, None]),
                           terminals=torch.zeros(n, 1))


def test_ensemble_fits_a_linear_system_and_keeps_its_best_members_as_elites():
    torch.manual_seed(0)
    table = _linear_table(2000, seed=0)
    ensemble = GaussianEnsemble(7, 5, in_dim=5, out_dim=4, hidden_units=(64, 64))
    fit = ensemble.fit(table, weight_decay=(2.5e-5, 5e-5, 1e-4), max_epochs=60, learning_rate=3e-3)
    assert bool(ensemble.trained) and fit.epochs >= 10 and len(fit.holdout) == 400

    # the elites are exactly the members with the lowest validation MSE, recomputed here
    x, y, _ = table.gather(torch.as_tensor(fit.holdout))
    mean, _, _ = ensemble(x.expand(7, -1, -1))
    mse = ((mean - (y - ensemble.out_mean) / ensemble.out_std) ** 2).mean(dim=(1, 2)).detach().numpy()
    np.testing.assert_allclose(mse, fit.val_mse, rtol=1e-5)
    assert sorted(fit.elites.tolist()) == sorted(np.argsort(mse)[:5].tolist())
    assert ensemble.elites.tolist() == fit.elites.tolist()
    others = np.setdiff1d(np.arange(7), fit.elites)
    assert mse[fit.elites].max() <= mse[others].min()

    # held-out predictions of s' and r, noise-free, from each elite: low error in data units
    test = _linear_table(500, seed=1)  # fresh states and actions
    x, y, _ = test.gather(torch.arange(500))
    for member in fit.elites:
        pred, terminal = ensemble.sample(x, torch.full((500,), int(member)), torch.zeros(500, 4))
        rel = ((pred - y) ** 2).mean(0) / y.var(0)
        assert rel.max() < 2e-3, (member, rel)  # about 1e-4 here
        assert not terminal.any()


def test_the_per_phrasing_first_layer_equals_the_plain_one_in_outputs_and_gradients(monkeypatch):
    from imaginebench.algos.combo import dynamics as combo
    from imaginebench.algos.encoders import shortcuts

    monkeypatch.setattr(combo, "SPLIT_MIN_ROWS", 8)

    torch.manual_seed(0)
    state, embed, action = 3, 40, 2
    ensemble = GaussianEnsemble(4, 2, in_dim=state + embed + action, out_dim=state + 1, hidden_units=(16, 16),
                                embedding_columns=(state, state + embed))
    with torch.no_grad():  # normalisers away from the identity, so the split must apply them per column
        ensemble.in_mean.normal_()
        ensemble.in_std.uniform_(0.5, 2.0)
    phrasings = torch.randn(3, embed)
    x = torch.cat([torch.randn(4, 60, state), phrasings[torch.randint(3, (4, 60))], torch.randn(4, 60, action)], -1)

    def run(split: bool):
        ensemble.zero_grad()
        with shortcuts(phrasings=split):
            mean, logvar, logit = ensemble(x)
        (mean.square().sum() + logvar.sum() + logit.sum()).backward()
        return [mean, logvar, logit], [p.grad.clone() for p in ensemble.parameters()]

    (split_out, split_grads), (plain_out, plain_grads) = run(True), run(False)
    for a, b in zip(split_out + split_grads, plain_out + plain_grads):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    members = torch.tensor([2, 0])  # a subset of members, as the rollouts ask
    with shortcuts(phrasings=True):
        sub = ensemble(x[:2], members)[0]
    with shortcuts(phrasings=False):
        torch.testing.assert_close(sub, ensemble(x[:2], members)[0], atol=1e-5, rtol=1e-5)


def test_the_fit_records_every_epochs_validation_error():
    torch.manual_seed(0)
    ensemble = GaussianEnsemble(3, 2, in_dim=5, out_dim=4, hidden_units=(16,))
    fit = ensemble.fit(_linear_table(300, seed=0), weight_decay=(1e-5, 1e-5), max_epochs=4)
    assert fit.history.shape == (fit.epochs, 3) == (4, 3)
    assert (fit.history[-1] < fit.history[0]).all()  # it learns


def test_a_constant_state_column_stays_constant_in_model_samples():
    import dataclasses

    torch.manual_seed(0)
    table = _linear_table(300, seed=0)
    states = table.states.clone()
    states[:, 2] = 3.0  # e.g. an object that never moves in the data
    table = dataclasses.replace(table, states=states)
    ensemble = GaussianEnsemble(3, 2, in_dim=5, out_dim=4, hidden_units=(16,))
    ensemble.fit(table, weight_decay=(0.0, 0.0), max_epochs=2)  # barely trained: wide predicted variances
    x, _, _ = table.gather(torch.arange(300))
    pred, _ = ensemble.sample(x, torch.zeros(300, dtype=torch.long), torch.ones(300, 4))
    assert pred[:, 2].abs().max() < 1e-4 and pred[:, 0].abs().mean() > 0.1

def _toy_source(seed: int = 0):
    """A 2-d state, 1-d action dataset whose actions all lie near +0.5; rewards ignore the action."""
    from imaginebench.algos.sampler import MixedReplaySource

    rng = np.random.default_rng(seed)
    episodes = []
    for i in range(30):
        t = 6
        actions = (0.5 + 0.05 * rng.normal(size=(t, 1))).astype(np.float32)
        states = np.zeros((t + 1, 2), np.float32)
        states[0] = rng.normal(size=2)
        for k in range(t):
            states[k + 1] = states[k] + 0.1 * np.array([actions[k, 0], -actions[k, 0]])
        episodes.append(Episode(task=f"task{i % 2}", instruction=f"do task {i % 2}", states=states, actions=actions,
                                rewards=(0.1 * rng.normal(size=t)).astype(np.float32), terminals=np.zeros(t, bool),
                                truncations=np.arange(t) == t - 1, successes=np.zeros(t, bool)))
    data = EpisodeDataset.from_episodes(episodes, metadata={"domain": "Test-v0", "level": "train", "source": "real"})
    return MixedReplaySource({"real": data}, encoder=HashEncoder(), seed=seed)


def _build(source, **options):
    from imaginebench.algos.factory import build_algorithm

    torch.manual_seed(0)
    config = COMBOConfig(hidden_units=(32, 32), rollout_batch_size=256, rollout_freq=50, **TINY_DYNAMICS, **options)
    return config, build_algorithm(config, source, batch_size=32)


def test_the_conservative_term_lowers_q_on_out_of_distribution_actions():
    source = _toy_source()
    obs = source.sample_transition_batch(256).observations
    gaps = {}
    for beta in (0.0, 5.0):
        config, algo = _build(source, conservative_weight=beta)
        for _ in range(300):
            loss = config.update(algo, source, 32)
        assert all(np.isfinite(v) for v in loss.values())
        q_data = algo.predict_value(obs, np.full((256, 1), 0.5, np.float32))
        q_ood = algo.predict_value(obs, np.full((256, 1), -0.9, np.float32))
        gaps[beta] = float(np.mean(q_data - q_ood))
    assert gaps[5.0] > 0.4 and gaps[5.0] > gaps[0.0] + 0.4, gaps


def test_checkpoint_bytes_carry_the_dynamics_and_the_model_buffer():
    source = _toy_source()
    config, algo = _build(source)
    for _ in range(3):
        config.update(algo, source, 32)
    fitted = algo.dynamics_fit
    assert fitted is not None and fitted.epochs == 3 and len(algo.impl.model_buffer) == 256
    buf = io.BytesIO()
    algo.impl.save_model(buf)
    state = torch.load(io.BytesIO(buf.getvalue()), weights_only=True)
    assert {"dynamics", "model_buffer"} <= set(state) and state["model_buffer"]["states"].shape == (256, 2)

    _, other = _build(source, conservative_weight=1.0)  # a fresh build, as the runner's resume does
    assert not bool(other.impl.dynamics.trained) and len(other.impl.model_buffer) == 0
    other.impl.load_model(io.BytesIO(buf.getvalue()))
    assert bool(other.impl.dynamics.trained) and len(other.impl.model_buffer) == 256
    assert other.impl.dynamics.elites.tolist() == fitted.elites.tolist()
    torch.testing.assert_close(other.impl.model_buffer.next_states, algo.impl.model_buffer.next_states)
    config.update(other, source, 32)  # continues without refitting
    assert other.dynamics_fit is None


def test_one_dynamics_fit_serves_every_seed_on_the_same_data_and_leaves_the_runs_random_stream_alone(monkeypatch):
    from imaginebench.algos.combo.dynamics import GaussianEnsemble as Ensemble
    from imaginebench.config import data_home

    source = _toy_source()
    config = COMBOConfig(hidden_units=(32, 32), rollout_batch_size=256, rollout_freq=50, **TINY_DYNAMICS)
    from imaginebench.algos.factory import build_algorithm

    torch.manual_seed(1)
    first = build_algorithm(config, source, batch_size=32)
    before = torch.get_rng_state()
    fit = first.fit_dynamics()
    assert torch.equal(torch.get_rng_state(), before)  # the run's own stream is untouched
    cached = list((data_home() / "cache" / "dynamics").glob("*.pt"))
    assert [p.stem for p in cached] == [first.dynamics_key()]

    torch.manual_seed(7)  # another run seed: other critics, the same dynamics
    second = build_algorithm(config, source, batch_size=32)
    monkeypatch.setattr(Ensemble, "fit", lambda *a, **k: pytest.fail("refitted despite the cache"))
    assert second.fit_dynamics().epochs == fit.epochs
    for name, value in first.impl.dynamics.state_dict().items():
        torch.testing.assert_close(second.impl.dynamics.state_dict()[name], value, rtol=0, atol=0)
    monkeypatch.undo()

    # without the cache the fit is the same function of the data: equal again
    for path in cached:
        path.unlink()
    torch.manual_seed(7)
    third = build_algorithm(config, source, batch_size=32)
    third.dynamics_cache = None
    third.fit_dynamics()
    for name, value in first.impl.dynamics.state_dict().items():
        torch.testing.assert_close(third.impl.dynamics.state_dict()[name], value, rtol=0, atol=0)

    # other data or other dynamics settings: another key
    other_data = build_algorithm(config, _toy_source(seed=1), batch_size=32)
    other_settings = build_algorithm(COMBOConfig(hidden_units=(32, 32), rollout_batch_size=256, rollout_freq=50,
                                                 **{**TINY_DYNAMICS, "dynamics_max_epochs": 2}), source, batch_size=32)
    assert len({first.dynamics_key(), other_data.dynamics_key(), other_settings.dynamics_key()}) == 3


def test_a_damaged_cached_fit_is_refitted():
    source = _toy_source()
    _, algo = _build(source)
    key = algo.dynamics_key()
    algo.dynamics_cache.mkdir(parents=True, exist_ok=True)
    (algo.dynamics_cache / f"{key}.pt").write_bytes(b"not a checkpoint")
    fit = algo.fit_dynamics()
    assert fit.epochs == 3 and bool(algo.impl.dynamics.trained)
    assert torch.load(algo.dynamics_cache / f"{key}.pt", weights_only=True)["fit"]["epochs"] == 3


def test_stacked_combo_seeds_equal_each_seed_trained_alone():
    """Three seeds through the stacked trainer (rollout rounds, model batches, critic and actor) give
    each seed the numbers of COMBO's own update run alone from the same random streams."""
    from imaginebench.algos.factory import build_algorithm
    from imaginebench.algos.vectorised import trainer_for
    from imaginebench.algos.vectorised.batches import StackedSampler
    from tests.algos.test_stacked import assert_close, params_of

    config = COMBOConfig(hidden_units=(32, 32), rollout_batch_size=64, rollout_freq=5, rollout_horizon=2,
                         model_retain_epochs=2, **TINY_DYNAMICS)
    seeds, batch, steps = [0, 1, 2], 16, 12

    def built(seed):
        source = _toy_source()
        source.rng = np.random.default_rng(seed)
        torch.manual_seed(seed)
        algo = build_algorithm(config, source, batch_size=batch)
        generator = torch.Generator()
        generator.set_state(torch.get_rng_state())
        return source, algo, generator

    lone = []
    for seed in seeds:
        source, algo, generator = built(seed)
        torch.set_rng_state(generator.get_state())
        for _ in range(steps):
            config.update(algo, source, batch)
        lone.append(algo)

    runs = [built(seed) for seed in seeds]
    trainer = trainer_for([a for _, a, _ in runs], [g for _, _, g in runs])
    sampler = StackedSampler(runs[0][0], [src.rng for src, _, _ in runs], "cpu", runs[0][1].config.observation_scaler)
    for _ in range(steps):
        trainer.step(sampler.sample(trainer.source_rows(batch)))
    trainer.write_back()
    for (_, algo, _), alone in zip(runs, lone):
        assert_close(params_of(algo), params_of(alone))
        assert algo.grad_step == alone.grad_step == steps
        torch.testing.assert_close(algo.impl.model_buffer.states, alone.impl.model_buffer.states)
    assert len(lone[0].impl.model_buffer) == 2 * 64 * 2  # the buffer was refilled mid-run (and is full)
    first, second = params_of(runs[0][1]), params_of(runs[1][1])
    assert any(not torch.allclose(first[k], second[k]) for k in first if not k.startswith("dynamics"))


def test_model_buffer_is_first_in_first_out():
    from imaginebench.algos.combo.dynamics import ModelBuffer

    buf = ModelBuffer(capacity=5, state_dim=1, action_size=1)

    def rows(values):
        v = torch.tensor(values, dtype=torch.float32)[:, None]
        return dict(states=v, actions=v, rewards=v, next_states=v, terminals=torch.zeros_like(v),
                    instr=torch.zeros(len(v), dtype=torch.long))

    buf.add(**rows([1, 2, 3]))
    buf.add(**rows([4, 5, 6, 7]))  # 6 and 7 replace 1 and 2
    assert sorted(buf.states[:, 0].tolist()) == [3, 4, 5, 6, 7]
    buf.add(**rows([8]))
    assert sorted(buf.states[:, 0].tolist()) == [4, 5, 6, 7, 8]
    buf.add(**rows(list(range(10, 17))))  # more than the capacity: the newest five
    assert sorted(buf.states[:, 0].tolist()) == [12, 13, 14, 15, 16]


SMALL = dict(profile="tiny", encoder=HASH_ENCODER, train_steps=40, checkpoint_every=10, eval_episodes_per_task=2,
             batch_size=16, algo_options=(("hidden_units", (16, 16)), ("rollout_batch_size", 32),
                                          ("rollout_horizon", 2), ("rollout_freq", 7), ("model_retain_epochs", 2),
                                          *TINY_DYNAMICS.items()))


class Stop(Exception):
    pass


def test_a_killed_combo_run_resumes_to_the_numbers_of_an_uninterrupted_one(toy_envs, monkeypatch):
    from imaginebench.config import data_home
    from imaginebench.evaluation import stable_view
    from imaginebench.training import RunSpec, run_dir, train
    from imaginebench.run_folder import CHECKPOINT_NAME

    build_toy_data("ToyCont-v0", ("train",), episodes=30)
    fits = []
    original = GaussianEnsemble.fit
    monkeypatch.setattr(GaussianEnsemble, "fit", lambda self, *a, **k: fits.append(1) or original(self, *a, **k))
    spec = RunSpec("ToyCont-v0", "combo", seed=1, **SMALL)

    def kill_after_second(step, entry):
        if step == 20:
            raise Stop

    with pytest.raises(Stop):
        train(spec, progress=False, on_checkpoint=kill_after_second)
    assert (run_dir(spec) / CHECKPOINT_NAME).exists() and fits == [1]
    resumed = train(spec, progress=False)
    assert resumed.resumed_from == 20 and fits == [1]  # the checkpoint's ensemble, not a refit

    shutil.rmtree(run_dir(spec))
    shutil.rmtree(data_home() / "cache" / "dynamics")  # fit again, not from the shared cache
    straight = train(spec, progress=False)
    assert fits == [1, 1]
    assert stable_view(straight.record) == stable_view(resumed.record)
    assert straight.record["algo"] == "combo" and straight.record["config"]["algorithm"]["rollout_freq"] == 7


def test_stacked_combo_runs_give_the_records_of_seeds_trained_alone_and_resume(toy_envs):
    from imaginebench.training import RunSpec, run_dir, train_seeds
    from tests.training.test_stacked_runs import comparable

    build_toy_data("ToyCont-v0", ("train",), episodes=30)
    specs = [RunSpec("ToyCont-v0", "combo", seed=s, **SMALL) for s in (0, 1)]

    together = train_seeds(specs, progress=False)
    assert all(r.record["timing"]["engine"] == "stacked" for r in together)
    for spec in specs:
        shutil.rmtree(run_dir(spec))
    alone = train_seeds(specs, stack=False, progress=False)
    assert all(r.record["timing"]["engine"] == "d3rlpy" for r in alone)
    for a, b in zip(together, alone):
        assert comparable(a.record) == comparable(b.record)

    for spec in specs:  # killed inside the stacked step-20 checkpoints, then resumed
        shutil.rmtree(run_dir(spec))

    def kill(step, entry):
        if step == 20:
            raise Stop

    with pytest.raises(Stop):
        train_seeds(specs, progress=False, on_checkpoint=kill)
    resumed = train_seeds(specs, progress=False)
    assert [r.resumed_from for r in resumed] == [20, 10]
    for a, b in zip(resumed, alone):
        assert comparable(a.record) == comparable(b.record)


def test_combo_needs_continuous_actions_on_the_command_line(toy_envs):
    from typer.testing import CliRunner

    from imaginebench.cli import app

    result = CliRunner().invoke(app, ["train", "--env", "Toy-v0", "--algo", "combo", "--profile", "tiny",
                                      "--encoder", HASH_ENCODER, "--no-progress"])
    assert result.exit_code == 2
    out = result.stderr if hasattr(result, "stderr") else result.output
    lines = [ln for ln in out.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "'combo' needs continuous actions" in lines[0]


def test_combo_config_validates_its_fields():
    with pytest.raises(ValueError, match="real_ratio"):
        COMBOConfig(real_ratio=1.0)
    with pytest.raises(ValueError, match="n_elites"):
        COMBOConfig(n_elites=8)
    with pytest.raises(ValueError, match="dynamics_weight_decay"):
        COMBOConfig(dynamics_hidden_units=(200, 200))
    with pytest.raises(ValueError, match="dynamics_seed must be 0 or more"):
        COMBOConfig(dynamics_seed=-1)
    assert COMBOConfig().batch_split(256) == (128, 128) and COMBOConfig(real_ratio=0.9).batch_split(10) == (9, 1)


@pytest.mark.skipif(not __import__("imaginebench.envs.registry", fromlist=["is_available"]).is_available(
    "HalfCheetah-v0"), reason="needs the HalfCheetah-v0 domain")
def test_combo_trains_end_to_end_on_a_continuous_domain():
    import d3rlpy

    from imaginebench.data.hub import build_real
    from imaginebench.training import RunSpec, train
    from imaginebench.run_folder import MODEL_NAME

    build_real("HalfCheetah-v0", "train", "tiny", episodes=20, progress=False)
    options = (("hidden_units", (16, 16)), ("rollout_batch_size", 64), ("rollout_freq", 2), *TINY_DYNAMICS.items())
    result = train(RunSpec("HalfCheetah-v0", "combo", level="train", seed=0, profile="tiny", encoder=HASH_ENCODER,
                           train_steps=4, checkpoint_every=2, eval_episodes_per_task=1, batch_size=16,
                           algo_options=options), progress=False)
    rec = result.record
    assert rec["algo"] == "combo" and rec["algo_family"] == "combo" and [c["step"] for c in rec["curve"]] == [2, 4]
    assert rec["config"]["embedding_dim"] == 8 and 0.0 <= rec["success"] <= 1.0
    assert all(np.isfinite(v) for v in rec["curve"][-1]["loss"].values())
    assert rec["reference"]["train"]["expert"] >= 0.9

    model = d3rlpy.load_learnable(str(result.path / MODEL_NAME))  # config, ensemble and policy; no model buffer
    assert bool(model.impl.dynamics.trained) and len(model.impl.model_buffer) == 0
    obs = np.zeros((3, rec["config"]["state_dim"] + 8), np.float32)
    assert model.predict(obs).shape == (3, 6)
