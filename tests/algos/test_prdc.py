"""PRDC: d3rlpy's algorithm with an exact neighbour index of its own over every transition of a run."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from imaginebench.algos import get_spec, resolve
from imaginebench.algos.factory import build_algorithm
from imaginebench.algos.sampler import MixedReplaySource, torch_batch
from imaginebench.data import EpisodeDataset
from imaginebench.envs.registry import is_available
from tests.algos.helpers import HASH_ENCODER, build_toy_data, save_imaginary, toy_envs  # noqa: F401
from tests.data.helpers import random_dataset

TINY = {"hidden_units": (16, 16)}
RUN = dict(profile="tiny", encoder=HASH_ENCODER, train_steps=40, checkpoint_every=10, eval_episodes_per_task=1,
           batch_size=16, algo_options=(("hidden_units", (16, 16)),))


def _relabelled(ds: EpisodeDataset, prefix: str, unused: tuple[str, ...] = ()) -> EpisodeDataset:
    """``ds`` with every instruction string prefixed (new phrasings, same episodes), and ``unused``
    phrasings in its table that no episode has."""
    return EpisodeDataset(**{k: getattr(ds, k) for k in ds.ARRAYS}, tasks=ds.tasks,
                          instructions=(*(prefix + s for s in ds.instructions), *unused), metadata=ds.metadata)


def _source(seed: int = 0, episodes: int = 40) -> MixedReplaySource:
    """Real and imaginary episodes with phrasings of their own; every imaginary phrasing lies close
    to a real one, so nearest neighbours cross phrasings and sources."""
    real = random_dataset(episodes, discrete=False, seed=seed)
    imaginary = _relabelled(random_dataset(episodes // 2, discrete=False, seed=seed + 1), "imagined: ",
                            unused=("imagined: no episode",))
    rng = np.random.default_rng(seed)
    table = {s: rng.normal(size=6).astype(np.float32) for s in real.instructions}
    for s in imaginary.instructions:
        base = table.get(s.removeprefix("imagined: "), rng.normal(size=6).astype(np.float32))
        table[s] = base + 0.05 * rng.normal(size=6).astype(np.float32)
    return MixedReplaySource({"real": real, "imaginary": imaginary}, embeddings=table, seed=seed)


def _full_vectors(source: MixedReplaySource, scaler, beta: float) -> np.ndarray:
    """Every transition's ``(β·scaled observation) ⊕ action``: what d3rlpy's ``fit`` would index."""
    obs = torch.from_numpy(source.observations(source._obs_rows, source._instr))
    return np.concatenate([(scaler.transform(obs) * beta).numpy(), source._actions], 1)


def _queries(source: MixedReplaySource, scaler, n: int, seed: int):
    """Transition indices, their scaled observations (the first eighth with an embedding that is no
    phrasing's) and random actions."""
    rng = np.random.default_rng(seed)
    idx = source.sample_indices(n, rng)
    obs = scaler.transform(torch.from_numpy(source.batch_from_indices(idx).observations))
    obs[: n // 8, source.state_dim:] += 0.3  # matches no phrasing: its distances are computed directly
    if "imagined: no episode" in source.instructions:  # the phrasing of no transition
        k = source.instructions.index("imagined: no episode")
        row = torch.from_numpy(np.concatenate([np.zeros(source.state_dim, np.float32), source.embeddings[k]]))
        obs[n // 8, source.state_dim:] = scaler.transform(row[None])[0, source.state_dim:]
    return idx, obs, torch.from_numpy(rng.uniform(-1, 1, (n, source.action_size)).astype(np.float32))


@pytest.mark.parametrize("vectorised", [False, True], ids=["per-phrasing", "vectorised"])
def test_neighbour_target_equals_brute_force_over_full_vectors(vectorised, monkeypatch):
    from sklearn.neighbors import NearestNeighbors

    from imaginebench.algos.prdc import index as prdc

    monkeypatch.setattr(prdc, "PIECE_ROWS", 4)  # many pieces per phrasing
    monkeypatch.setattr(prdc, "CHUNK_ELEMENTS", 200)  # and many chunks of them
    source = _source()
    scaler, beta = source.observation_scaler("all"), 2.0
    index = prdc.NeighbourIndex.build(source, beta, scaler)
    index.vectorised = vectorised
    assert index.size == source.transition_count
    full = _full_vectors(source, scaler, beta)
    idx, obs, act = _queries(source, scaler, 96, seed=1)
    query = torch.cat([obs * beta, act], 1).numpy()

    positions, dist = index.nearest(obs, act)
    exact = ((query[:, None, :].astype(np.float64) - full[None, :, :].astype(np.float64)) ** 2).sum(-1)
    np.testing.assert_array_equal(positions.numpy(), exact.argmin(1))
    np.testing.assert_allclose(dist.numpy(), exact.min(1), rtol=1e-9, atol=1e-9)
    sk = NearestNeighbors(n_neighbors=1).fit(full).kneighbors(query, return_distance=False)[:, 0]
    np.testing.assert_array_equal(index.neighbour_actions(obs, act).numpy(), full[sk, -source.action_size:])

    # the data exercises what the factorised search must get right: neighbours of other phrasings
    # and of the other source (real <-> imaginary)
    found = positions.numpy()
    assert (source._instr[found] != source._instr[idx])[96 // 8 + 1:].any()  # queries of unchanged phrasings
    assert (source.source_of(found) != source.source_of(idx)).any()
    assert set(source.source_of(found)) == {0, 1}


def test_actor_loss_equals_d3rlpys_with_its_scikit_learn_index():
    from d3rlpy.algos.qlearning.torch.prdc_impl import PRDCImpl

    source = _source()
    torch.manual_seed(0)
    algo = build_algorithm(get_spec("prdc").default_config(**TINY), source, batch_size=32)
    impl = algo.impl
    batch = torch_batch(source.sample_transition_batch(32), algo)
    action = impl._modules.policy(batch.observations)
    ours = impl.compute_actor_loss(batch, action)
    # d3rlpy's own search, its index filled as its fit() would, from the same transitions
    impl._nbsr.fit(_full_vectors(source, algo.config.observation_scaler, algo.config.beta))
    theirs = PRDCImpl.compute_actor_loss(impl, batch, action)
    assert ours.dc_loss.item() > 0
    torch.testing.assert_close(ours.dc_loss, theirs.dc_loss, rtol=0, atol=0)
    torch.testing.assert_close(ours.actor_loss, theirs.actor_loss, rtol=0, atol=0)


def test_every_algorithm_has_its_own_index():
    from d3rlpy.algos import PRDC

    first, second = _source(seed=0, episodes=40), _source(seed=5, episodes=12)
    algos = [build_algorithm(get_spec("prdc").default_config(**TINY), s, batch_size=8) for s in (first, second)]
    one, two = (a.impl.index for a in algos)
    assert one is not two and one.size == first.transition_count and two.size == second.transition_count
    assert algos[0]._nbsr is not algos[1]._nbsr and algos[0]._nbsr is not PRDC._nbsr  # d3rlpy: one per process
    # each answers from its own data: a query of the second source finds its own transitions
    scaler = algos[1].config.observation_scaler
    _, obs, act = _queries(second, scaler, 16, seed=2)
    positions, _ = two.nearest(obs, act)
    assert positions.max() < second.transition_count
    np.testing.assert_array_equal(algos[1].impl.index.neighbour_actions(obs, act).numpy(),
                                  second._actions[positions.numpy()])
    # rebuilt from the same data (as on resume), the index is the same
    from imaginebench.algos.prdc.index import NeighbourIndex

    again = NeighbourIndex.build(first, algos[0].config.beta, algos[0].config.observation_scaler)
    assert torch.equal(again.keys, one.keys) and torch.equal(again.positions, one.positions)


def test_defaults_are_the_papers_and_d3rlpys():
    from d3rlpy.algos import PRDCConfig as D3PRDCConfig

    ours, theirs = get_spec("prdc").default_config(), D3PRDCConfig()
    assert (ours.alpha, ours.beta) == (theirs.alpha, theirs.beta) == (2.5, 2.0)
    for name in ("actor_learning_rate", "critic_learning_rate", "tau", "n_critics", "target_smoothing_sigma",
                 "target_smoothing_clip", "update_actor_interval", "gamma"):
        assert getattr(ours, name) == getattr(theirs, name), name
    with pytest.raises(ValueError, match="beta"):
        ours.replace(beta=-1.0)


def test_prdc_on_a_discrete_domain_names_what_fits():
    with pytest.raises(ValueError, match=r"'prdc' needs continuous actions.*Algorithms that fit: discrete_bc"):
        resolve("prdc", discrete=True, env_id="CLEVR-v0", action_space="Discrete(40)")


@pytest.fixture
def toy_cont(toy_envs):  # noqa: F811
    build_toy_data("ToyCont-v0", ("train", "easy"), episodes=20)
    save_imaginary("ToyCont-v0", "easy", episodes=10)
    return toy_envs


def test_a_killed_run_resumes_to_the_uninterrupted_record(toy_cont):
    from imaginebench.evaluation import stable_view
    from imaginebench.training import RunSpec, run_dir, train

    spec = RunSpec("ToyCont-v0", "prdc", level="easy", seed=2,
                   **{**RUN, "algo_options": (*RUN["algo_options"], ("update_actor_interval", 1))})

    class Stop(Exception):
        pass

    def kill_after_second(step, entry):
        if step == 20:
            raise Stop

    with pytest.raises(Stop):
        train(spec, progress=False, on_checkpoint=kill_after_second)
    resumed = train(spec, progress=False)
    assert resumed.resumed_from == 20
    rec = resumed.record
    assert [s["name"] for s in rec["sources"]] == ["real", "imaginary"] and rec["algo"] == "prdc"
    assert all(c["loss"]["dc_loss"] > 0 for c in rec["curve"])  # the actor, and its search, ran every step
    shutil.rmtree(run_dir(spec))
    straight = train(spec, progress=False)
    assert stable_view(straight.record) == stable_view(resumed.record)


@pytest.mark.skipif(not is_available("HalfCheetah-v0"), reason="needs HalfCheetah-v0")
def test_trains_end_to_end_on_halfcheetah_tiny():
    from imaginebench.data.hub import build_real
    from imaginebench.training import RunSpec, train

    build_real("HalfCheetah-v0", "train", "tiny", episodes=4, progress=False)
    rec = train(RunSpec("HalfCheetah-v0", "prdc", level="train", seed=0, **{**RUN, "train_steps": 3,
                                                                              "checkpoint_every": 3}),
                progress=False).record
    assert rec["algo"] == "prdc" and rec["algo_label"] == "PRDC" and rec["timing"]["engine"] == "d3rlpy"
    assert rec["config"]["algorithm"]["beta"] == 2.0 and rec["config"]["state_dim"] == 18
    assert np.isfinite(rec["curve"][-1]["loss"]["dc_loss"]) and 0.0 <= rec["success"] <= 1.0
