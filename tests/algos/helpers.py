"""Test doubles for the offline-RL stage: a toy line-walking domain and a hash encoder.

``Toy-v0`` (discrete) and ``ToyCont-v0`` (continuous): an agent on cells 0..4 of a line must
reach the cell its instruction names.  State ``[x]``; actions ``0`` = left, ``1`` = right
(continuous: the sign of a 1-d action); horizon 6; success when ``x`` equals the target.
"""

from __future__ import annotations

import hashlib
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from imaginebench.domains.base import Domain, StepOutcome, Task
from imaginebench.domains.env_base import InstructionEnv

HASH_ENCODER = "test-hash"


class HashEncoder:
    """Deterministic pseudo-embeddings (8-d) from a hash of each string; no model needed."""

    name = HASH_ENCODER
    dim = 8

    def encode(self, texts):
        if isinstance(texts, str):
            raise TypeError("encode() takes a sequence of strings.")
        out = [np.random.default_rng(int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little"))
               .normal(size=self.dim) for t in texts]
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim)


def _register_encoder() -> None:
    from imaginebench.language import encoder_names, register_encoder

    if HASH_ENCODER not in encoder_names():
        register_encoder(HASH_ENCODER, HashEncoder)


_register_encoder()


def _task(name: str, level: str, target: int, words: str) -> Task:
    rephrase = (f"could you maybe {words}, please", f"I'd love it if you'd {words}") if level == "train" else ()
    return Task(name=name, family="reach", level=level, params={"target": target},
                instructions=(words, f"please {words}", f"{words} now"), rephrasings=rephrase)


class ToyDomain(Domain):
    env_id = "Toy-v0"
    state_dim = 1
    horizon = 6
    discrete_actions = True
    action_dim = 2
    state_layout = ("x",)

    def _build_tasks(self):
        return {"train": [_task("go_left", "train", 0, "go to the left end"),
                          _task("go_right", "train", 4, "go to the right end")],
                "easy": [_task("go_middle", "easy", 2, "go to the middle")],
                "hard": [_task("go_second", "hard", 1, "go to the second cell")]}

    def outcome(self, task, state, action, next_state, progress):
        target = task.params["target"]
        success = bool(round(float(next_state[0])) == target)
        shaping = 0.1 * (abs(float(state[0]) - target) - abs(float(next_state[0]) - target))
        return StepOutcome(success=success, reward=shaping + float(success), progress=progress,
                           terms={"shaping": shaping, "success_bonus": float(success)})

    def holds(self, task, state) -> bool:
        return round(float(state[0])) == task.params["target"]

    def legality_errors(self, state) -> list[str]:
        return [] if 0 <= float(state[0]) <= 4 else [f"x = {float(state[0])} is off the line 0..4"]


class ToyContDomain(ToyDomain):
    env_id = "ToyCont-v0"
    discrete_actions = False
    action_dim = 1


class ToyEnv(InstructionEnv):
    domain_cls = ToyDomain

    def _sample_start(self, task: Task) -> np.ndarray:
        return np.array([float(self.np_random.integers(1, 4))])

    def _move(self, action: Any) -> int:
        return 1 if int(action) == 1 else -1

    def _simulate(self, action: Any) -> np.ndarray:
        return np.clip(self.state + self._move(action), 0, 4)

    def set_state(self, state: np.ndarray) -> None:
        self.state = np.asarray(state, dtype=np.float64).copy()

    def _expert(self) -> Any:
        return int(self.task.params["target"] > self.state[0])


class ToyContEnv(ToyEnv):
    domain_cls = ToyContDomain

    def _move(self, action: Any) -> int:
        a = float(np.asarray(action).reshape(-1)[0])
        return 0 if abs(a) < 0.2 else int(np.sign(a))

    def _expert(self) -> Any:
        return np.array([1.0 if self.task.params["target"] > self.state[0] else -1.0])


TOY_ENVS = {"Toy-v0": ("ToyEnv", "ToyDomain"), "ToyCont-v0": ("ToyContEnv", "ToyContDomain")}


def register_toy_envs(monkeypatch) -> tuple[str, ...]:
    """Register ``Toy-v0`` and ``ToyCont-v0`` with the package's env registry (undone by ``monkeypatch``)."""
    from imaginebench.envs import registry

    for env_id, (env_cls, dom_cls) in TOY_ENVS.items():
        monkeypatch.setitem(registry.ENV_SPECS, env_id, registry.EnvSpec(
            env_id, f"{__name__}:{env_cls}", f"{__name__}:{dom_cls}", "toy", ()))
        full = f"{registry.NAMESPACE}/{env_id}"
        if full not in gym.registry:
            gym.register(full, entry_point=f"{registry.__name__}:create_raw", kwargs={"env_id": env_id},
                         disable_env_checker=True)
    return tuple(TOY_ENVS)


@pytest.fixture
def toy_envs(monkeypatch):
    """``Toy-v0`` and ``ToyCont-v0`` registered for one test."""
    return register_toy_envs(monkeypatch)


def build_toy_data(env_id: str = "Toy-v0", levels=("train",), episodes: int = 40, profile: str = "tiny") -> None:
    """Collect expert data for ``levels`` of a toy env under the (test) data home."""
    from imaginebench.data.hub import build_real

    for level in levels:
        build_real(env_id, level, profile, episodes=episodes, progress=False)


def save_imaginary(env_id: str, level: str, episodes: int = 20, profile: str = "tiny") -> None:
    """Stand-in imaginary data: expert rollouts of ``level`` relabelled as imaginary."""
    from imaginebench.data.collect import collect
    from imaginebench.data.hub import dataset_path
    from imaginebench.data.storage import save_dataset

    ds = collect(env_id, level, episodes, seed=7, progress=False)
    ds = type(ds)(**{k: getattr(ds, k) for k in ds.ARRAYS}, tasks=ds.tasks, instructions=ds.instructions,
                  metadata={**ds.metadata, "source": "imaginary"})
    save_dataset(ds, dataset_path(env_id, "imaginary", level, profile))
