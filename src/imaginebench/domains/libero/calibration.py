"""Calibration and speed of LIBERO-v0: expert and random success per task, re-simulation error of
``set_state``, and env steps/s against the bare LIBERO env.

Run ``python -m imaginebench.domains.libero.calibration --episodes 20 --random 10`` (prints one
line per task and writes a JSON report with ``--out``).  The numbers in ``notes/libero.md`` come
from this module.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from imaginebench.domains.libero import layout as L


@dataclass
class TaskCalibration:
    """Outcome of one task's expert and random episodes."""

    task: str
    level: str
    expert_episodes: int
    expert_success: float
    expert_max_length: int
    expert_mean_length: float
    expert_seconds_per_episode: float
    random_episodes: int
    random_success: float
    resim_max_error: float = float("nan")
    """Largest |set_state(s) + step(a) - s'| over all dims and the checked expert transitions."""
    resim_p99_error: float = float("nan")
    failures: list[int] = field(default_factory=list)
    """Seeds of the failed expert episodes."""


def run_episode(env, task: str, seed: int, policy: str, rng: np.random.Generator | None = None):
    """One episode; returns (success, length, states, actions)."""
    obs, _ = env.reset(seed=seed, options={"task": task})
    states, actions = [np.asarray(env.state).copy()], []
    info = {"is_success": False}
    while True:
        if policy == "expert":
            action = env.expert_action()
        else:
            assert rng is not None
            action = rng.uniform(-1.0, 1.0, L.ACTION_DIM).astype(np.float32)
        obs, _, terminated, truncated, info = env.step(action)
        states.append(np.asarray(info["state"]).copy())
        actions.append(np.asarray(action, dtype=np.float64))
        if terminated or truncated:
            return bool(info["is_success"]), len(actions), states, actions


def resim_errors(env, states: list[np.ndarray], actions: list[np.ndarray], every: int) -> list[float]:
    """``max |set_state(s_t) + step(a_t) - s_{t+1}|`` for every ``every``-th transition."""
    out = []
    for t in range(0, len(actions), every):
        env.set_state(states[t])
        nxt = env.step(actions[t])[4]["state"]
        out.append(float(np.abs(np.asarray(nxt) - states[t + 1]).max()))
    return out


GROUPS = {
    "joints (rad)": L.JOINTS, "eef position (m)": L.EEF_POS, "eef quaternion": L.EEF_QUAT,
    "fingers (m)": L.GRIPPER,
    "object positions (m)": np.r_[tuple(np.arange(L.pos_slice(e).start, L.pos_slice(e).stop) for e in L.ENTITIES)],
    "object quaternions": np.r_[tuple(np.arange(L.quat_slice(e).start, L.quat_slice(e).stop) for e in L.ENTITIES)],
}
"""State dims grouped by kind, for the re-simulation error report."""


def resim_by_group(tasks=(("easy", "pick_place_soup"), ("easy", "pick_place_dressing"), ("hard", "basket_all")),
                   episodes: int = 2, seed: int = 200_000) -> dict[str, dict[str, float]]:
    """Per kind of state dim: max and 99th percentile of ``|set_state(s) + step(a) - s'|`` over every
    transition of ``episodes`` expert episodes of each task."""
    from imaginebench.domains.libero.env import LiberoEnv

    errors: dict[str, list[float]] = {name: [] for name in GROUPS}
    envs: dict[str, LiberoEnv] = {}
    try:
        for level, task in tasks:
            env = envs.setdefault(level, LiberoEnv(level))
            for i in range(episodes):
                _, _, states, actions = run_episode(env, task, seed + i, "expert")
                for t in range(len(actions)):
                    env.set_state(states[t])
                    diff = np.abs(np.asarray(env.step(actions[t])[4]["state"]) - states[t + 1])
                    for name, index in GROUPS.items():
                        errors[name].append(float(diff[index].max()))
    finally:
        for env in envs.values():
            env.close()
    return {name: {"max": max(v), "p99": float(np.percentile(v, 99)), "p90": float(np.percentile(v, 90)),
                   "transitions": len(v)} for name, v in errors.items()}


def calibrate(levels=("train", "easy", "hard"), episodes: int = 20, random_episodes: int = 10,
              seed: int = 100_000, resim_episodes: int = 2, resim_every: int = 5, tasks=None,
              log=print) -> list[TaskCalibration]:
    """Expert and random success of every task of ``levels`` (seeds ``seed + i``)."""
    from imaginebench.domains.libero.env import LiberoEnv

    results = []
    for level in levels:
        env = LiberoEnv(level)
        try:
            for task in env.tasks:
                if tasks and task not in tasks:
                    continue
                ok, lengths, errors, failures = 0, [], [], []
                start = time.perf_counter()
                for i in range(episodes):
                    success, length, states, actions = run_episode(env, task, seed + i, "expert")
                    ok += success
                    lengths.append(length)
                    if not success:
                        failures.append(seed + i)
                    if i < resim_episodes:
                        errors += resim_errors(env, states, actions, resim_every)
                seconds = (time.perf_counter() - start) / max(episodes, 1)
                rng = np.random.default_rng(seed)
                random_ok = sum(run_episode(env, task, seed + 50_000 + i, "random", rng)[0]
                                for i in range(random_episodes))
                row = TaskCalibration(
                    task=task, level=level, expert_episodes=episodes, expert_success=ok / max(episodes, 1),
                    expert_max_length=max(lengths, default=0), expert_mean_length=float(np.mean(lengths)) if lengths else 0.0,
                    expert_seconds_per_episode=seconds, random_episodes=random_episodes,
                    random_success=random_ok / max(random_episodes, 1),
                    resim_max_error=max(errors, default=float("nan")),
                    resim_p99_error=float(np.percentile(errors, 99)) if errors else float("nan"),
                    failures=failures,
                )
                results.append(row)
                log(f"{level:5s} {task:30s} expert {ok:3d}/{episodes} (max len {row.expert_max_length:3d}, "
                    f"{seconds:5.1f} s/ep)  random {random_ok}/{random_episodes}  "
                    f"resim max {row.resim_max_error:.4f} p99 {row.resim_p99_error:.4f}")
        finally:
            env.close()
    return results


def speed(steps: int = 100, rounds: int = 5, seed: int = 0) -> dict[str, float]:
    """Steps/s of random actions: LIBERO-v0's env against the bare LIBERO ``ControlEnv`` of the same
    scene (same BDDL problem, controller and settings, no cameras).  Both are built and warmed up
    first, then timed in ``rounds`` alternating blocks of ``steps`` steps each, so load from other
    processes on a shared machine hits both alike; the ratio is of the summed times."""
    import os
    import tempfile

    from imaginebench.domains.libero.env import LiberoEnv
    from imaginebench.domains.libero.physics import BDDL, CONTROL_FREQ, import_libero

    rng = np.random.default_rng(seed)
    actions = rng.uniform(-1.0, 1.0, (steps, L.ACTION_DIM))
    out: dict[str, float] = {}
    start = time.perf_counter()
    env = LiberoEnv("train")
    out["construct_seconds"] = time.perf_counter() - start
    env.reset(seed=seed, options={"task": "pick_soup"})
    start = time.perf_counter()
    env.reset(seed=seed + 1, options={"task": "pick_soup"})
    out["reset_seconds"] = time.perf_counter() - start

    env_wrapper = import_libero()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "scene.bddl")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(BDDL)
        start = time.perf_counter()
        bare = env_wrapper.ControlEnv(bddl_file_name=path, use_camera_obs=False, has_renderer=False,
                                      has_offscreen_renderer=False, hard_reset=False, ignore_done=True,
                                      horizon=10**9, control_freq=CONTROL_FREQ, camera_names=[])
        bare.reset()
        out["bare_construct_seconds"] = time.perf_counter() - start
    for a in actions[:20]:
        env.step(a)
        bare.step(a)
    ours = theirs = 0.0
    for _ in range(rounds):
        env.reset(seed=seed, options={"task": "pick_soup"})
        bare.reset()
        start = time.perf_counter()
        for a in actions:
            env.step(a)
        ours += time.perf_counter() - start
        start = time.perf_counter()
        for a in actions:
            bare.step(a)
        theirs += time.perf_counter() - start
    env.close()
    bare.close()
    out["libero_v0_steps_per_s"] = rounds * steps / ours
    out["bare_steps_per_s"] = rounds * steps / theirs
    out["ratio"] = theirs / ours
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--random", type=int, default=10)
    parser.add_argument("--seed", type=int, default=100_000)
    parser.add_argument("--levels", default="train,easy,hard")
    parser.add_argument("--tasks", default="")
    parser.add_argument("--speed", action="store_true", help="only measure steps/s")
    parser.add_argument("--resim", action="store_true", help="only measure set_state re-simulation errors")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    if args.speed or args.resim:
        report: object = speed() if args.speed else resim_by_group()
        print(json.dumps(report, indent=2))
    else:
        rows = calibrate(tuple(args.levels.split(",")), args.episodes, args.random, args.seed,
                         tasks=[t for t in args.tasks.split(",") if t])
        report = [asdict(r) for r in rows]
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2)


if __name__ == "__main__":
    main()
