"""HalfCheetah-v0 experts: SAC policies trained online per task, shipped as safetensors.

Each policy is the deterministic action ``tanh(mu(state))`` of a SAC actor (an MLP over the
18-dim state), trained by :mod:`.training` (``imaginebench experts train --env HalfCheetah-v0``)
and stored as ``experts/<policy>.safetensors`` in this package: the weight matrices only, no
pickles, with the training settings in the file's metadata.  Inference is numpy.

Which policy acts (:data:`POLICIES`): each train/easy task and jump-in-place has its own; the
sequential tasks switch from the first direction's run policy to the other's at the midpoint
(step 100).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from imaginebench.domains.base import Task
from imaginebench.domains.halfcheetah import success as S
from imaginebench.errors import choice_error

EXPERT_DIR = Path(__file__).parent / "experts"
POLICIES: tuple[str, ...] = ("run_forward", "run_backward", "run_forward_faster", "run_backward_faster",
                             "jump_forward", "jump_backward", "jump_in_place")
"""The trained policies; every task but the sequential ones has its own."""
SEQUENCES: Mapping[str, tuple[str, str]] = {
    "run_forward_then_backward": ("run_forward", "run_backward"),
    "run_backward_then_forward": ("run_backward", "run_forward"),
}


def policy_path(policy: str) -> Path:
    return EXPERT_DIR / f"{policy}.safetensors"


class MLPPolicy:
    """``tanh(mu(x))`` of an MLP with ReLU hidden layers, from a safetensors file."""

    def __init__(self, tensors: Mapping[str, np.ndarray], metadata: Mapping[str, str]) -> None:
        n = int(metadata.get("hidden_layers", "2"))
        try:
            self.layers = [(np.asarray(tensors[f"hidden.{i}.weight"], np.float64),
                            np.asarray(tensors[f"hidden.{i}.bias"], np.float64)) for i in range(n)]
            self.mu = (np.asarray(tensors["mu.weight"], np.float64), np.asarray(tensors["mu.bias"], np.float64))
        except KeyError as exc:
            raise ValueError(f"expert weights lack tensor {exc}") from None
        self.metadata = dict(metadata)

    @classmethod
    def load(cls, path: Path) -> "MLPPolicy":
        try:
            from safetensors import SafetensorError
            from safetensors.numpy import load_file, safe_open
        except ImportError:
            raise ImportError("HalfCheetah-v0's experts need safetensors: pip install 'imaginebench[halfcheetah]'") from None

        if not path.exists():
            raise FileNotFoundError(
                f"No HalfCheetah-v0 expert at {path}. Train it with: imaginebench experts train "
                f"--env HalfCheetah-v0 --task {path.stem}")
        try:
            tensors = load_file(str(path))
            with safe_open(str(path), framework="numpy") as f:
                metadata = f.metadata() or {}
        except (SafetensorError, OSError, ValueError) as exc:
            raise ValueError(f"Damaged expert file {path} ({exc}); retrain it with: imaginebench experts train "
                             f"--env HalfCheetah-v0 --task {path.stem}") from None
        return cls(tensors, metadata)

    def __call__(self, state: np.ndarray) -> np.ndarray:
        x = np.asarray(state, dtype=np.float64)
        for w, b in self.layers:
            x = np.maximum(w @ x + b, 0.0)
        return np.tanh(self.mu[0] @ x + self.mu[1]).astype(np.float32)

    @property
    def info(self) -> dict[str, Any]:
        """The training settings and measurements stored with the weights."""
        return {k: json.loads(v) if v[:1] in "{[" else v for k, v in self.metadata.items()}


@lru_cache(maxsize=None)
def load_policy(policy: str) -> MLPPolicy:
    if policy not in POLICIES:
        raise choice_error("HalfCheetah-v0 expert policy", policy, POLICIES)
    return MLPPolicy.load(policy_path(policy))


def policy_for(task: Task, progress: np.ndarray) -> str:
    """The policy that acts for ``task`` given the progress record so far."""
    if task.name in SEQUENCES:
        first, second = SEQUENCES[task.name]
        return first if progress[S.P_T] < S.HALF else second
    return task.name


class HalfCheetahExpert:
    """The trained policy of the current task (the sequential tasks switch at the midpoint)."""

    def __init__(self) -> None:
        self.last_policy = ""

    def act(self, task: Task, state: np.ndarray, progress: np.ndarray) -> np.ndarray:
        self.last_policy = policy_for(task, progress)
        return load_policy(self.last_policy)(state)
