"""Share of PRDC's neighbour search in a training step, at HalfCheetah ``small`` and ``paper`` sizes.

Synthetic data of the real shapes: HalfCheetah states (18) and actions (6), 200-step episodes,
as many real episodes as the profile has (train instruction bank) plus the rephrase level's
imaginary episodes (rephrase bank); states follow a smooth random walk per episode, actions are
``tanh`` of one.  Instructions are embedded by the default encoder (or the hash encoder of the
tests with ``--hash-encoder``).  One PRDC step is ``fast_update`` with the default config (256×2
MLPs, batch 256); the actor (and its neighbour search) runs every second step.  Prints, per size,
the steps per second and the seconds per neighbour search of :class:`~imaginebench.algos.prdc.index.NeighbourIndex`,
and with ``--sklearn`` of d3rlpy's own search (scikit-learn brute force over the full vectors)::

    python benchmarks/prdc_neighbours.py --sizes small paper --sklearn [--json PATH]

scikit-learn's index of the full vectors takes 4·(18 + E + 6) bytes per transition (E = 1152:
2.4 GB at ``small``, 24 GB at ``paper``); ``--sklearn`` runs it at the sizes whose array fits
under ``--sklearn-max-gb``, and extrapolates the others linearly in the number of transitions
(brute force reads every row once per query batch).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from harness import Report, add_json_argument

ENV = "HalfCheetah-v0"
STATE_DIM, ACTION_DIM, HORIZON = 18, 6, 200


def synthetic(episodes: int, bank: tuple[str, ...], seed: int, source: str):
    """An EpisodeDataset of ``episodes`` smooth random 200-step episodes over instructions ``bank``."""
    from imaginebench.data.dataset import EpisodeDataset

    rng = np.random.default_rng(seed)
    states = np.empty((episodes, HORIZON + 1, STATE_DIM), np.float32)
    states[:, 0] = rng.normal(size=(episodes, STATE_DIM))
    drive = np.zeros((episodes, ACTION_DIM), np.float32)
    actions = np.empty((episodes, HORIZON, ACTION_DIM), np.float32)
    for t in range(HORIZON):
        drive = 0.9 * drive + 0.3 * rng.normal(size=drive.shape).astype(np.float32)
        actions[:, t] = np.tanh(drive)
        states[:, t + 1] = 0.95 * states[:, t] + 0.2 * rng.normal(size=(episodes, STATE_DIM)).astype(np.float32)
    n = episodes * HORIZON
    trunc = np.zeros((episodes, HORIZON), bool)
    trunc[:, -1] = True
    return EpisodeDataset(
        states=states.reshape(-1, STATE_DIM), actions=actions.reshape(-1, ACTION_DIM),
        rewards=rng.normal(size=n).astype(np.float32), terminals=np.zeros(n, bool), truncations=trunc.reshape(-1),
        successes=np.zeros(n, bool), lengths=np.full(episodes, HORIZON, np.int64),
        task_ids=np.zeros(episodes, np.int64), instruction_ids=rng.integers(0, len(bank), episodes),
        tasks=("task",), instructions=tuple(bank), metadata={"domain": ENV, "source": source})


def measure(profile: str, steps: int, encoder: Any, sklearn: bool, sklearn_max_gb: float) -> dict[str, Any]:
    import torch

    from imaginebench.algos import PRDCConfig
    from imaginebench.algos.factory import build_algorithm
    from imaginebench.algos.sampler import MixedReplaySource, fast_update
    from imaginebench.config import get_profile
    from imaginebench.envs.registry import load_domain

    prof = get_profile(profile)
    domain = load_domain(ENV)
    real = synthetic(prof.episodes(ENV, "real", "train"), domain.instruction_bank("train"), 0, "real")
    imaginary = synthetic(prof.episodes(ENV, "imaginary", "rephrase"), domain.instruction_bank("rephrase"), 1,
                          "imaginary")
    source = MixedReplaySource({"real": real, "imaginary": imaginary}, {"real": 0.5, "imaginary": 0.5},
                               encoder=encoder, seed=0)
    del real, imaginary
    torch.manual_seed(0)
    t0 = time.perf_counter()
    algo = build_algorithm(PRDCConfig(), source, batch_size=256)
    build_s = time.perf_counter() - t0
    index = algo.impl.index
    searches: list[float] = []
    search = index.neighbour_actions

    def timed(*args: Any) -> Any:
        t = time.perf_counter()
        out = search(*args)
        searches.append(time.perf_counter() - t)
        return out

    index.neighbour_actions = timed  # instance attribute: times every call of the update's search

    def run(n: int) -> float:
        t = time.perf_counter()
        for _ in range(n):
            fast_update(algo, source.sample_transition_batch(256))
        return time.perf_counter() - t

    run(4)  # warm-up
    searches.clear()
    total = run(steps)
    ours = float(np.mean(searches))
    out: dict[str, Any] = {
        "profile": profile, "transitions": source.transition_count, "phrasings": len(source.embeddings),
        "observation_dim": source.observation_dim, "index_build_s": round(build_s, 2), "steps": steps,
        "steps_per_s": round(steps / total, 2), "search_s": round(ours, 5),
        "search_share": round(sum(searches) / total, 3),
        "step_without_search_s": round((total - sum(searches)) / steps, 5),
    }
    if sklearn:
        gb = source.transition_count * (source.observation_dim + ACTION_DIM) * 4 / 1e9
        out["sklearn_index_gb"] = round(gb, 2)
        if gb <= sklearn_max_gb:
            out["sklearn_search_s"] = round(sklearn_search_s(algo, source, 4), 3)
            out["sklearn_measured"] = True
        else:
            out["sklearn_measured"] = False
    return out


def sklearn_search_s(algo: Any, source: Any, calls: int) -> float:
    """Mean seconds of d3rlpy's own search (its ``compute_actor_loss`` with a fitted scikit-learn
    index over the full scaled vectors) for ``calls`` batches of 256."""
    import torch
    from d3rlpy.algos.qlearning.torch.prdc_impl import PRDCImpl

    from imaginebench.algos.sampler import torch_batch

    beta, scaler = algo.config.beta, algo.config.observation_scaler
    n, width = source.transition_count, source.observation_dim
    full = np.empty((n, width + source.action_size), np.float32)
    for lo in range(0, n, 65536):
        obs = torch.from_numpy(source.observations(source._obs_rows[lo:lo + 65536], source._instr[lo:lo + 65536]))
        full[lo:lo + 65536, :width] = (scaler.transform(obs) * beta).numpy()
        full[lo:lo + 65536, width:] = source._actions[lo:lo + 65536]
    nbsr = algo._nbsr
    nbsr.fit(full)
    del full
    impl = algo.impl
    impl._nbsr = nbsr
    times = []
    for _ in range(calls):
        batch = torch_batch(source.sample_transition_batch(256), algo)
        action = impl._modules.policy(batch.observations)
        t = time.perf_counter()
        PRDCImpl.compute_actor_loss(impl, batch, action)
        times.append(time.perf_counter() - t)
    nbsr.fit(np.zeros((1, 1), np.float32))  # free the big array
    return float(np.mean(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["small", "paper"])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--hash-encoder", action="store_true")
    parser.add_argument("--sklearn", action="store_true")
    parser.add_argument("--sklearn-max-gb", type=float, default=4.0)
    add_json_argument(parser)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    if args.hash_encoder:
        from tests.algos.helpers import HashEncoder  # the tests' encoder: needs the repository root on PYTHONPATH

        encoder: Any = HashEncoder()
    else:
        from imaginebench.language import get_encoder

        encoder = get_encoder(None)
    report = Report(__file__, args.json)
    ours = report.table(f"PRDC with our NeighbourIndex, {args.steps} timed steps per size",
                        ["size", "transitions", "phrasings", "observation dim", "index build s", "steps/s",
                         "search s", "search share", "step without search s"],
                        {"transitions": "{}", "phrasings": "{}", "observation dim": "{}", "index build s": "{:.2f}",
                         "steps/s": "{:.2f}", "search s": "{:.4f}", "search share": "{:.1%}",
                         "step without search s": "{:.5f}"})
    results = []
    for size in args.sizes:
        r = measure(size, args.steps, encoder, args.sklearn, args.sklearn_max_gb)
        results.append(r)
        ours.add(r["profile"], r["transitions"], r["phrasings"], r["observation_dim"], r["index_build_s"],
                 r["steps_per_s"], r["search_s"], r["search_share"], r["step_without_search_s"])
    if args.sklearn:
        d3rlpy_table(report, results)
    report.finish()


def d3rlpy_table(report: Report, results: list[dict[str, Any]]) -> None:
    """d3rlpy's own search per size: measured where its index fitted, else extrapolated."""
    measured = [r for r in results if r.get("sklearn_measured")]
    if measured:  # brute force is linear in the rows: scale the largest measured size
        ref = max(measured, key=lambda r: r["transitions"])
        for r in results:
            if not r.get("sklearn_measured"):
                r["sklearn_search_s"] = round(ref["sklearn_search_s"] * r["transitions"] / ref["transitions"], 3)
    table = report.table("d3rlpy's own search (scikit-learn brute force over the full vectors), one per two steps",
                         ["size", "transitions", "sklearn index GB", "sklearn search s", "d3rlpy steps/s",
                          "d3rlpy search share", "sklearn search"],
                         {"transitions": "{}", "sklearn index GB": "{:.2f}", "sklearn search s": "{:.3f}",
                          "d3rlpy steps/s": "{:.3f}", "d3rlpy search share": "{:.1%}"})
    for r in results:
        if "sklearn_search_s" not in r:  # no size fitted under --sklearn-max-gb: nothing to extrapolate from
            table.add(r["profile"], r["transitions"], r["sklearn_index_gb"], None, None, None, "not measured")
            continue
        per_step = r["step_without_search_s"] + r["sklearn_search_s"] / 2
        table.add(r["profile"], r["transitions"], r["sklearn_index_gb"], r["sklearn_search_s"], 1 / per_step,
                  r["sklearn_search_s"] / 2 / per_step, "measured" if r.get("sklearn_measured") else "extrapolated")


if __name__ == "__main__":
    main()
