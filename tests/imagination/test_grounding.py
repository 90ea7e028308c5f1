"""Grounding models learned from real train data (issue 66): what they read, caching, determinism, and
that the grounded keep path calls no simulator."""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("metaworld")

import imaginebench  # noqa: E402
from imaginebench.data.collect import episode_seed, rollout  # noqa: E402
from imaginebench.data.dataset import EpisodeDataset  # noqa: E402
from imaginebench.data.hub import dataset_path, imaginary_path  # noqa: E402
from imaginebench.data.storage import load_dataset, save_dataset  # noqa: E402
from imaginebench.envs.registry import load_domain  # noqa: E402
from imaginebench.imagination import grounding as G  # noqa: E402

ENV = "MetaWorld-v0"
CFG = G.GroundingConfig(members=3, hidden_units=(32,), max_epochs=3, patience=2, batch_size=128)


def collect(level: str, n: int, seed: int = 0) -> EpisodeDataset:
    env = imaginebench.make(ENV, level=level, encode_instruction=False)
    try:
        sim = env.unwrapped
        tasks = sim.tasks
        eps = [rollout(sim, tasks[i % len(tasks)], episode_seed(seed, i)) for i in range(n)]
    finally:
        env.close()
    domain = load_domain(ENV)
    meta = {"domain": ENV, "level": level, "source": "real", "action_dim": domain.action_dim}
    return EpisodeDataset.from_episodes(eps, metadata=meta, state_dim=domain.state_dim,
                                        action_shape=(domain.action_dim,))


@pytest.fixture(scope="module")
def real_train() -> EpisodeDataset:
    return collect("train", 20)


@pytest.fixture()
def home_with_train(real_train):
    path = dataset_path(ENV, "real", "train", "tiny")
    save_dataset(real_train, path, overwrite=True)
    return path


def test_fit_reads_only_train_level_real_data(home_with_train, monkeypatch):
    asked = []
    original = G.load_real

    def spy(env_id, level="train", profile=None):
        asked.append(level)
        return original(env_id, level, profile)

    monkeypatch.setattr(G, "load_real", spy)
    G.load_grounding(ENV, "tiny", CFG)
    assert asked == ["train"]
    rephrase = collect("rephrase", 2)
    with pytest.raises(ValueError, match="real train-level data only"):
        G.fit_grounding(load_domain(ENV), rephrase, CFG)
    imagined = replace(load_dataset(home_with_train), metadata={"level": "train", "source": "imaginary"})
    with pytest.raises(ValueError, match="real train-level data only"):
        G.fit_grounding(load_domain(ENV), imagined, CFG)


def test_fit_is_deterministic_given_the_seed(real_train):
    domain = load_domain(ENV)
    a = G.fit_grounding(domain, real_train, CFG).state_dict()
    b = G.fit_grounding(domain, real_train, CFG).state_dict()
    c = G.fit_grounding(domain, real_train, replace(CFG, seed=1)).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a if k.startswith("forward_net"))


def test_cache_is_reused_and_invalidated_by_data_or_settings(home_with_train, real_train, monkeypatch):
    fits = []
    original = G.fit_grounding

    def counting(*args, **kwargs):
        fits.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(G, "fit_grounding", counting)
    G.load_grounding(ENV, "tiny", CFG)
    G.load_grounding(ENV, "tiny", CFG)
    assert len(fits) == 1  # the second call read the cache
    G.load_grounding(ENV, "tiny", replace(CFG, hidden_units=(16,)))
    assert len(fits) == 2  # other settings: another fit
    fewer = EpisodeDataset.from_episodes(list(real_train)[:-1], metadata=dict(real_train.metadata),
                                         state_dim=real_train.state_dim, action_shape=(4,))
    save_dataset(fewer, home_with_train, overwrite=True)
    G.load_grounding(ENV, "tiny", CFG)
    assert len(fits) == 3  # other data: another fit


def test_damaged_cache_file_is_refitted_not_trusted(home_with_train, caplog):
    first = G.load_grounding(ENV, "tiny", CFG)
    files = list((G.cache_dir() / ENV / "tiny").glob("*.pt"))
    assert len(files) == 1
    files[0].write_bytes(b"not a torch file")
    with caplog.at_level(logging.WARNING):
        again = G.load_grounding(ENV, "tiny", CFG)
    assert "Refitting the grounding models" in caplog.text
    assert all(torch.equal(v, again.state_dict()[k]) for k, v in first.state_dict().items())
    assert G.load_grounding(ENV, "tiny", CFG).report.train_episodes == first.report.train_episodes


def test_model_replay_follows_real_actions(real_train):
    model = G.fit_grounding(load_domain(ENV), real_train, replace(CFG, max_epochs=30, patience=5, hidden_units=(64,)))
    ep = real_train.episode(0)
    states, spread = model.model_replay(ep.states[0], ep.actions)
    assert states.shape == ep.states.shape and spread.shape == (len(ep),)
    hand = slice(0, 3)  # the Sawyer hand follows its actions: the model must move it the right way
    moved = np.linalg.norm(ep.states[-1, hand] - ep.states[0, hand])
    assert np.linalg.norm(states[-1, hand] - ep.states[-1, hand]) < 0.5 * moved
    relabelled = model.relabel(ep.states)
    assert relabelled.shape == ep.actions.shape
    assert np.corrcoef(relabelled[:, :3].ravel(), ep.actions[:, :3].ravel())[0, 1] > 0.5


def test_grounded_dataset_calls_no_simulator(home_with_train, real_train, monkeypatch):
    import imaginebench.envs.registry as registry

    # imagined candidates: real rephrase episodes stand in for the rollout model's output here
    pool = collect("rephrase", 6, seed=3)
    meta = {"domain": ENV, "level": "rephrase", "source": "imaginary"}
    save_dataset(replace(pool, metadata=meta), imaginary_path(ENV, "rephrase", "tiny", "unfiltered"), overwrite=True)
    G.load_grounding(ENV, "tiny", CFG)  # fitted beforehand: the fit reads real data only

    def no_simulator(*args, **kwargs):
        raise AssertionError("the grounded keep path must not make an environment")

    monkeypatch.setattr(registry, "make", no_simulator)
    # every env, however make() was imported, is built by gymnasium through this entry point
    monkeypatch.setattr(registry, "create_raw", no_simulator)
    monkeypatch.setattr(imaginebench, "make", no_simulator)
    try:
        out = G.ground_dataset(ENV, "rephrase", "tiny", mode="relabel", cfg=CFG)
    except ValueError as e:  # a 3-epoch model may keep nothing; the path still ran without a simulator
        assert "nothing written" in str(e)
        return
    ds = load_dataset(out["dataset"])
    assert ds.metadata["filter"] == "grounded-relabel" and ds.metadata["oracle"] is False
    assert ds.metadata["grounding"]["candidates"] == 6


def test_bad_mode_is_a_one_line_error(home_with_train):
    with pytest.raises(ValueError, match="Valid choices"):
        G.ground_dataset(ENV, "rephrase", "tiny", mode="magic", cfg=CFG)


def test_track_follows_the_plan_in_closed_loop(real_train):
    model = G.fit_grounding(load_domain(ENV), real_train, replace(CFG, max_epochs=30, patience=5, hidden_units=(64,)))
    ep = real_train.episode(1)
    states, actions, spread = model.track(ep.states)
    assert states.shape == ep.states.shape and actions.shape == ep.actions.shape and spread.shape == (len(ep),)
    np.testing.assert_array_equal(states[0], ep.states[0].astype(np.float32))
    # closed loop: the tracked hand ends nearer the plan's than open-loop relabelled actions leave it
    open_loop, _ = model.model_replay(ep.states[0], model.relabel(ep.states))
    closed_err = np.linalg.norm(states[-1, :3] - ep.states[-1, :3])
    open_err = np.linalg.norm(open_loop[-1, :3] - ep.states[-1, :3])
    assert closed_err <= open_err + 1e-3
    kept = G.ground_check(model, load_domain(ENV), ep, relabel="track", model_states=True)
    if kept is not None:  # stored transitions are the model's, cut at its first success
        assert kept.successes[-1] and not kept.successes[:-1].any()
        np.testing.assert_allclose(kept.states, states[:len(kept) + 1], rtol=0, atol=1e-6)


def test_ground_all_levels_reports_a_level_that_keeps_nothing(monkeypatch):
    from typer.testing import CliRunner

    from imaginebench.cli import app

    def fake_ground(env_id, level, profile=None, mode="replay", state_test="states", overwrite=False):
        if level == "hard":
            raise G.NothingKept(f"No {level} candidate passes grounding; nothing written.", 7)
        return {"env_id": env_id, "level": level, "dataset": f"/x/imaginary-{level}.grounded.npz",
                "kept": 3, "candidates": 9}

    monkeypatch.setattr(G, "ground_dataset", fake_ground)
    runner = CliRunner()
    out = runner.invoke(app, ["imagine", "ground", "--env", ENV, "--level", "all", "--profile", "tiny"])
    assert out.exit_code == 0, out.output
    assert "hard: grounded (replay, state test states) kept 0 of 7 candidates (nothing kept" in out.output
    assert "easy: grounded (replay, state test states) kept 3 of 9" in out.output
    one = runner.invoke(app, ["imagine", "ground", "--env", ENV, "--level", "hard", "--profile", "tiny"])
    assert one.exit_code == 1 and "nothing written" in one.output and one.output.count("\n") == 1


def test_integer_dimensions_are_found_from_data_and_rounded_in_replay(real_train):
    ds = real_train
    eps = list(ds)
    grid = [replace(ep, states=np.round(ep.states * 20.0)) for ep in eps]  # positions on a 5 cm grid
    meta = dict(ds.metadata)
    gridded = EpisodeDataset.from_episodes(grid, metadata=meta, state_dim=ds.state_dim, action_shape=(4,))
    model = G.fit_grounding(load_domain(ENV), gridded, CFG)
    states = np.concatenate([ep.states for ep in grid])
    varies = states.max(0) > states.min(0)
    assert np.array_equal(model.integer.numpy(), varies) and model.report.integer_dims == list(np.flatnonzero(varies))
    replayed, _ = model.model_replay(grid[0].states[0], grid[0].actions)
    assert np.array_equal(replayed[:, varies], np.round(replayed[:, varies]))
    plain = G.fit_grounding(load_domain(ENV), ds, CFG)
    assert not plain.integer[:3].any()  # the hand's coordinates are not integers (0/1 flags are)
