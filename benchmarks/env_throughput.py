"""Environment speed against the bare simulator, as ratios measured in one run.

Rows (µs per step and per reset; median over ``--rounds`` alternating rounds, so load from
other processes hits every row alike):

* **CLEVR-v0** ``imaginebench.make(..., encode_instruction=False)``, embedded (``make(...)``),
  and the **bare same-push loop**: raw MuJoCo (``mj_resetData``, ``qpos``/``qvel`` set, ``mj_step``
  until the balls rest) on the very same model, actions and states; the **bare reset**: 10
  uniform coordinates written into ``qpos`` and ``mj_forward`` (no overlap check, no task).
* **BabyAI-v0** raw and embedded, against **its own world core** (``BabyAIWorld.step`` on the same
  actions, no task rules) and **minigrid's stock** ``BabyAI-GoToLocal-v0`` (egocentric image).
* **MetaWorld-v0** (push), **HalfCheetah-v0** (jump_forward) and **LIBERO-v0** (pick_soup), raw and
  embedded, against the simulator they run on: metaworld's own ``SawyerPushEnvV3`` (the class
  ``Meta-World/MT1`` builds, no wrappers), gymnasium's ``HalfCheetah-v5`` and LIBERO's bare
  ``ControlEnv`` of the same scene (``--no-mujoco`` skips them; a domain whose extra is not
  installed is skipped with a line saying so);
* **vector envs**: ``imaginebench.make_vec(ENV, num_envs=8)`` sync and async, steps/s per env
  step and per core, against one env.
* **store**: a fresh data home's first ``make()`` + 3,000 steps vs a warm one (run last; it loads
  the encoder model).

Usage::

    python benchmarks/env_throughput.py [--steps 3000] [--rounds 5] [--no-fresh]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import gymnasium as gym
import numpy as np

import imaginebench


def per_call_us(fn, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def env_rows(env_id: str, steps: int, seed: int = 0) -> dict[str, float]:
    """µs per step (resets excluded) and per reset of the raw and the embedded env."""
    out = {}
    for name, env in (("raw", imaginebench.make(env_id, encode_instruction=False)), ("embedded", imaginebench.make(env_id))):
        env.reset(seed=seed)
        n = env.action_space.n
        rng = np.random.default_rng(seed)
        actions = rng.integers(n, size=steps).tolist()
        step_time = 0.0
        i = 0
        while i < steps:
            start = time.perf_counter()
            _, _, term, trunc, _ = env.step(actions[i])
            step_time += time.perf_counter() - start
            i += 1
            if term or trunc:
                env.reset()
        out[f"{name} step"] = step_time / steps * 1e6
        out[f"{name} reset"] = per_call_us(env.reset, 500)
        env.close()
    return out


def clevr_bare(steps: int, seed: int = 0) -> dict[str, float]:
    """The same pushes on the same MuJoCo model, without the env; and the bare reset."""
    import mujoco

    from imaginebench.domains.clevr import physics as P

    env = imaginebench.make("CLEVR-v0", encode_instruction=False)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    actions = rng.integers(env.action_space.n, size=steps)
    states = [env.unwrapped.state.copy()]
    for a in actions[:-1]:  # the env's own trajectory, resets ignored: the same pushes
        states.append(env.unwrapped.physics.push(states[-1], int(a)))
    m = mujoco.MjModel.from_xml_string(P.model_xml())
    d = mujoco.MjData(m)

    def push(state: np.ndarray, action: int) -> None:
        ball, direction = divmod(action, P.N_DIRECTIONS)
        mujoco.mj_resetData(m, d)
        d.qpos[:] = state
        d.qvel[2 * ball: 2 * ball + 2] = P.PUSH_SPEED * P.DIRECTIONS[direction]
        mujoco.mj_step(m, d, P.FIRST_STEPS)
        n = P.FIRST_STEPS
        while n < P.MAX_STEPS and np.abs(d.qvel).max() >= P.REST_SPEED:
            mujoco.mj_step(m, d, P.CHUNK_STEPS)
            n += P.CHUNK_STEPS
        d.qpos.copy()

    start = time.perf_counter()
    for s, a in zip(states, actions):
        push(s, int(a))
    step = (time.perf_counter() - start) / steps * 1e6
    lo = np.array([P.TABLE_X[0], P.TABLE_Y[0]] * P.N_BALLS)
    hi = np.array([P.TABLE_X[1], P.TABLE_Y[1]] * P.N_BALLS)

    def reset() -> None:
        mujoco.mj_resetData(m, d)
        d.qpos[:] = rng.uniform(lo, hi)
        mujoco.mj_forward(m, d)

    env.close()
    return {"bare step": step, "bare reset": per_call_us(reset, 2000)}


def babyai_bare(steps: int, seed: int = 0) -> dict[str, float]:
    """The world core alone on the same actions, and minigrid's stock BabyAI env."""
    env = imaginebench.make("BabyAI-v0", encode_instruction=False)
    env.reset(seed=seed)
    world = env.unwrapped.world
    rng = np.random.default_rng(seed)
    actions = rng.integers(env.action_space.n, size=steps)
    start = time.perf_counter()
    for a in actions.tolist():  # the world's own step and its state vector, what the env builds on
        world.step(int(a))
        world.to_state()
    core = (time.perf_counter() - start) / steps * 1e6
    env.close()
    out = {"core step": core}
    try:
        import minigrid  # noqa: F401

        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()):  # minigrid prints its rejected samples
            stock = gym.make("BabyAI-GoToLocal-v0")
            stock.reset(seed=seed)
            start = time.perf_counter()
            for a in actions:
                _, _, term, trunc, _ = stock.step(int(a) % stock.action_space.n)
                if term or trunc:
                    stock.reset()
            out["minigrid stock step"] = (time.perf_counter() - start) / steps * 1e6
        stock.close()
    except Exception as exc:  # noqa: BLE001
        print(f"(minigrid stock env not measured: {exc})")
    return out


def timed(step, reset, actions: np.ndarray, horizon: int) -> tuple[float, float]:
    """(µs per step, µs per reset) of ``actions`` in episodes of ``horizon`` steps; each episode
    starts with a timed ``reset``."""
    step_time = reset_time = 0.0
    resets = 0
    for i, a in enumerate(actions):
        if i % horizon == 0:
            start = time.perf_counter()
            reset()
            reset_time += time.perf_counter() - start
            resets += 1
        start = time.perf_counter()
        step(a)
        step_time += time.perf_counter() - start
    return step_time / len(actions) * 1e6, reset_time / resets * 1e6


def mujoco_rows(steps: int, rounds: int) -> dict[str, float]:
    """Median µs per step and per reset of each MuJoCo domain (raw, embedded) and of the simulator
    it runs on, rounds alternating between them."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    seeds = iter(range(10**9))
    setups = []  # (label, horizon, action dim, {row: (env, reset)})
    try:
        from metaworld_env_speed import bare_env

        from imaginebench.domains.metaworld.tasks import SPECS

        spec = SPECS["push"]
        bare = bare_env(spec.env_name)
        envs = {"bare": (bare, lambda b=bare: (setattr(b, "np_random", np.random.default_rng(next(seeds))), b.reset()))}
        for name, embed in (("raw", False), ("embedded", True)):
            e = imaginebench.make("MetaWorld-v0", level=spec.level, encode_instruction=embed)
            envs[name] = (e, lambda e=e: e.reset(seed=next(seeds), options={"task": "push"}))
        setups.append(("MetaWorld push", 100, 4, envs))
    except ImportError as exc:
        print(f"(MetaWorld-v0 not measured: {exc})")
    try:
        from imaginebench.domains.halfcheetah.tasks import build_tasks

        level = next(lv for lv, tasks in build_tasks().items() if "jump_forward" in {t.name for t in tasks})
        bare = gym.make("HalfCheetah-v5")
        envs = {"bare": (bare, lambda b=bare: b.reset(seed=next(seeds)))}
        for name, embed in (("raw", False), ("embedded", True)):
            e = imaginebench.make("HalfCheetah-v0", level=level, encode_instruction=embed)
            envs[name] = (e, lambda e=e: e.reset(seed=next(seeds), options={"task": "jump_forward"}))
        setups.append(("HalfCheetah jump_forward", 200, 6, envs))
    except ImportError as exc:
        print(f"(HalfCheetah-v0 not measured: {exc})")
    try:
        import tempfile as _tempfile

        from imaginebench.domains.libero import layout as LL
        from imaginebench.domains.libero.physics import BDDL, CONTROL_FREQ, import_libero

        env_wrapper = import_libero()
        with _tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "scene.bddl")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(BDDL)
            bare = env_wrapper.ControlEnv(bddl_file_name=path, use_camera_obs=False, has_renderer=False,
                                          has_offscreen_renderer=False, hard_reset=False, ignore_done=True,
                                          horizon=10**9, control_freq=CONTROL_FREQ, camera_names=[])
            bare.reset()
        envs = {"bare": (bare, bare.reset)}
        for name, embed in (("raw", False), ("embedded", True)):
            e = imaginebench.make("LIBERO-v0", level="train", encode_instruction=embed)
            envs[name] = (e, lambda e=e: e.reset(seed=next(seeds), options={"task": "pick_soup"}))
        setups.append(("LIBERO pick_soup", 50, LL.ACTION_DIM, envs))
    except ImportError as exc:
        print(f"(LIBERO-v0 not measured: {exc})")
    rows: dict[str, list[float]] = {}
    for label, horizon, dim, envs in setups:
        n = max(horizon, steps // (20 if label.startswith("LIBERO") else 1))  # LIBERO steps ~100x dearer
        for _ in range(rounds):
            actions = np.random.default_rng(len(rows)).uniform(-1.0, 1.0, (n, dim)).astype(np.float32)
            for name, (env, reset) in envs.items():
                step_us, reset_us = timed(env.step, reset, actions, horizon)
                rows.setdefault(f"{label} {name} step", []).append(step_us)
                rows.setdefault(f"{label} {name} reset", []).append(reset_us)
        for env, _ in envs.values():
            env.close()
    return {k: statistics.median(v) for k, v in rows.items()}


def vector_rows(env_id: str, steps: int, num_envs: int = 8) -> dict[str, float]:
    """Env-steps per second of ``make_vec`` (sync, async) and of one env, same random actions; every
    env runs at least two whole episodes, so resets (autoresets) weigh alike in all three."""
    out = {}
    single = imaginebench.make(env_id)
    single.reset(seed=0)
    horizon = single.unwrapped.horizon
    steps = max(steps, 2 * horizon + 1)
    rounds = max(steps // num_envs, 2 * horizon + 1)
    rng = np.random.default_rng(0)
    space = single.action_space
    if isinstance(space, gym.spaces.Discrete):
        draw = lambda k: rng.integers(space.n, size=k)  # noqa: E731
    else:
        draw = lambda k: rng.uniform(-1.0, 1.0, (k, *space.shape)).astype(np.float32)  # noqa: E731
    actions = draw(steps)
    start = time.perf_counter()
    for a in actions:
        _, _, term, trunc, _ = single.step(a.item() if a.ndim == 0 else a)
        if term or trunc:
            single.reset()
    out["single"] = steps / (time.perf_counter() - start)
    single.close()
    for mode in ("sync", "async"):
        vec = imaginebench.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode)
        vec.reset(seed=0)
        vec.step(draw(num_envs))  # warm-up (async: workers started)
        start = time.perf_counter()
        for _ in range(rounds):
            vec.step(draw(num_envs))
        out[mode] = rounds * num_envs / (time.perf_counter() - start)
        vec.close()
    return out


FRESH = """
import sys, time
import numpy as np
start = time.perf_counter()
import imaginebench
env = imaginebench.make("CLEVR-v0")
env.reset(seed=0)
made = time.perf_counter() - start
rng = np.random.default_rng(0)
for _ in range(3000):
    _, _, term, trunc, _ = env.step(int(rng.integers(40)))
    if term or trunc:
        env.reset()
print(made, time.perf_counter() - start)
"""


def fresh_vs_warm() -> tuple[list[float], list[float]]:
    """(first make() s, make() + 3,000 steps s) in a fresh data home, then again (warm)."""
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "IMAGINEBENCH_HOME": home}
        runs = [subprocess.run([sys.executable, "-c", FRESH], env=env, capture_output=True, text=True, check=True)
                for _ in range(2)]
    return [list(map(float, r.stdout.split()[-2:])) for r in runs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-fresh", action="store_true", help="skip the fresh-data-home row")
    parser.add_argument("--no-vec", action="store_true", help="skip the vector-env rows")
    parser.add_argument("--no-mujoco", action="store_true", help="skip the MetaWorld, HalfCheetah and LIBERO rows")
    args = parser.parse_args()
    rows: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for key, value in {**{f"CLEVR {k}": v for k, v in env_rows("CLEVR-v0", args.steps).items()},
                           **{f"CLEVR {k}": v for k, v in clevr_bare(args.steps).items()},
                           **{f"BabyAI {k}": v for k, v in env_rows("BabyAI-v0", args.steps).items()},
                           **{f"BabyAI {k}": v for k, v in babyai_bare(args.steps).items()}}.items():
            rows.setdefault(key, []).append(value)
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"{args.rounds} rounds x {args.steps} random-action steps; µs per call, median; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| row | µs |\n|---|---:|")
    for key, value in med.items():
        print(f"| {key} | {value:.1f} |")
    print("\nratios (one run):")
    print(f"  CLEVR step raw / bare same-push loop: {med['CLEVR raw step'] / med['CLEVR bare step']:.2f}x "
          f"(embedded {med['CLEVR embedded step'] / med['CLEVR bare step']:.2f}x)")
    print(f"  CLEVR reset raw / bare reset: {med['CLEVR raw reset'] / med['CLEVR bare reset']:.2f}x")
    print(f"  BabyAI step raw / world core: {med['BabyAI raw step'] / med['BabyAI core step']:.2f}x "
          f"(embedded {med['BabyAI embedded step'] / med['BabyAI core step']:.2f}x)")
    if "BabyAI minigrid stock step" in med:
        print(f"  BabyAI minigrid stock / ours raw: {med['BabyAI minigrid stock step'] / med['BabyAI raw step']:.2f}x")
    if not args.no_mujoco:
        mj = mujoco_rows(args.steps, args.rounds)
        print("\n| MuJoCo domain row | µs |\n|---|---:|")
        for key, value in mj.items():
            print(f"| {key} | {value:.1f} |")
        for label in dict.fromkeys(k.rsplit(" ", 2)[0] for k in mj):
            b = mj[f"{label} bare step"]
            print(f"  {label} step raw / bare: {mj[f'{label} raw step'] / b:.2f}x "
                  f"(embedded {mj[f'{label} embedded step'] / b:.2f}x); reset raw / bare: "
                  f"{mj[f'{label} raw reset'] / mj[f'{label} bare reset']:.2f}x")
    if not args.no_vec:
        cores = os.cpu_count() or 1
        for env_id in ("CLEVR-v0", "BabyAI-v0", "HalfCheetah-v0", "MetaWorld-v0"):
            try:
                v = vector_rows(env_id, args.steps)
            except ImportError as exc:
                print(f"  ({env_id} vector envs not measured: {exc})")
                continue
            print(f"  {env_id} vector N=8: one env {v['single']:,.0f} steps/s; sync {v['sync']:,.0f} "
                  f"({v['sync'] / v['single']:.2f}x); async {v['async']:,.0f} ({v['async'] / v['single']:.2f}x, "
                  f"{v['async'] / min(cores, 8):,.0f} per core of {cores})")
    if not args.no_fresh:
        (fresh_make, fresh_total), (warm_make, warm_total) = fresh_vs_warm()
        print(f"  fresh data home: first make() {fresh_make:.1f} s, make() + 3,000 steps {fresh_total:.1f} s; "
              f"warm: {warm_make:.1f} s, {warm_total:.1f} s ({fresh_total / warm_total:.1f}x)")


if __name__ == "__main__":
    main()
