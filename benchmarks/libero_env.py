"""LIBERO-v0 measurements: env steps/s against the bare LIBERO env, and the re-simulation error of
``set_state`` per kind of state dim (the basis of its transition tolerance).

Run ``python benchmarks/libero_env.py --speed`` or ``--resim`` (prints a table; ``--json PATH``
writes it too).  Expert and random success per task come from the shared
``imaginebench calibrate --env LIBERO-v0``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from harness import Report, add_json_argument
from imaginebench.domains.libero import layout as L


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
    parser.add_argument("--speed", action="store_true", help="measure steps/s against the bare LIBERO env")
    parser.add_argument("--resim", action="store_true", help="measure set_state re-simulation errors")
    add_json_argument(parser)
    args = parser.parse_args()
    if not (args.speed or args.resim):
        parser.error("choose --speed or --resim")
    report = Report(__file__, args.json)
    if args.speed:
        steps, rounds = 100, 5
        out = speed(steps, rounds)
        table = report.table(f"LIBERO-v0 against the bare LIBERO env: steps/s of random actions, {rounds} alternating "
                             f"blocks of {steps} steps",
                             ["env", "steps/s", "vs bare", "construction s", "reset s"],
                             {"steps/s": "{:.1f}", "vs bare": "{:.2f}", "construction s": "{:.1f}",
                              "reset s": "{:.2f}"})
        table.add("LIBERO-v0 (LiberoEnv.step)", out["libero_v0_steps_per_s"], out["ratio"], out["construct_seconds"],
                  out["reset_seconds"])
        table.add("bare LIBERO ControlEnv.step, same scene", out["bare_steps_per_s"], None,
                  out["bare_construct_seconds"], None)
    else:
        table = report.table("set_state re-simulation error |set_state(s) + step(a) - s'| per kind of state dim, "
                             "expert transitions", ["state dims", "max", "p99", "p90", "transitions"],
                             {"max": "{:.3g}", "p99": "{:.3g}", "p90": "{:.3g}", "transitions": "{}"})
        for name, errors in resim_by_group().items():
            table.add(name, errors["max"], errors["p99"], errors["p90"], errors["transitions"])
    report.finish()


if __name__ == "__main__":
    main()
