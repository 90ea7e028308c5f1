"""How faithful the state-based rules and ``set_state`` are to metaworld itself (measurements).

Two measurements, both on live episodes of :class:`~.env.MetaWorldEnv`:

* **success agreement** — per step, the state-based success (``info["is_success"]``) against
  metaworld's own ``info["success"]`` of the environment that runs the task, on expert and on
  uniformly random episodes run to the full horizon (not stopped at success).  The composite tasks
  have no metaworld counterpart; for them the first stage's rule (mug under the machine / lock
  open) is compared with the success of the metaworld environment that hosts them (coffee-push /
  door-unlock; for the lock only while the door is still closed, since door-unlock's rule reads
  the lock's world x).
* **transition error** — for every transition ``(s, a, s')`` of expert episodes, a second env is
  put into ``s`` with ``set_state`` and stepped with ``a``; the error is ``max |s'_sim - s'|`` over
  the 91 dims (what ``imagination.quality`` compares with ``MetaWorldDomain.transition_tolerance``).

Run ``python -m imaginebench.domains.metaworld.agreement`` to print both tables (markdown).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from imaginebench.domains.metaworld import layout as L
from imaginebench.domains.metaworld import success as S
from imaginebench.domains.metaworld.env import MetaWorldEnv
from imaginebench.domains.metaworld.tasks import rule_of

LEVELS = ("train", "easy", "hard")


@dataclass
class Agreement:
    task: str
    policy: str
    steps: int
    agree: int
    episodes: int
    episodes_agree: int
    """Episodes where "succeeded at some step" is the same for both rules."""
    ours_success: int
    theirs_success: int


def _stage_rule(task, state: np.ndarray) -> bool:
    if task.family == "make_coffee":
        return S.mug_in_place(rule_of(task), state)
    if task.family == "locked_door_open":
        return S.lock_open(rule_of(task), state)
    raise ValueError(task.family)


def success_agreement(env: MetaWorldEnv, task_name: str, policy: str, episodes: int, seed: int = 0) -> Agreement:
    """Step-wise agreement of our success with metaworld's on ``episodes`` full-horizon episodes."""
    task = env.domain.task(task_name)
    staged = task.family in ("make_coffee", "locked_door_open")
    rng = np.random.default_rng(seed)
    steps = agree = ep_agree = ours_n = theirs_n = 0
    for i in range(episodes):
        env.reset(seed=seed * 100_003 + i, options={"task": task_name})
        ours_any = theirs_any = False
        for _ in range(env.horizon):
            action = env.expert_action() if policy == "expert" else rng.uniform(-1.0, 1.0, L.ACTION_DIM)
            _, _, _, _, info = env.step(action)
            theirs = bool(env.scene.last_info.get("success", False))
            ours = _stage_rule(task, env.state) if staged else bool(info["is_success"])
            if task.family == "locked_door_open" and not S.door_closed(env.state):
                continue  # door-unlock's rule reads the lock in world x: meaningful while the door is shut
            steps += 1
            agree += ours == theirs
            ours_any |= ours
            theirs_any |= theirs
        ep_agree += ours_any == theirs_any
        ours_n += ours_any
        theirs_n += theirs_any
    return Agreement(task_name, policy, steps, agree, episodes, ep_agree, ours_n, theirs_n)


def transition_errors(env: MetaWorldEnv, replay: MetaWorldEnv, task_name: str, episodes: int,
                      seed: int = 0) -> np.ndarray:
    """``|s'_sim - s'|`` (``(transitions, 91)``) of every transition of ``episodes`` expert
    episodes (see module docstring)."""
    errors = []
    for i in range(episodes):
        state, _ = env.reset(seed=seed * 100_003 + i, options={"task": task_name})
        states, actions, done = [np.asarray(state, dtype=np.float64)], [], False
        while not done:
            action = env.expert_action()
            state, _, terminated, truncated, _ = env.step(action)
            states.append(np.asarray(state, dtype=np.float64))
            actions.append(np.asarray(action, dtype=np.float64))
            done = terminated or truncated
        replay.reset(seed=seed * 100_003 + i + 7, options={"task": task_name})
        for t, action in enumerate(actions):
            replay.set_state(states[t])
            _, _, _, _, info = replay.step(action)
            errors.append(np.abs(np.asarray(info["state"]) - states[t + 1]))
    return np.asarray(errors).reshape(-1, L.STATE_DIM)


def _slot_columns(errors: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """The columns ``lo:hi`` of every entity slot (0:3 positions, 3:7 quaternions)."""
    return np.concatenate([errors[:, L.slot_slice(e)][:, lo:hi] for e in L.ENTITIES], axis=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=10, help="expert and random episodes per task")
    parser.add_argument("--transition-episodes", type=int, default=5, help="expert episodes per task")
    parser.add_argument("--level", action="append", choices=LEVELS, help="levels (default: all)")
    args = parser.parse_args()
    start = time.perf_counter()
    print("| level | task | expert: steps agreeing | expert: episodes agreeing (ours/metaworld succeeded) "
          "| random: steps agreeing | random: episodes agreeing (ours/metaworld) |")
    print("|---|---|---:|---|---:|---|")
    errors: dict[str, np.ndarray] = {}
    for level in args.level or LEVELS:
        env, replay = MetaWorldEnv(level), MetaWorldEnv(level)
        try:
            for task in env.tasks:
                cells = []
                for policy in ("expert", "random"):
                    a = success_agreement(env, task, policy, args.episodes)
                    cells += [f"{100 * a.agree / a.steps:.2f}% of {a.steps}",
                              f"{a.episodes_agree}/{a.episodes} ({a.ours_success}/{a.theirs_success})"]
                print(f"| {level} | {task} | " + " | ".join(cells) + " |", flush=True)
                if args.transition_episodes:
                    errors[task] = transition_errors(env, replay, task, args.transition_episodes)
        finally:
            env.close()
            replay.close()
    if errors:
        print("\n| task | transitions | max error | 99th percentile | median | max: hand | gripper | "
              "slot positions | slot quaternions |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for task, e in errors.items():
            worst = e.max(axis=1)
            groups = [e[:, L.HAND], e[:, [L.GRIPPER]], _slot_columns(e, 0, 3), _slot_columns(e, 3, 7)]
            print(f"| {task} | {len(e)} | {worst.max():.4f} | {np.percentile(worst, 99):.4f} | "
                  f"{np.median(worst):.4f} | " + " | ".join(f"{g.max():.4f}" for g in groups) + " |")
        every = np.concatenate(list(errors.values()))
        print(f"\nAll {len(every)} expert transitions: max error {every.max():.4f} "
              f"(hand {every[:, L.HAND].max():.4f}, gripper {every[:, L.GRIPPER].max():.4f}, "
              f"slot positions {_slot_columns(every, 0, 3).max():.4f}, "
              f"slot quaternions {_slot_columns(every, 3, 7).max():.4f}).")
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
