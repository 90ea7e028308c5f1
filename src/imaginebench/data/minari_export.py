"""Export an :class:`EpisodeDataset` to the Minari format (``pip install 'imaginebench[data]'``).

Observations are the raw state vectors; each episode's task and instruction go into its
Minari episode metadata, and per-step ``is_success`` into ``infos``.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from imaginebench.data.dataset import EpisodeDataset
from imaginebench.envs.registry import ENV_SPECS, gym_spec


def minari_id(dataset: EpisodeDataset) -> str:
    """A Minari id such as ``imaginebench/clevr-train-real-v0``."""
    md = dataset.metadata
    domain = re.sub(r"-v\d+$", "", str(md.get("domain", "unknown"))).lower()
    return f"imaginebench/{domain}-{md.get('level', 'unknown')}-{md.get('source', 'unknown')}-v0"


def _env_spec_of(metadata: dict) -> Any:
    """Gymnasium's spec of the env the data belongs to, at the dataset's level (so Minari's
    ``recover_environment()`` and ``recover_environment(eval_env=True)`` give it back); ``None``
    for data of a domain that is not registered here."""
    domain = str(metadata.get("domain"))
    if domain not in ENV_SPECS:
        return None
    return gym_spec(domain, level=str(metadata.get("level", "train")))


def export_minari(dataset: EpisodeDataset, dataset_id: str | None = None, root: str | Path | None = None):
    """Write ``dataset`` as a local Minari dataset and return the ``MinariDataset``.

    Args:
        dataset_id: Minari id (default :func:`minari_id`).
        root: Minari's datasets folder (default ``$MINARI_DATASETS_PATH`` or Minari's own default).
    """
    try:
        import gymnasium as gym
        import minari
        from minari.data_collector.episode_buffer import EpisodeBuffer
    except ImportError:
        raise ImportError("Minari export needs minari. Install it with: pip install 'imaginebench[data]'") from None

    dataset_id = dataset_id or minari_id(dataset)
    old = os.environ.get("MINARI_DATASETS_PATH")
    if root is not None:
        os.environ["MINARI_DATASETS_PATH"] = str(Path(root).resolve())
    try:
        high = np.full(dataset.state_dim, np.inf, dtype=np.float32)
        obs_space = gym.spaces.Box(-high, high, dtype=np.float32)
        md = dataset.metadata
        if dataset.discrete_actions:
            act_space = gym.spaces.Discrete(int(md.get("action_dim", int(dataset.actions.max(initial=0)) + 1)))
        else:
            act_space = gym.spaces.Box(-1.0, 1.0, dataset.actions.shape[1:], dtype=np.float32)
        buffers = []
        for i, ep in enumerate(dataset):
            succ = np.concatenate([[False], ep.successes])
            buffers.append(EpisodeBuffer(
                id=i, observations=np.asarray(ep.states, dtype=np.float32), actions=np.asarray(ep.actions),
                rewards=np.asarray(ep.rewards, dtype=np.float64), terminations=np.asarray(ep.terminals),
                truncations=np.asarray(ep.truncations), infos={"is_success": succ},
            ))
        with warnings.catch_warnings():  # Minari warns about optional metadata we do not have
            warnings.simplefilter("ignore", UserWarning)
            spec = _env_spec_of(md)
            out = minari.create_dataset_from_buffers(
                dataset_id=dataset_id, buffer=buffers, action_space=act_space, observation_space=obs_space,
                env=spec, eval_env=spec,
                algorithm_name=str(md.get("generator", "unknown")), author="ImagineBench",
                description=f"ImagineBench {md.get('domain')} {md.get('level')} {md.get('source')} rollouts.",
            )
        out.storage.update_episode_metadata(
            [{"task": t, "instruction": s} for t, s in zip(dataset.episode_tasks(), dataset.episode_instructions())]
        )
        return out
    finally:
        if root is not None:
            if old is None:
                os.environ.pop("MINARI_DATASETS_PATH", None)
            else:
                os.environ["MINARI_DATASETS_PATH"] = old
