"""Where datasets live under the data home, and ``get_dataset``.

Paths: ``<data home>/datasets/<env id>/<profile>/<source>-<level>.npz``, one file per
(source, level) so two levels can never overwrite each other.

* ``real-train``: expert rollouts of the train tasks with train phrasings (the real data);
* ``real-<rephrase|easy|hard>``: expert rollouts of that level (the "Real" upper bound);
* ``imaginary-<rephrase|easy|hard>``: rollouts imagined by the rollout language model.
"""

from __future__ import annotations

import logging
from pathlib import Path

from imaginebench.config import data_home, get_profile
from imaginebench.data.dataset import SOURCES, EpisodeDataset
from imaginebench.data.storage import load_dataset, save_dataset
from imaginebench.domains.base import check_level, choice_error

logger = logging.getLogger("imaginebench.data")


def dataset_path(env_id: str, source: str, level: str, profile: str | None = None) -> Path:
    """The file of ``source`` data for ``env_id`` at ``level`` in ``profile``."""
    from imaginebench.envs.registry import env_spec

    if source not in SOURCES:
        raise choice_error("data source", source, SOURCES)
    check_level(level)
    if source == "imaginary" and level == "train":
        raise ValueError("The train level has no imaginary data; imaginary levels are rephrase, easy, hard.")
    spec = env_spec(env_id)
    return data_home() / "datasets" / spec.env_id / get_profile(profile).name / f"{source}-{level}.npz"


def collect_command(env_id: str, level: str, profile: str | None) -> str:
    return f"imaginebench data collect --env {env_id} --level {level} --profile {get_profile(profile).name}"


def imagine_command(env_id: str, level: str, profile: str | None) -> str:
    return f"imaginebench imagine generate --env {env_id} --level {level} --profile {get_profile(profile).name}"


def load_real(env_id: str, level: str = "train", profile: str | None = None) -> EpisodeDataset:
    """Real (expert) rollouts; raises ``FileNotFoundError`` naming the command that builds them."""
    path = dataset_path(env_id, "real", level, profile)
    if not path.exists():
        raise FileNotFoundError(f"No real {level} dataset for {env_id} at {path}. "
                                f"Build it with: {collect_command(env_id, level, profile)}")
    return load_dataset(path)


def load_imaginary(env_id: str, level: str, profile: str | None = None) -> EpisodeDataset | None:
    """Imaginary rollouts of ``level``, or ``None`` (with a logged message) if not built yet."""
    if level == "train":
        return None
    path = dataset_path(env_id, "imaginary", level, profile)
    if not path.exists():
        logger.warning("No imaginary %s dataset for %s at %s; imaginary is None. Build it with: %s",
                       level, env_id, path, imagine_command(env_id, level, profile))
        return None
    return load_dataset(path)


def get_dataset(env_id: str, level: str, profile: str | None = None) -> tuple[EpisodeDataset, EpisodeDataset | None]:
    """``(real, imaginary)`` for ``level``: the real train-task data and that level's imaginary data.

    ``imaginary`` is ``None`` for the train level, and for other levels until
    ``imaginebench imagine generate`` has built it (a message says so).
    """
    check_level(level)
    return load_real(env_id, "train", profile), load_imaginary(env_id, level, profile)


def build_real(env_id: str, level: str = "train", profile: str | None = None, episodes: int | None = None,
               seed: int = 0, workers: int = 1, overwrite: bool = False, progress: bool = True) -> Path:
    """Collect expert rollouts for ``level`` and save them under the data home."""
    from imaginebench.data.collect import collect

    prof = get_profile(profile)
    path = dataset_path(env_id, "real", level, prof.name)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} already exists; pass --overwrite to rebuild it.")
    n = episodes if episodes is not None else prof.episodes(env_id, "real", level)
    ds = collect(env_id, level, n, seed=seed, workers=workers, progress=progress,
                 metadata={"profile": prof.name})
    return save_dataset(ds, path, overwrite=overwrite)
