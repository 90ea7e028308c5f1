"""Train the HalfCheetah-v0 experts online with d3rlpy's SAC, and store them as safetensors.

``imaginebench experts train --env HalfCheetah-v0 [--task NAME] [--steps N]`` runs this for each
policy of :data:`imaginebench.domains.halfcheetah.expert.POLICIES`.  The environment is HalfCheetah-v0 itself at the policy's
task, with two changes for training only: success does not end an episode (SAC would otherwise
learn that succeeding stops the reward; every episode runs the full 200 steps) and the reward is
the task's reward (:mod:`imaginebench.domains.halfcheetah.success`), except that the plain run tasks' velocity term peaks at
``RUN_TARGET_SPEED`` (``v`` up to it, ``2·target − v`` above it) — their experts hold a moderate
pace, so that the real data of the train level does not already solve the *faster* tasks of the
easy level.  (A plain cap, ``min(v, target)``, still let a run expert speed up to 2.9 m/s by the
end of an episode: nothing told it not to.)

After training, the deterministic policy is evaluated on the task (success rate, net
displacement) and the weights are written with those numbers and the settings in the file's
metadata.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import gymnasium as gym
import numpy as np

from imaginebench import limits
from imaginebench.algos._d3rlpy import load
from imaginebench.domains.base import TrainedExperts
from imaginebench.domains.halfcheetah import physics as P
from imaginebench.domains.halfcheetah import success as S
from imaginebench.domains.halfcheetah.env import HalfCheetahEnv
from imaginebench.domains.halfcheetah.expert import POLICIES, MLPPolicy, policy_path
from imaginebench.domains.halfcheetah.tasks import build_tasks
from imaginebench.errors import choice_error

RUN_TARGET_SPEED = 2.0
"""m/s: the plain run experts' training reward peaks at this speed."""
TRAIN_STEPS: dict[str, int] = {
    "run_forward": 40_000, "run_backward": 40_000,
    "run_forward_faster": 80_000, "run_backward_faster": 80_000,
    "jump_forward": 40_000, "jump_backward": 30_000, "jump_in_place": 100_000,
}
"""Environment steps each shipped expert was trained for (what ``experts train`` reruns)."""


@dataclass(frozen=True)
class TrainSettings:
    """SAC settings of an expert (Haarnoja et al. 2018's, at a CPU-sized budget)."""

    steps: int = 60_000
    random_steps: int = 5_000
    """Uniformly random steps before SAC acts (``min(5_000, steps // 5)`` from the CLI)."""
    batch_size: int = 256
    hidden_units: tuple[int, ...] = (256, 256)
    learning_rate: float = 3e-4
    gamma: float = 0.99
    seed: int = 0


class TrainingEnv(gym.Env):
    """HalfCheetah-v0 at one task, for training: no success termination, the training reward."""

    def __init__(self, policy: str, seed: int = 0) -> None:
        level = next(lv for lv, tasks in build_tasks().items() if policy in {t.name for t in tasks})
        self.env = HalfCheetahEnv(level=level)
        self.policy = policy
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (P.STATE_DIM,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (P.ACTION_DIM,), np.float32)
        self._seed = seed
        self._episode = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self._episode += 1
        obs, info = self.env.reset(seed=self._seed * 1_000_003 + self._episode if seed is None else seed,
                                   options={"task": self.policy})
        return obs, info

    def step(self, action):
        before = self.env.progress
        obs, _, _, _, info = self.env.step(action)
        assert self.env.task is not None
        terms = S.reward_terms(self.env.task.family, self.env.task.params, np.asarray(action), self.env.state, before)
        if self.env.task.family == "run":
            v = terms["velocity"]
            terms["velocity"] = v if v <= RUN_TARGET_SPEED else 2 * RUN_TARGET_SPEED - v
        truncated = self.env.elapsed_steps >= S.HORIZON
        return obs, float(sum(terms.values())), False, truncated, info

    def close(self) -> None:
        self.env.close()


def evaluate(act: Callable[[np.ndarray], np.ndarray], task_name: str, episodes: int, seed: int) -> dict[str, Any]:
    """Success rate and mean net displacement of ``act`` on ``task_name`` (real episodes)."""
    level = next(lv for lv, tasks in build_tasks().items() if task_name in {t.name for t in tasks})
    env = HalfCheetahEnv(level=level)
    wins, disp, jumps = 0, [], []
    for ep in range(episodes):
        env.reset(seed=seed + ep, options={"task": task_name})
        done, info = False, {}
        while not done:
            _, _, terminated, truncated, info = env.step(act(env.state))
            done = terminated or truncated
        wins += bool(info["is_success"])
        disp.append(float(env.progress[S.P_X]))
        jumps.append(float(env.progress[S.P_JUMPS]))
    env.close()
    return {"episodes": episodes, "success": wins / episodes, "mean_displacement": float(np.mean(disp)),
            "mean_jumps": float(np.mean(jumps))}


def _policy_tensors(algo) -> tuple[dict[str, np.ndarray], int]:
    import torch

    policy = algo.impl.modules.policy
    linears = [m for m in policy._encoder.modules() if isinstance(m, torch.nn.Linear)]
    tensors: dict[str, np.ndarray] = {}
    for i, layer in enumerate(linears):
        tensors[f"hidden.{i}.weight"] = layer.weight.detach().cpu().numpy().astype(np.float32)
        tensors[f"hidden.{i}.bias"] = layer.bias.detach().cpu().numpy().astype(np.float32)
    tensors["mu.weight"] = policy._mu.weight.detach().cpu().numpy().astype(np.float32)
    tensors["mu.bias"] = policy._mu.bias.detach().cpu().numpy().astype(np.float32)
    return tensors, len(linears)


def train_expert(policy: str, settings: TrainSettings = TrainSettings(), *, out: Path | None = None,
                 eval_episodes: int = 20, progress: bool = True, snapshot_every: int = 0) -> dict[str, Any]:
    """Train ``policy`` with SAC, evaluate it and write its safetensors file (atomically).

    ``snapshot_every``: also write the policy every that many steps as ``<out>-at-<step>``
    (unevaluated; with the same seed, the snapshot at step k is what ``steps=k`` trains when
    ``k ≥ 5·random_steps``).  Returns the metadata written with the weights.
    """
    limits.count("--eval-episodes", eval_episodes)
    if policy not in POLICIES:
        raise choice_error("HalfCheetah-v0 expert policy", policy, POLICIES)
    import torch


    d3rlpy = load()
    torch.manual_seed(settings.seed)
    np.random.seed(settings.seed)
    env = TrainingEnv(policy, seed=settings.seed)
    encoder = d3rlpy.models.VectorEncoderFactory(hidden_units=list(settings.hidden_units))
    algo = d3rlpy.algos.SACConfig(
        batch_size=settings.batch_size, gamma=settings.gamma, actor_learning_rate=settings.learning_rate,
        critic_learning_rate=settings.learning_rate, temp_learning_rate=settings.learning_rate,
        actor_encoder_factory=encoder, critic_encoder_factory=encoder,
    ).create(device="cpu:0")
    buffer = d3rlpy.dataset.create_fifo_replay_buffer(limit=settings.steps, env=env)
    path = out or policy_path(policy)

    def snapshot(algo_: Any, epoch: int, step: int) -> None:
        if snapshot_every and step % snapshot_every == 0 and step < settings.steps:
            tensors_, _ = _policy_tensors(algo_)
            _save(tensors_, {"policy": policy, "step": str(step)}, path.with_name(f"{path.stem}-at-{step}.safetensors"))

    started = time.perf_counter()
    algo.fit_online(env, buffer, n_steps=settings.steps, n_steps_per_epoch=max(1, settings.steps // 10),
                    random_steps=settings.random_steps, update_start_step=settings.random_steps,
                    save_interval=10**9, logger_adapter=d3rlpy.logging.NoopAdapterFactory(),
                    show_progress=progress, callback=snapshot if snapshot_every else None)
    train_s = time.perf_counter() - started
    env.close()

    tensors, hidden = _policy_tensors(algo)
    metadata = {"policy": policy, "algorithm": "SAC (d3rlpy)", "settings": json.dumps(asdict(settings)),
                "hidden_layers": str(hidden), "train_seconds": f"{train_s:.1f}",
                "training_reward": ("task reward, velocity term peaked at %.1f m/s" % RUN_TARGET_SPEED
                                    if policy in ("run_forward", "run_backward") else "task reward")}
    act = MLPPolicy(tensors, metadata)
    metadata["evaluation"] = json.dumps(evaluate(act, policy, eval_episodes, seed=10_000))
    _save(tensors, metadata, path)
    return metadata


def _save(tensors: dict[str, np.ndarray], metadata: dict[str, str], path: Path) -> None:
    from safetensors.numpy import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    save_file(tensors, str(tmp), metadata=metadata)
    tmp.replace(path)


def _train_for_cli(policy: str, steps: int | None, seed: int, out: Path | None, eval_episodes: int,
                   progress: bool) -> dict[str, Any]:
    n = steps or TRAIN_STEPS[policy]
    settings = TrainSettings(steps=n, random_steps=min(5_000, n // 5), seed=seed)
    return train_expert(policy, settings, out=out, eval_episodes=eval_episodes, progress=progress)


def _info(policy: str) -> dict[str, Any]:
    return MLPPolicy.load(policy_path(policy)).info


EXPERTS = TrainedExperts(env_id="HalfCheetah-v0", policies=POLICIES, default_steps=TRAIN_STEPS, path=policy_path,
                         train=_train_for_cli, info=_info)
"""What ``imaginebench experts`` trains and lists for this domain (the card's ``trained_experts``)."""
