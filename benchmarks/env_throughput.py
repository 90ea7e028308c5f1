"""Environment speed against the bare simulator, as ratios measured in one run.

Rows (µs per step and per reset; median over ``--rounds`` alternating rounds, so load from
other processes hits every row alike):

* **CLEVR-v0** ``imaginebench.make(..., encode_instruction=False)``, embedded (``make(...)``),
  and the **bare same-push loop**: raw MuJoCo (``mj_resetData``, ``qpos``/``qvel`` set, ``mj_step``
  until the balls rest) on the very same model, actions and states; the **bare reset**: 10
  uniform coordinates written into ``qpos`` and ``mj_forward`` (no overlap check, no task).
* **BabyAI-v0** raw and embedded, against **its own world core** (``BabyAIWorld.step`` on the same
  actions, no task rules) and **minigrid's stock** ``BabyAI-GoToLocal-v0`` (egocentric image).
* **MetaWorld-v0** (``--metaworld-task``, push), **HalfCheetah-v0** (``--halfcheetah-task``,
  jump_forward) and **LIBERO-v0** (pick_soup), raw and embedded, against the simulator they run
  on: metaworld's own env class of the task (the class ``Meta-World/MT1`` builds, no wrappers),
  gymnasium's ``HalfCheetah-v5`` and LIBERO's bare ``ControlEnv`` of the same scene
  (``--no-mujoco`` skips them; a domain whose extra is not installed is skipped with a line saying so);
* **steps/s with resets included** of MetaWorld-v0 and HalfCheetah-v0 (raw) against the same bare
  simulators: the same uniformly random actions for both, episodes of 100 (MetaWorld) and 200
  (HalfCheetah) steps, each starting with a reset, as in data collection; median steps/s over the
  alternating rounds (``--no-mujoco`` skips them too);
* **vector envs**: ``imaginebench.make_vec(ENV, num_envs=8)`` sync and async, steps/s per env
  step and per core, against one env.
* **store**: a fresh data home's first ``make()`` + 3,000 CLEVR steps vs a warm one (run last; it
  loads the encoder model).

``--envs`` picks the envs measured in every section (default: all five).  Results:
``notes/env_speed.md``, ``notes/halfcheetah.md`` and ``notes/metaworld.md`` (env speed).  Usage::

    python benchmarks/env_throughput.py [--steps 3000] [--rounds 5] [--envs CLEVR-v0 ...] [--no-fresh]
        [--no-vec] [--no-mujoco] [--halfcheetah-task jump_forward] [--metaworld-task push] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

import imaginebench
from harness import Report, add_json_argument

MUJOCO_ENVS = ("MetaWorld-v0", "HalfCheetah-v0", "LIBERO-v0")
ENVS = ("CLEVR-v0", "BabyAI-v0", *MUJOCO_ENVS)
VECTOR_ENVS = ("CLEVR-v0", "BabyAI-v0", "HalfCheetah-v0", "MetaWorld-v0")
ENCODE_INSTRUCTION = {"raw": False, "embedded": True}
"""Our env's variants: ``encode_instruction`` off (raw) and on (embedded)."""

Envs = dict[str, tuple[Any, Callable[[], object]]]
"""Env and its reset, by variant (``bare``, ``raw``, ``embedded``)."""


def per_call_us(fn, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def env_rows(env_id: str, steps: int, seed: int = 0) -> dict[str, float]:
    """µs per step (resets excluded) and per reset of the raw and the embedded env."""
    out = {}
    for name, env in (("raw", imaginebench.make(env_id, encode_instruction=False)),
                      ("embedded", imaginebench.make(env_id))):
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


def bare_metaworld_env(env_name: str) -> Any:
    """metaworld's own env of ``env_name``, set up as ``gymnasium.make('Meta-World/MT1', ...)`` sets
    it up, without its wrappers: random task parameters on each reset, full observation."""
    from metaworld.env_dict import ALL_V3_ENVIRONMENTS

    env = ALL_V3_ENVIRONMENTS[env_name]()
    env._partially_observable = False
    del env.sawyer_observation_space
    env._freeze_rand_vec = False
    env.seeded_rand_vec = True
    env._set_task_called = True
    return env


def metaworld_envs(task: str, seeds: Iterator[int], variants: Sequence[str]) -> Envs:
    """The bare metaworld env of ``task`` and MetaWorld-v0 (``variants``) on the same task."""
    from imaginebench.domains.metaworld.tasks import SPECS

    spec = SPECS[task]
    bare = bare_metaworld_env(spec.env_name)
    envs: Envs = {"bare": (bare, lambda: (setattr(bare, "np_random", np.random.default_rng(next(seeds))),
                                          bare.reset()))}
    for name in variants:
        env = imaginebench.make("MetaWorld-v0", level=spec.level, encode_instruction=ENCODE_INSTRUCTION[name])
        envs[name] = (env, lambda env=env: env.reset(seed=next(seeds), options={"task": task}))
    return envs


def halfcheetah_envs(task: str, seeds: Iterator[int], variants: Sequence[str]) -> Envs:
    """gymnasium's bare ``HalfCheetah-v5`` (with gymnasium's wrappers) and HalfCheetah-v0 (``variants``)
    on ``task``."""
    from imaginebench.domains.halfcheetah.tasks import build_tasks

    level = next(lv for lv, tasks in build_tasks().items() if task in {t.name for t in tasks})
    bare = gym.make("HalfCheetah-v5")
    envs: Envs = {"bare": (bare, lambda: bare.reset(seed=next(seeds)))}
    for name in variants:
        env = imaginebench.make("HalfCheetah-v0", level=level, encode_instruction=ENCODE_INSTRUCTION[name])
        envs[name] = (env, lambda env=env: env.reset(seed=next(seeds), options={"task": task}))
    return envs


def libero_envs(seeds: Iterator[int], variants: Sequence[str]) -> Envs:
    """LIBERO's bare ``ControlEnv`` of LIBERO-v0's scene (same BDDL problem, controller, no cameras)
    and LIBERO-v0 (``variants``) on pick_soup."""
    from imaginebench.domains.libero.physics import BDDL, CONTROL_FREQ, import_libero

    env_wrapper = import_libero()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "scene.bddl")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(BDDL)
        bare = env_wrapper.ControlEnv(bddl_file_name=path, use_camera_obs=False, has_renderer=False,
                                      has_offscreen_renderer=False, hard_reset=False, ignore_done=True,
                                      horizon=10**9, control_freq=CONTROL_FREQ, camera_names=[])
        bare.reset()
    envs: Envs = {"bare": (bare, bare.reset)}
    for name in variants:
        env = imaginebench.make("LIBERO-v0", level="train", encode_instruction=ENCODE_INSTRUCTION[name])
        envs[name] = (env, lambda env=env: env.reset(seed=next(seeds), options={"task": "pick_soup"}))
    return envs


def mujoco_rows(steps: int, rounds: int, env_ids: Sequence[str], halfcheetah_task: str,
                metaworld_task: str) -> dict[str, float]:
    """Median µs per step and per reset of each MuJoCo domain (raw, embedded) and of the simulator
    it runs on, rounds alternating between them."""
    seeds = iter(range(10**9))
    setups = []  # (label, horizon, action dim, {row: (env, reset)})
    if "MetaWorld-v0" in env_ids:
        try:
            setups.append((f"MetaWorld {metaworld_task}", 100, 4,
                           metaworld_envs(metaworld_task, seeds, list(ENCODE_INSTRUCTION))))
        except ImportError as exc:
            print(f"(MetaWorld-v0 not measured: {exc})")
    if "HalfCheetah-v0" in env_ids:
        try:
            setups.append((f"HalfCheetah {halfcheetah_task}", 200, 6,
                           halfcheetah_envs(halfcheetah_task, seeds, list(ENCODE_INSTRUCTION))))
        except ImportError as exc:
            print(f"(HalfCheetah-v0 not measured: {exc})")
    if "LIBERO-v0" in env_ids:
        try:
            from imaginebench.domains.libero import layout as LL

            setups.append(("LIBERO pick_soup", 50, LL.ACTION_DIM, libero_envs(seeds, list(ENCODE_INSTRUCTION))))
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


def rate_with_resets(env: Any, reset: Callable[[], object], steps: int, horizon: int, action_dim: int,
                     rng: np.random.Generator) -> float:
    """Steps per second of ``steps`` random-action steps in episodes of ``horizon``, each starting
    with a ``reset`` (resets included, as in data collection)."""
    start = time.perf_counter()
    done = 0
    while done < steps:
        reset()
        for _ in range(min(horizon, steps - done)):
            env.step(rng.uniform(-1.0, 1.0, action_dim).astype(np.float32))
            done += 1
    return steps / (time.perf_counter() - start)


RESETS_INCLUDED = {  # env: (bare env's name, horizon, action dim, warm-up steps)
    "HalfCheetah-v0": ("bare gymnasium HalfCheetah-v5", 200, 6, 400),
    "MetaWorld-v0": ("bare metaworld", 100, 4, 200),
}


def resets_included_rates(env_id: str, task: str, steps: int, rounds: int) -> tuple[float, float]:
    """Median steps/s (bare simulator, our raw env) with resets included: both warmed up, then
    ``rounds`` alternating blocks of ``steps`` steps on the same random actions."""
    _, horizon, dim, warmup = RESETS_INCLUDED[env_id]
    seeds = iter(range(10**9))
    builder = halfcheetah_envs if env_id == "HalfCheetah-v0" else metaworld_envs
    envs = builder(task, seeds, ["raw"])
    (bare, bare_reset), (ours, ours_reset) = envs["bare"], envs["raw"]
    rate_with_resets(bare, bare_reset, warmup, horizon, dim, np.random.default_rng(0))
    rate_with_resets(ours, ours_reset, warmup, horizon, dim, np.random.default_rng(0))
    bare_rates, our_rates = [], []
    for r in range(rounds):
        bare_rates.append(rate_with_resets(bare, bare_reset, steps, horizon, dim, np.random.default_rng(r)))
        our_rates.append(rate_with_resets(ours, ours_reset, steps, horizon, dim, np.random.default_rng(r)))
    ours.close()
    bare.close()
    return statistics.median(bare_rates), statistics.median(our_rates)


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


def core_tables(report: Report, args: argparse.Namespace) -> None:
    """CLEVR and BabyAI µs rows against their bare references, rounds alternating between them."""
    measures = {
        "CLEVR-v0": lambda: {**{f"CLEVR {k}": v for k, v in env_rows("CLEVR-v0", args.steps).items()},
                             **{f"CLEVR {k}": v for k, v in clevr_bare(args.steps).items()}},
        "BabyAI-v0": lambda: {**{f"BabyAI {k}": v for k, v in env_rows("BabyAI-v0", args.steps).items()},
                              **{f"BabyAI {k}": v for k, v in babyai_bare(args.steps).items()}},
    }
    selected = [e for e in measures if e in args.envs]
    if not selected:
        return
    rows: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for env_id in selected:
            for key, value in measures[env_id]().items():
                rows.setdefault(key, []).append(value)
    med = {k: statistics.median(v) for k, v in rows.items()}
    table = report.table(f"CLEVR and BabyAI: µs per call, median of {args.rounds} rounds x {args.steps} "
                         "random-action steps", ["row", "µs"], {"µs": "{:.1f}"})
    for key, value in med.items():
        table.add(key, value)
    ratios = report.table("CLEVR and BabyAI ratios (one run)", ["ratio", "value"], {"value": "{:.2f}x"})
    if "CLEVR-v0" in selected:
        bare = med["CLEVR bare step"]
        ratios.add("CLEVR step, raw / bare same-push loop", med["CLEVR raw step"] / bare)
        ratios.add("CLEVR step, embedded / bare same-push loop", med["CLEVR embedded step"] / bare)
        ratios.add("CLEVR reset, raw / bare reset", med["CLEVR raw reset"] / med["CLEVR bare reset"])
    if "BabyAI-v0" in selected:
        core = med["BabyAI core step"]
        ratios.add("BabyAI step, raw / world core", med["BabyAI raw step"] / core)
        ratios.add("BabyAI step, embedded / world core", med["BabyAI embedded step"] / core)
        if "BabyAI minigrid stock step" in med:
            ratios.add("BabyAI step, minigrid stock / ours raw",
                       med["BabyAI minigrid stock step"] / med["BabyAI raw step"])


def mujoco_tables(report: Report, args: argparse.Namespace, env_ids: list[str]) -> None:
    """MuJoCo domains' µs rows and ratios, then their steps/s with resets included."""
    mj = mujoco_rows(args.steps, args.rounds, env_ids, args.halfcheetah_task, args.metaworld_task)
    table = report.table(f"MuJoCo domains: µs per call, median of {args.rounds} rounds", ["row", "µs"],
                         {"µs": "{:.1f}"})
    for key, value in mj.items():
        table.add(key, value)
    columns = ["step raw / bare", "step embedded / bare", "reset raw / bare"]
    ratios = report.table("MuJoCo domain ratios (one run)", ["domain", *columns], dict.fromkeys(columns, "{:.2f}x"))
    for label in dict.fromkeys(k.rsplit(" ", 2)[0] for k in mj):
        b = mj[f"{label} bare step"]
        ratios.add(label, mj[f"{label} raw step"] / b, mj[f"{label} embedded step"] / b,
                   mj[f"{label} raw reset"] / mj[f"{label} bare reset"])
    table = report.table(f"Steps/s with resets included, our raw env vs the bare simulator: random actions, "
                         f"median of {args.rounds} rounds x {args.steps} steps",
                         ["env", "task", "reference", "episode steps", "reference steps/s", "ours steps/s",
                          "ours / reference"],
                         {"episode steps": "{}", "reference steps/s": "{:,.0f}", "ours steps/s": "{:,.0f}",
                          "ours / reference": "{:.2f}"})
    tasks = {"HalfCheetah-v0": args.halfcheetah_task, "MetaWorld-v0": args.metaworld_task}
    for env_id in (e for e in RESETS_INCLUDED if e in env_ids):
        try:
            bare_rate, our_rate = resets_included_rates(env_id, tasks[env_id], args.steps, args.rounds)
        except ImportError as exc:
            print(f"({env_id} steps/s not measured: {exc})")
            continue
        reference, horizon = RESETS_INCLUDED[env_id][:2]
        table.add(env_id, tasks[env_id], reference, horizon, bare_rate, our_rate, our_rate / bare_rate)


def vector_table(report: Report, args: argparse.Namespace, env_ids: list[str]) -> None:
    """Vector envs (N = 8, sync and async) against one env."""
    cores = os.cpu_count() or 1
    table = report.table(f"Vector envs, N=8: env steps/s against one env ({cores} cores)",
                         ["env", "one env", "sync", "sync / one", "async", "async / one", "async per core"],
                         {"one env": "{:,.0f}", "sync": "{:,.0f}", "sync / one": "{:.2f}x", "async": "{:,.0f}",
                          "async / one": "{:.2f}x", "async per core": "{:,.0f}"})
    for env_id in env_ids:
        try:
            v = vector_rows(env_id, args.steps)
        except ImportError as exc:
            print(f"({env_id} vector envs not measured: {exc})")
            continue
        table.add(env_id, v["single"], v["sync"], v["sync"] / v["single"], v["async"], v["async"] / v["single"],
                  v["async"] / min(cores, 8))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--envs", nargs="+", choices=ENVS, default=list(ENVS), help="envs measured (default: all)")
    parser.add_argument("--no-fresh", action="store_true", help="skip the fresh-data-home rows (CLEVR-v0)")
    parser.add_argument("--no-vec", action="store_true", help="skip the vector-env rows")
    parser.add_argument("--no-mujoco", action="store_true", help="skip the MetaWorld, HalfCheetah and LIBERO rows")
    parser.add_argument("--halfcheetah-task", default="jump_forward", help="HalfCheetah-v0 task name")
    parser.add_argument("--metaworld-task", default="push", help="MetaWorld-v0 task name (single-stage)")
    add_json_argument(parser)
    args = parser.parse_args()
    report = Report(__file__, args.json)
    core_tables(report, args)
    mujoco = [] if args.no_mujoco else [e for e in args.envs if e in MUJOCO_ENVS]
    if mujoco:
        mujoco_tables(report, args, mujoco)
    vectorised = [] if args.no_vec else [e for e in VECTOR_ENVS if e in args.envs]
    if vectorised:
        vector_table(report, args, vectorised)
    if "CLEVR-v0" in args.envs and not args.no_fresh:
        (fresh_make, fresh_total), (warm_make, warm_total) = fresh_vs_warm()
        table = report.table("Data home: first make() and make() + 3,000 CLEVR-v0 steps, fresh vs warm",
                             ["data home", "first make() s", "make() + 3,000 steps s", "vs warm"],
                             {"first make() s": "{:.1f}", "make() + 3,000 steps s": "{:.1f}", "vs warm": "{:.1f}x"})
        table.add("fresh", fresh_make, fresh_total, fresh_total / warm_total)
        table.add("warm", warm_make, warm_total, None)
    report.finish()


if __name__ == "__main__":
    main()
