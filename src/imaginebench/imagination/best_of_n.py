"""Best-of-N: candidates per task, round by round, until each task has its quota of kept
rollouts (the keep policy of :mod:`imaginebench.imagination.filters`) or its candidate budget is
spent; rounds are stored on disk so a killed level resumes to the same dataset."""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from imaginebench.data.collect import episode_seed, rollout
from imaginebench.data.dataset import Episode, EpisodeDataset
from imaginebench.data.storage import load_dataset, save_dataset
from imaginebench.domains.base import Domain
from imaginebench.envs.registry import make
from imaginebench.errors import UsageError
from imaginebench.fileio import write_json
from imaginebench.imagination.decoding import GenerateConfig, StartSampler, imagine
from imaginebench.imagination.filters import honest_ok

logger = logging.getLogger("imaginebench.imagination")


def task_quotas(task_names: Sequence[str], n: int) -> dict[str, int]:
    """Split ``n`` rollouts over tasks as evenly as possible (the first ``n % T`` get one more)."""
    t = len(task_names)
    return {name: n // t + (1 if i < n % t else 0) for i, name in enumerate(task_names)}


def required_steps(env_id: str, level: str, episodes_per_task: int = 2, seed: int = 7) -> dict[str, int]:
    """Steps each of ``level``'s tasks needs: the longest expert episode over a few resets.

    Used only as a floor under ``--max-steps`` (the step cap is a compute knob and must not
    cut rollouts shorter than the tasks need); never to judge imagined rollouts.
    """
    env = make(env_id, level=level, encode_instruction=False)
    try:
        need: dict[str, int] = {}
        for i, name in enumerate(env.unwrapped.tasks):
            lengths = [len(rollout(env, name, episode_seed(seed, i * episodes_per_task + k)))
                       for k in range(episodes_per_task)]
            need[name] = max(lengths)
        return need
    finally:
        env.close()


def _round_robin(per_task: Mapping[str, list[Episode]]) -> list[Episode]:
    """Interleave tasks: first rollout of every task, then the second, ..."""
    depth = max((len(v) for v in per_task.values()), default=0)
    return [eps[i] for i in range(depth) for eps in per_task.values() if i < len(eps)]


@dataclass
class BestOfN:
    """What best-of-N generation produced for one level."""

    kept: list[Episode]
    unfiltered: list[Episode]
    candidates: list[Episode]
    per_task: dict[str, dict[str, int]]
    throughput: dict[str, float]
    oracle_checked: int = 0
    resumed_rounds: int = 0
    """Rounds read back from an interrupted run's ``.partial`` folder (0: a fresh run)."""

    @property
    def generated(self) -> int:
        return sum(v["candidates"] for v in self.per_task.values())


class RoundStore:
    """Best-of-N's rounds on disk, so that a level killed mid-way resumes to the same dataset.

    A folder ``<dataset>.partial/`` holds one ``round-NNNN.npz`` per finished round (its
    candidates, in the storage format) and ``state.json`` (written last, atomically): the
    settings the run was started with, each round's file, its keep flags, the start sampler's
    position, the sampling generator's state and the time spent.  A round written but not yet
    in ``state.json`` (a kill between the two writes) is ignored and redone.  The rounds are
    deterministic given that state, so resuming gives the dataset an uninterrupted run gives.
    """

    STATE = "state.json"

    def __init__(self, folder: Path, settings: Mapping[str, Any]) -> None:
        self.folder = Path(folder)
        self.settings = json.loads(json.dumps(settings, default=str))
        self.rounds: list[dict[str, Any]] = []
        self.extra: dict[str, Any] = {}

    def load(self) -> list[tuple[list[Episode], np.ndarray]]:
        """The finished rounds (candidates, keep flags); [] for a fresh run.  Raises
        ``UsageError`` when the folder was started with other settings."""
        path = self.folder / self.STATE
        if not path.exists():
            return []
        state = json.loads(path.read_text())
        if state.get("settings") != self.settings:
            diff = sorted(k for k in set(self.settings) | set(state.get("settings", {}))
                          if self.settings.get(k) != state.get("settings", {}).get(k))
            raise UsageError(f"{self.folder} holds a generation started with other settings ({', '.join(diff)}); "
                             "pass --overwrite to start the level over.")
        self.rounds, self.extra = list(state["rounds"]), dict(state["extra"])
        return [(list(load_dataset(self.folder / r["file"], verify=False)), np.asarray(r["ok"], bool))
                for r in self.rounds]

    def append(self, episodes: list[Episode], ok: np.ndarray, metadata: Mapping[str, Any],
               state_dim: int, action_shape: tuple[int, ...], **extra: Any) -> None:
        name = f"round-{len(self.rounds):04d}.npz"
        save_dataset(EpisodeDataset.from_episodes(episodes, metadata=dict(metadata), state_dim=state_dim,
                                                  action_shape=action_shape), self.folder / name, overwrite=True)
        self.rounds.append({"file": name, "candidates": len(episodes), "ok": [bool(x) for x in ok]})
        self.extra = dict(extra)
        write_json(self.folder / self.STATE, {"settings": self.settings, "rounds": self.rounds, "extra": self.extra})

    def remove(self) -> None:
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)


def best_of_n(model: Any, domain: Domain, sampler: StartSampler, quotas: Mapping[str, int], cfg: GenerateConfig,
              horizons: Mapping[str, int] | None = None, oracle: Callable[[list[Episode]], np.ndarray] | None = None,
              progress: bool = True, desc: str = "imagine", store: RoundStore | None = None,
              ground: Callable[[Episode], Episode | None] | None = None) -> BestOfN:
    """Generate candidates per task until each task has its quota of kept rollouts or its
    budget (``ceil(cfg.budget * quota)`` candidates) is spent.

    Each round asks, per unfinished task, for as many candidates as its kept rate so far
    (Laplace-smoothed) predicts are needed, within the remaining budget.  ``unfiltered`` holds
    each task's first ``quota`` candidates, i.e. the data plain generation would give.
    ``oracle`` (keep mode ``oracle`` only) further checks honest-kept rollouts with the simulator.
    ``store``: rounds are saved there as they finish and a killed run continues from them.
    ``ground`` (keep mode ``grounded``): an honest-kept candidate is kept as what it returns (actions
    checked, or relabelled, by dynamics learned from real data; no simulator), dropped on ``None``.
    """
    gen = torch.Generator().manual_seed(cfg.seed)
    budget = {t: int(math.ceil(cfg.budget * q)) for t, q in quotas.items()}
    kept: dict[str, list[Episode]] = {t: [] for t in quotas}
    first: dict[str, list[Episode]] = {t: [] for t in quotas}
    tried = {t: 0 for t in quotas}
    honest = {t: 0 for t in quotas}
    candidates: list[Episode] = []
    oracle_checked = 0
    seconds = 0.0
    steps = 0
    total = sum(quotas.values())
    bar = tqdm(total=total, desc=desc, unit="kept", disable=not progress)

    def grounded(eps: list[Episode], ok: np.ndarray) -> tuple[np.ndarray, list[Episode]]:
        if ground is None:
            return ok, eps
        out = [ground(ep) if good else None for ep, good in zip(eps, ok)]
        return np.asarray([g is not None for g in out], bool), [g if g is not None else ep for g, ep in zip(out, eps)]

    def take(eps: list[Episode], ok: np.ndarray, stored: list[Episode] | None = None) -> None:
        before = sum(len(v) for v in kept.values())
        for i, (ep, good) in enumerate(zip(eps, ok)):
            t = ep.task
            tried[t] += 1
            honest[t] += int(good)
            candidates.append(ep)
            if len(first[t]) < quotas[t]:
                first[t].append(ep)
            if good and len(kept[t]) < quotas[t]:
                kept[t].append(ep if stored is None else stored[i])
        bar.update(sum(len(v) for v in kept.values()) - before)

    done: list[tuple[list[Episode], np.ndarray]] = []
    if store is not None:
        done = store.load()
        for eps, ok in done:
            take(eps, ok, grounded(eps, ok)[1])  # grounding is deterministic: the same kept rollouts
        if done:
            sampler.count = int(store.extra["sampler_count"])
            gen.set_state(torch.tensor(store.extra["gen_state"], dtype=torch.uint8))
            seconds, steps = float(store.extra["seconds"]), int(store.extra["steps"])
            oracle_checked = int(store.extra.get("oracle_checked", 0))
            msg = (f"{desc}: resuming from {len(done)} finished round{'s' if len(done) != 1 else ''} "
                   f"({len(candidates):,} candidates) in {store.folder}")
            logger.info(msg)
            if progress:
                tqdm.write(msg)
    action_shape = () if domain.discrete_actions else (domain.action_dim,)
    while True:
        requests: list[tuple[str, int]] = []
        for t, q in quotas.items():
            need = q - len(kept[t])
            left = budget[t] - tried[t]
            if need <= 0 or left <= 0:
                continue
            rate = (len(kept[t]) + 1) / (tried[t] + 2)
            requests.append((t, int(min(left, max(need, math.ceil(need / rate))))))
        if not requests:
            break
        starts = [sampler.draw(t) for t, k in requests for _ in range(k)]
        hz = [horizons[s.task.name] if horizons else domain.task_horizon(s.task) for s in starts]
        eps, th = imagine(model, domain, starts, cfg, progress=False, gen=gen, horizons=hz)
        seconds += th["seconds"]
        steps += th["imagined_steps"]
        ok = np.asarray([honest_ok(domain, ep) for ep in eps], bool)
        if oracle is not None and ok.any():
            idx = np.flatnonzero(ok)
            ok[idx] = oracle([eps[i] for i in idx])
            oracle_checked += len(idx)
        ok, stored = grounded(eps, ok)
        take(eps, ok, stored)
        bar.set_postfix(candidates=len(candidates), steps_per_s=f"{steps / seconds:.0f}" if seconds > 0 else "-")
        if store is not None:
            store.append(eps, ok, {"source": "imaginary", "partial": True}, domain.state_dim, action_shape,
                         sampler_count=sampler.count, gen_state=[int(x) for x in gen.get_state().tolist()],
                         seconds=seconds, steps=steps, oracle_checked=oracle_checked)
    bar.close()
    per_task = {t: {"quota": quotas[t], "kept": len(kept[t]), "candidates": tried[t], "passed": honest[t],
                    "budget": budget[t]} for t in quotas}
    throughput = {"seconds": seconds, "imagined_steps": steps,
                  "steps_per_second": steps / seconds if seconds > 0 else math.inf,
                  "rollouts_per_second": len(candidates) / seconds if seconds > 0 else math.inf}
    return BestOfN(kept=_round_robin(kept), unfiltered=_round_robin(first),
                   candidates=candidates, per_task=per_task, throughput=throughput, oracle_checked=oracle_checked,
                   resumed_rounds=len(done))
