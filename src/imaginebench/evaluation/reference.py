"""Reference policies: what chance and the expert score, per task and per level.

Two uses, one episode runner:

* **Reference scores of a run** (:func:`reference_scores`): the uniformly random policy and
  the scripted expert run the *same* episodes as a run's evaluation (the protocol's
  ``(task, reset seed)`` schedule of :meth:`Evaluator.schedule`), so a result can be read
  against chance and against the expert. They are cached under
  ``<data home>/references/<env>/<level>/ept<k>-seed<s>.json`` and stored in run records;
  the report turns them into reference rows and a normalised score
  (:func:`normalised_score`: 0 = random, 100 = expert, as D4RL does).
* **Calibration** (:func:`calibrate_task`): per task, expert and random success over many
  episodes with a 95% Wilson interval; random episodes are added until the interval lies on
  one side of the 5% threshold (docs/benchmark.md §3) (or a cap is reached), so the verdict is resolved.

The random policy draws uniformly from the action space, seeded from the episode's reset
seed, so reference scores are reproducible.
"""

from __future__ import annotations

import json
import math
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Literal, Sequence

import numpy as np

from imaginebench import limits
from imaginebench.config import data_home
from imaginebench.envs.registry import load_domain, make
from imaginebench.evaluation.protocol import Evaluator
from imaginebench.fileio import write_json, write_text
from imaginebench.processes import worker_pool
from imaginebench.version import __version__

ReferencePolicy = Literal["random", "expert"]
REFERENCE_POLICIES: tuple[str, ...] = ("random", "expert")
RANDOM_MAX = 0.05
"""docs/benchmark.md §3: a uniformly random policy succeeds in at most 5% of a task's episodes."""
EXPERT_MIN = 0.90
"""docs/benchmark.md §3: the expert succeeds in at least 90% of a task's episodes."""
Z95 = 1.959964
"""Two-sided 95% normal quantile (Wilson interval)."""
REFERENCE_SCHEMA = 1


def wilson_interval(successes: int, episodes: int, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval of a binomial rate (stays inside [0, 1], sane at 0 and n)."""
    if episodes <= 0:
        return 0.0, 1.0
    p = successes / episodes
    denom = 1 + z * z / episodes
    centre = (p + z * z / (2 * episodes)) / denom
    half = z * math.sqrt(p * (1 - p) / episodes + z * z / (4 * episodes * episodes)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def run_episode(env: Any, task: str, reset_seed: int, policy: str) -> tuple[bool, int]:
    """One episode of ``policy`` ("random" or "expert") on ``task``; (success, steps)."""
    if policy not in REFERENCE_POLICIES:
        raise ValueError(f"Unknown reference policy {policy!r}; choose one of {REFERENCE_POLICIES}.")
    env.reset(seed=int(reset_seed), options={"task": task})
    env.action_space.seed(int(reset_seed))
    unwrapped = env.unwrapped
    steps, info, done = 0, {"is_success": False}, False
    while not done:
        action = unwrapped.expert_action() if policy == "expert" else env.action_space.sample()
        _, _, terminated, truncated, info = env.step(action)
        steps += 1
        done = terminated or truncated
    return bool(info["is_success"]), steps


def _make(env_id: str, level: str) -> Any:
    return make(env_id, level=level, encode_instruction=False)


# ------------------------------------------------------------------ reference scores of a run
def reference_path(env_id: str, level: str, episodes_per_task: int, seed: int) -> Path:
    return data_home() / "references" / env_id / level / f"ept{int(episodes_per_task)}-seed{int(seed)}.json"


def _level_reference(env_id: str, level: str, episodes_per_task: int, seed: int) -> dict[str, Any]:
    evaluator = Evaluator(env_id, level, episodes_per_task, seed, encoder=None)
    try:
        schedule = evaluator.schedule()
        env = evaluator.envs[0]
        out: dict[str, Any] = {"schema_version": REFERENCE_SCHEMA, "version": __version__,
                               "env": env_id, "level": level,
                               "episodes_per_task": int(episodes_per_task), "seed": int(seed),
                               "episodes": len(schedule)}
        for policy in REFERENCE_POLICIES:
            per_task: dict[str, list[bool]] = {}
            for task, reset_seed in schedule:
                per_task.setdefault(task, []).append(run_episode(env, task, reset_seed, policy)[0])
            flat = [s for v in per_task.values() for s in v]
            out[policy] = {"success": float(np.mean(flat)),
                           "per_task": {t: float(np.mean(v)) for t, v in per_task.items()}}
    finally:
        evaluator.close()
    return out


def _usable_reference(found: Any, env_id: str, level: str, episodes_per_task: int, seed: int, version: str) -> bool:
    """Whether a cached reference file is this package version's, for these episodes, and holds a
    success rate in [0, 1] wherever one belongs (a damaged or hand-edited file is not trusted)."""
    def rate(x: Any) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool) and 0.0 <= float(x) <= 1.0

    if not isinstance(found, dict):
        return False
    same = (found.get("schema_version") == REFERENCE_SCHEMA and found.get("version") == version
            and found.get("env") == env_id and found.get("level") == level
            and found.get("episodes_per_task") == int(episodes_per_task) and found.get("seed") == int(seed))
    if not same:
        return False
    for policy in REFERENCE_POLICIES:
        entry = found.get(policy)
        if not (isinstance(entry, dict) and rate(entry.get("success")) and isinstance(entry.get("per_task"), dict)
                and entry["per_task"] and all(isinstance(k, str) and rate(v) for k, v in entry["per_task"].items())):
            return False
    return True


def reference_scores(env_id: str, level: str, episodes_per_task: int, seed: int,
                     *, cache: bool = True) -> dict[str, Any]:
    """Random and expert success on exactly the episodes a run seeded ``seed`` evaluates.

    Returns ``{"random": {"success", "per_task"}, "expert": {...}, "episodes", ...}``; cached
    on disk (a damaged or hand-edited cache file, or one written by another package version or
    for other episodes, is recomputed and rewritten: never trusted, never fatal).
    """
    path = reference_path(env_id, level, episodes_per_task, seed)
    if cache and path.exists():
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # unreadable, not UTF-8, not JSON: computed again below
            found = None
        if _usable_reference(found, env_id, level, episodes_per_task, seed, __version__):
            return found
    result = _level_reference(env_id, level, episodes_per_task, seed)
    if cache:
        write_json(path, result)
    return result


def normalised_score(success: float, random: float, expert: float) -> float:
    """``100 · (success − random) / (expert − random)``; NaN when the expert is not above chance."""
    if not all(math.isfinite(v) for v in (success, random, expert)) or expert - random <= 1e-9:
        return float("nan")
    return 100.0 * (success - random) / (expert - random)


# ------------------------------------------------------------------ calibration per task
@dataclass(frozen=True)
class TaskCalibration:
    """Expert and random success of one task, with 95% Wilson intervals."""

    level: str
    task: str
    expert_successes: int
    expert_episodes: int
    random_successes: int
    random_episodes: int

    @property
    def expert(self) -> float:
        return self.expert_successes / self.expert_episodes

    @property
    def random(self) -> float:
        return self.random_successes / self.random_episodes

    @property
    def expert_ci(self) -> tuple[float, float]:
        return wilson_interval(self.expert_successes, self.expert_episodes)

    @property
    def random_ci(self) -> tuple[float, float]:
        return wilson_interval(self.random_successes, self.random_episodes)

    @property
    def verdict(self) -> str:
        """``ok``, ``random>5%`` (interval above 5%), ``random≈5%`` (interval contains 5%),
        ``expert<90%`` — judged on the 95% intervals."""
        if self.expert_ci[1] < EXPERT_MIN:
            return "expert<90%"
        lo, hi = self.random_ci
        if lo > RANDOM_MAX:
            return "random>5%"
        if hi > RANDOM_MAX:
            return "random≈5%"
        return "ok"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "expert": self.expert, "random": self.random,
                "expert_ci": list(self.expert_ci), "random_ci": list(self.random_ci), "verdict": self.verdict}


def calibration_seed(seed: int, task: str, policy: str, index: int) -> int:
    """Reset seed of calibration episode ``index``: distinct per task (no shared seeds across tasks)."""
    tag = zlib.crc32(f"{task}/{policy}".encode())
    return int(np.random.SeedSequence([int(seed), 0xCA1B, tag, int(index)]).generate_state(1)[0])


def calibrate_task(env_id: str, level: str, task: str, *, expert_episodes: int = 100,
                   random_episodes: int = 100, max_random_episodes: int = 2000,
                   seed: int = 0, env: Any = None) -> TaskCalibration:
    """Expert over ``expert_episodes``; random over ``random_episodes``, doubled until its 95%
    interval lies on one side of 5% or ``max_random_episodes`` are spent."""
    if min(expert_episodes, random_episodes) <= 0 or max_random_episodes < random_episodes:
        raise ValueError("Calibration needs positive episode counts and max_random_episodes ≥ random_episodes.")
    own = env is None
    env = env if env is not None else _make(env_id, level)
    try:
        expert = sum(run_episode(env, task, calibration_seed(seed, task, "expert", i), "expert")[0]
                     for i in range(expert_episodes))
        wins, n, target = 0, 0, random_episodes
        while True:
            wins += sum(run_episode(env, task, calibration_seed(seed, task, "random", i), "random")[0]
                        for i in range(n, target))
            n = target
            lo, hi = wilson_interval(wins, n)
            if not (lo <= RANDOM_MAX <= hi) or n >= max_random_episodes:
                break
            target = min(2 * n, max_random_episodes)
    finally:
        if own:
            env.close()
    return TaskCalibration(level, task, int(expert), int(expert_episodes), int(wins), int(n))


def _calibrate_job(args: tuple) -> TaskCalibration:
    env_id, level, task, kwargs = args
    return calibrate_task(env_id, level, task, **kwargs)


def calibrate(env_id: str, levels: Sequence[str] = ("train", "easy", "hard"), *, workers: int = 1,
              tasks: Iterable[str] | None = None, progress: bool = False, **kwargs: Any) -> list[TaskCalibration]:
    """:func:`calibrate_task` for every task of ``levels`` (optionally only ``tasks``)."""
    from tqdm.auto import tqdm



    workers = limits.workers("--workers", workers)
    domain = load_domain(env_id)
    wanted = set(tasks) if tasks is not None else None
    jobs = [(env_id, level, t.name, kwargs) for level in levels for t in domain.tasks(level)
            if wanted is None or t.name in wanted]
    bar = dict(total=len(jobs), desc=f"calibrate {env_id}", unit="task", disable=not progress)
    if workers <= 1:
        return [_calibrate_job(j) for j in tqdm(jobs, **bar)]
    with worker_pool(min(workers, len(jobs))) as pool:
        return list(tqdm(pool.map(_calibrate_job, jobs, chunksize=1), **bar))


def calibration_summary(rows: Sequence[TaskCalibration]) -> list[str]:
    """Markdown lines: one row per level (tasks, expert minimum, random mean and maximum, verdict counts)."""
    pct = lambda v: f"{100 * v:.1f}"  # noqa: E731
    lines = ["| level | tasks | expert min | random mean | random max | ok | random>5% | random≈5% | expert<90% |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for level in dict.fromkeys(r.level for r in rows):
        group = [r for r in rows if r.level == level]
        count = {v: sum(r.verdict == v for r in group) for v in ("ok", "random>5%", "random≈5%", "expert<90%")}
        lines.append(f"| {level} | {len(group)} | {pct(min(r.expert for r in group))}% | "
                     f"{pct(float(np.mean([r.random for r in group])))}% | {pct(max(r.random for r in group))}% | "
                     + " | ".join(str(count[v]) for v in count) + " |")
    return lines


def calibration_markdown(env_id: str, rows: Sequence[TaskCalibration], *, wall_s: float | None = None) -> str:
    """The calibration table (one row per task) with a summary per level."""
    pct = lambda v: f"{100 * v:.1f}"  # noqa: E731
    lines = [f"# Calibration of {env_id}", "",
             "Expert and uniformly random policy per task: successes / episodes, rate and 95% Wilson "
             "interval. Random episodes were doubled from the first count until the interval lay on one "
             f"side of {RANDOM_MAX:.0%} or the cap was reached. Verdicts: `ok`; `random>5%` (whole interval "
             "above 5%); `random≈5%` (interval still contains 5% at the cap); `expert<90%`.", "",
             "| level | task | expert | expert 95% CI | random | random 95% CI | episodes (random) | verdict |",
             "|---|---|---:|---|---:|---|---:|---|"]
    for r in rows:
        (elo, ehi), (rlo, rhi) = r.expert_ci, r.random_ci
        lines.append(f"| {r.level} | {r.task} | {pct(r.expert)}% | {pct(elo)}–{pct(ehi)} | {pct(r.random)}% "
                     f"| {pct(rlo)}–{pct(rhi)} | {r.random_episodes} | {r.verdict} |")
    lines += [""] + calibration_summary(rows)
    if wall_s is not None:
        lines += ["", f"{sum(r.expert_episodes + r.random_episodes for r in rows):,} episodes in {wall_s:.0f} s."]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ stored calibration
CALIBRATION_SCHEMA = 1


def calibration_path(env_id: str) -> Path:
    """``<data home>/calibration/<env id>.json`` (the markdown table lies beside it as ``.md``)."""
    return data_home() / "calibration" / f"{env_id}.json"


def load_calibration(env_id: str) -> tuple[list[TaskCalibration], dict[str, Any]] | None:
    """The stored calibration of ``env_id`` (rows, settings), or ``None`` when there is none.

    A damaged file raises ``ValueError`` naming it."""
    path = calibration_path(env_id)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        fields = ("level", "task", "expert_successes", "expert_episodes", "random_successes", "random_episodes")
        rows = [TaskCalibration(**{k: r[k] for k in fields}) for r in data["rows"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"Calibration file {path} is damaged ({type(exc).__name__}: {exc}); delete it and run: "
                         f"imaginebench calibrate --env {env_id}") from None
    return rows, {k: v for k, v in data.items() if k != "rows"}


def save_calibration(env_id: str, rows: Sequence[TaskCalibration], settings: dict[str, Any],
                     wall_s: float | None = None) -> Path:
    """Store ``rows`` as the calibration of ``env_id`` (JSON + markdown beside it).

    Rows of tasks measured before and not in ``rows`` are kept; a task measured again is replaced."""
    stored = load_calibration(env_id)
    merged = {(r.level, r.task): r for r in (stored[0] if stored else [])}
    merged.update({(r.level, r.task): r for r in rows})
    path = calibration_path(env_id)
    write_json(path, {"schema_version": CALIBRATION_SCHEMA, "version": __version__, "env": env_id,
                      **settings, "rows": [r.to_dict() for r in merged.values()]})

    write_text(path.with_suffix(".md"), calibration_markdown(env_id, list(merged.values()),
                                                                   wall_s=None if stored else wall_s))
    return path
