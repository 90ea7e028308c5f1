"""What a grid will cost, said before it starts.

A run's cost is its gradient steps over the update rate of its algorithm at its domain's input
width, plus its checkpoints times the cost of one evaluation (every evaluated level's episodes,
run to the horizon by an untrained policy: an upper bound).  Both are **measured on this
machine**: the update rate on random data of the domain's shapes (state, action, the encoder's
embedding width, a few dozen phrasings) through the runner's own update (the stacked trainer
with one seed where the algorithm has one, else d3rlpy's through :meth:`AlgoConfig.update`), and
one evaluation by the protocol's own :class:`~imaginebench.evaluation.Evaluator`.  Measurements
are kept in ``<data home>/cost/<machine>.json`` (machine = CPU model, torch threads per run,
torch version), so a grid pays for them once.  COMBO's dynamics fit is priced once per dataset
(its seeds and cells share one fit): the epoch cap times one epoch over the dataset's transitions,
where the dataset is already in the data home.  Evaluation is timed with a policy that acts at
random: the policy network's own cost at evaluation is not counted (small beside the
simulators here).

``imaginebench bench`` prints the estimate before it starts (asking nothing);
``benchmarks/grid_cost.py`` prints it alone.
"""

from __future__ import annotations

import json
import platform
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from imaginebench.config import data_home
from imaginebench.data.dataset import Episode, EpisodeDataset
from imaginebench.envs.registry import load_domain
from imaginebench.evaluation.protocol import Evaluator, eval_levels
from imaginebench.fileio import write_json
from imaginebench.language import get_encoder
from imaginebench.training.sources import load_sources
from imaginebench.training.spec import RunSpec, resolve_run

PHRASINGS = 40
"""Distinct instructions in the random data (a level's bank holds a few dozen)."""


RATES_VERSION = 2
"""Part of every cached rate's key; raised when an algorithm's update gets faster (2: stacked BCQ and
PRDC), so a data home's rates measured before are measured again, not reused."""


def machine_key(threads: int) -> str:
    """CPU model, torch threads per run and torch version: what the measured rates depend on."""
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{cpu}-t{threads}-torch{torch.__version__}")


class RateCache:
    """Measured rates of this machine, kept as JSON in the data home."""

    def __init__(self, path: Path | None = None, threads: int = 1) -> None:
        self.threads = max(1, int(threads))
        self.path = path or data_home() / "cost" / f"{machine_key(self.threads)}.json"
        try:
            found = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            found = None
        # only finite positive rates are kept: a damaged file is measured again, never trusted
        self.values: dict[str, float] = ({k: float(v) for k, v in found.items() if isinstance(k, str)
                                          and isinstance(v, (int, float)) and not isinstance(v, bool)
                                          and np.isfinite(v) and v > 0}
                                         if isinstance(found, dict) else {})

    def get(self, key: str, measure: Callable[[], float]) -> float:
        if key not in self.values:
            self.values[key] = float(measure())
            try:
                write_json(self.path, self.values)
            except OSError:  # an unwritable home only costs a re-measurement next time
                pass
        return self.values[key]


def _random_data(domain: Any, rng: np.random.Generator, episodes: int = 60):
    out = []
    for i in range(episodes):
        t = int(rng.integers(10, 51))
        done = np.zeros(t, bool)
        done[-1] = True
        actions = (rng.integers(0, domain.action_dim, t) if domain.discrete_actions
                   else rng.uniform(-1, 1, (t, domain.action_dim)).astype(np.float32))
        out.append(Episode(task=f"task{i % 4}", instruction=f"phrasing {i % PHRASINGS}",
                           states=rng.normal(size=(t + 1, domain.state_dim)).astype(np.float32), actions=actions,
                           rewards=rng.normal(size=t).astype(np.float32), terminals=done,
                           truncations=np.zeros(t, bool), successes=done.copy()))
    return EpisodeDataset.from_episodes(out, metadata={"action_dim": domain.action_dim})


def _timed(step: Callable[[], Any], seconds: float, warmup: int = 3) -> float:
    for _ in range(warmup):
        step()
    n, start = 0, time.perf_counter()
    while n < 3 or time.perf_counter() - start < seconds:
        step()
        n += 1
    return n / (time.perf_counter() - start)


def measure_update_rate(spec: RunSpec, embedding_dim: int, seconds: float = 1.0) -> float:
    """Gradient steps per second of ``spec``'s algorithm on one seed, on random data of its domain's
    shapes, through the update the runner uses."""
    import torch

    from imaginebench.algos.factory import build_algorithm
    from imaginebench.algos.sampler import MixedReplaySource
    from imaginebench.algos.vectorised import stacked_trainers, trainer_for
    from imaginebench.algos.vectorised.batches import StackedSampler

    resolved = resolve_run(spec)
    domain = resolved.domain
    rng = np.random.default_rng(0)
    data = _random_data(domain, rng)
    vectors = {text: rng.normal(size=embedding_dim).astype(np.float32) for text in data.instructions}
    source = MixedReplaySource({"real": data}, embeddings=vectors, seed=0,
                               action_size=domain.action_dim if domain.discrete_actions else None)
    config = resolved.config()
    batch = int(config.batch_size or spec.batch)
    torch.manual_seed(0)
    algo = build_algorithm(config, source, batch_size=batch, standardize=spec.standardize, total_steps=spec.steps)
    if type(algo).__name__ in stacked_trainers():
        trainer = trainer_for([algo])
        sampler = StackedSampler(source, [np.random.default_rng(0)], algo.impl.device, algo.config.observation_scaler,
                                 algo.config.action_scaler)
        return _timed(lambda: trainer.step(sampler.sample(trainer.source_rows(batch))), seconds)
    return _timed(lambda: config.update(algo, source, batch), seconds)


def measure_dynamics_epoch(spec: RunSpec, embedding_dim: int, transitions: int, seconds: float = 1.0) -> float:
    """Seconds of one epoch of COMBO's dynamics fit over ``transitions`` (its steps of 256 rows per
    member timed on random data of the domain's width, through the ensemble's own loss and Adam)."""
    import torch
    import torch.nn.functional as F

    from imaginebench.algos.combo.dynamics import GaussianEnsemble

    resolved = resolve_run(spec)
    domain = resolved.domain
    cfg = resolved.config()
    in_dim = domain.state_dim + embedding_dim + domain.action_dim
    ensemble = GaussianEnsemble(cfg.ensemble_size, cfg.n_elites, in_dim, domain.state_dim + 1,
                                cfg.dynamics_hidden_units, (domain.state_dim, domain.state_dim + embedding_dim))
    optim = torch.optim.Adam(ensemble.parameters(), lr=cfg.dynamics_learning_rate)
    m, b = cfg.ensemble_size, cfg.dynamics_batch_size
    x, y = torch.randn(m, b, in_dim), torch.randn(m, b, domain.state_dim + 1)

    def step() -> None:
        mean, logvar, logit = ensemble(x)
        loss = ((mean - y) ** 2 * torch.exp(-logvar) + logvar).mean() + F.softplus(logit).mean()
        optim.zero_grad()
        loss.backward()
        optim.step()

    per_step = 1.0 / _timed(step, seconds)
    train_rows = transitions - min(cfg.dynamics_max_holdout, int(transitions * cfg.dynamics_holdout_ratio))
    return per_step * -(-train_rows // b)


def _dataset_transitions(spec: RunSpec) -> int | None:
    """Transitions of ``spec``'s training data in the data home (``None`` when it is not there yet)."""
    try:
        sources, _, _ = load_sources(spec, spec.env_id)
    except (FileNotFoundError, OSError, ValueError):
        return None
    return int(sum(d.num_transitions for d in sources.values()))


def measure_evaluation(spec: RunSpec, level: str) -> float:
    """Seconds of one checkpoint's evaluation of ``level`` by the protocol (``spec``'s episodes per
    task and seed), with a policy that acts at random: every episode runs to its horizon."""
    domain = load_domain(spec.env_id)
    rng = np.random.default_rng(0)

    def act(observations: np.ndarray) -> np.ndarray:
        n = len(observations)
        if domain.discrete_actions:
            return rng.integers(0, domain.action_dim, n)
        return rng.uniform(-1, 1, (n, domain.action_dim)).astype(np.float32)

    evaluator = Evaluator(domain.env_id, level, spec.episodes_per_task, spec.seed, get_encoder(spec.encoder),
                          pool=spec.eval_pool)
    try:
        start = time.perf_counter()
        evaluator(act)
        return time.perf_counter() - start
    finally:
        evaluator.close()


@dataclass(frozen=True)
class GridEstimate:
    """Core-seconds of a grid's runs (one core per run), split into training and evaluation."""

    runs: int
    train_s: float
    eval_s: float
    per_algo: dict[str, float]
    note: str = ""

    @property
    def core_hours(self) -> float:
        return (self.train_s + self.eval_s) / 3600.0

    def describe(self, cpus: int | None = None) -> str:
        algos = ", ".join(f"{a} {_hours(s)}" for a, s in sorted(self.per_algo.items(), key=lambda kv: -kv[1]))
        total = self.train_s + self.eval_s
        wall = f"; ~{_hours(total / cpus)} wall on {cpus} CPUs" if cpus else ""
        return (f"estimated cost: {self.runs} runs, ~{_hours(total)} of one core (training {_hours(self.train_s)}, "
                f"evaluation {_hours(self.eval_s)}; by algorithm: {algos}){wall}. Measured on this machine; runs "
                "already done are skipped, so this is an upper bound." + (f" {self.note}." if self.note else ""))


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 360 else f"{seconds / 60:.1f} min"


def estimate(specs: Iterable[RunSpec], cache: RateCache | None = None, seconds: float = 1.0,
             threads: int = 1) -> GridEstimate:
    """The cost of training ``specs`` one after another on this machine, each run with ``threads``
    torch threads (the grid's ``--cpus-per-run``); measured with that many threads."""
    import torch

    cache = cache or RateCache(threads=threads)
    before = torch.get_num_threads()
    torch.set_num_threads(cache.threads)
    try:
        return _estimate(specs, cache, seconds)
    finally:
        torch.set_num_threads(before)


def _estimate(specs: Iterable[RunSpec], cache: RateCache, seconds: float) -> GridEstimate:
    train_s = eval_s = 0.0
    per_algo: dict[str, float] = {}
    dims: dict[str | None, int] = {}
    fits: dict[tuple, float] = {}  # COMBO: one dynamics fit per dataset, shared by its seeds and cells
    unpriced: set[str] = set()
    count = 0
    for spec in specs:
        count += 1
        resolved = resolve_run(spec)
        if spec.encoder not in dims:
            dims[spec.encoder] = int(get_encoder(spec.encoder).dim)
        dim = dims[spec.encoder]
        cfg = resolved.config()  # the domain card's settings and the run's options: what the rate depends on
        options = json.dumps(cfg.to_dict(), sort_keys=True, default=str)
        if resolved.algo.name == "combo":
            dynamics = json.dumps({k: v for k, v in cfg.to_dict().items() if k.startswith("dynamics_")
                                   or k in ("ensemble_size", "n_elites")}, sort_keys=True, default=str)
            data_key = (resolved.env_id, spec.level, spec.data, spec.profile_name, spec.encoder, dynamics)
            if data_key not in fits:
                n = _dataset_transitions(spec)
                if n is None or cfg.dynamics_max_epochs is None:
                    fits[data_key] = 0.0
                    unpriced.add("data not built yet" if n is None else "no epoch cap")
                else:
                    fkey = f"dynamics-epoch v{RATES_VERSION} {resolved.env_id} {dim} {dynamics} {n}"
                    epoch = cache.get(fkey, lambda: measure_dynamics_epoch(spec, dim, n, seconds))
                    fits[data_key] = cfg.dynamics_max_epochs * epoch
                    train_s += fits[data_key]
                    per_algo["combo"] = per_algo.get("combo", 0.0) + fits[data_key]
        key = f"update v{RATES_VERSION} {resolved.env_id} {resolved.algo.name} {spec.batch} {dim} {spec.standardize} {options}"
        rate = cache.get(key, lambda: measure_update_rate(spec, dim, seconds))
        run_train = spec.steps / rate
        checkpoints = spec.evaluated_checkpoints
        run_eval = 0.0
        for level in eval_levels(spec.level):
            ekey = f"eval {resolved.env_id} {level} {spec.episodes_per_task} {spec.eval_pool}"
            run_eval += checkpoints * cache.get(ekey, lambda: measure_evaluation(spec, level))
        train_s += run_train
        eval_s += run_eval
        per_algo[resolved.algo.name] = per_algo.get(resolved.algo.name, 0.0) + run_train + run_eval
    note = (f"COMBO's dynamics fits: {sum(1 for v in fits.values() if v)} of {len(fits)} priced"
            + (f" (the rest: {', '.join(sorted(unpriced))})" if unpriced else "")) if fits else ""
    return GridEstimate(count, train_s, eval_s, per_algo, note)
