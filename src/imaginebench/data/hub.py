"""Where datasets live under the data home, and ``get_dataset``.

Paths: ``<data home>/datasets/<env id>/<profile>/<source>-<level>.npz``, one file per
(source, level) so two levels can never overwrite each other.

* ``real-train``: expert rollouts of the train tasks with train phrasings (the real data);
* ``real-<rephrase|easy|hard>``: expert rollouts of that level (the "Real" upper bound);
* ``imaginary-<rephrase|easy|hard>``: rollouts imagined by the rollout language model.

Reference imaginary datasets ship inside the package, under
``imaginebench/reference_data/<env id>/<profile>/imaginary-<level>.npz``, each listed with its
SHA-256 in ``reference_data/SHA256SUMS``.  :func:`load_imaginary` falls back to one of them
when no imaginary dataset was generated under the data home; a local dataset always wins.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from pathlib import Path
from typing import Any

from imaginebench import limits
from imaginebench.config import data_home, get_profile
from imaginebench.data.dataset import SOURCES, EpisodeDataset
from imaginebench.data.storage import DatasetError, load_dataset, save_dataset
from imaginebench.domains.base import check_level
from imaginebench.domains.env_base import provide_datasets
from imaginebench.envs.registry import domain_class, env_spec, load_domain
from imaginebench.errors import UsageError, choice_error
from imaginebench.fileio import check_writable

logger = logging.getLogger("imaginebench.data")

REFERENCE_ROOT: Path = Path(__file__).resolve().parent.parent / "reference_data"
"""The packaged reference datasets (``imaginebench/reference_data``)."""
REFERENCE_SUMS = "SHA256SUMS"
"""Checksum file in :data:`REFERENCE_ROOT`: ``<sha256>  <path relative to the folder>`` lines."""


def dataset_path(env_id: str, source: str, level: str, profile: str | None = None) -> Path:
    """The file of ``source`` data for ``env_id`` at ``level`` in ``profile``."""
    if source not in SOURCES:
        raise choice_error("data source", source, SOURCES)
    check_level(level)
    if source == "imaginary" and level == "train":
        raise UsageError("The train level has no imaginary data; imaginary levels are rephrase, easy, hard.")
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


IMAGINARY_VARIANTS: tuple[str, ...] = ("honest", "unfiltered", "oracle", "grounded")
"""Stored imaginary datasets of a level: ``honest`` (the default: kept by the domain's pure
success and legality functions), ``unfiltered`` (every generated rollout), ``oracle`` (also
checked against the simulator: a diagnostic, marked as oracle wherever it is used), ``grounded``
(candidates whose actions a forward model learned from real train data replays to the goal,
:mod:`imaginebench.imagination.grounding`; no simulator)."""


def _variant_name(level: str, variant: str) -> str:
    if variant not in IMAGINARY_VARIANTS:
        raise choice_error("imaginary data variant", variant, IMAGINARY_VARIANTS)
    return f"imaginary-{level}.npz" if variant == "honest" else f"imaginary-{level}.{variant}.npz"


def imaginary_path(env_id: str, level: str, profile: str | None = None, variant: str = "honest") -> Path:
    """The file of ``variant`` imaginary data for ``env_id`` at ``level`` under the data home."""
    return dataset_path(env_id, "imaginary", level, profile).with_name(_variant_name(level, variant))


def reference_path(env_id: str, level: str, profile: str | None = None, variant: str = "honest") -> Path:
    """Where the packaged reference imaginary dataset of ``level`` is (whether or not it ships)."""
    dataset_path(env_id, "imaginary", level, profile)  # validates id, level and profile
    return REFERENCE_ROOT / env_spec(env_id).env_id / get_profile(profile).name / _variant_name(level, variant)


def reference_available(env_id: str, level: str, profile: str | None = None, variant: str = "honest") -> bool:
    """Whether a reference imaginary dataset of ``level`` ships with the package."""
    if level == "train":
        return False
    return reference_path(env_id, level, profile, variant).is_file()


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _expected_sha256(path: Path) -> str | None:
    """The checksum :data:`REFERENCE_SUMS` lists for ``path`` (``None`` if not listed)."""
    sums = REFERENCE_ROOT / REFERENCE_SUMS
    if not sums.is_file():
        return None
    name = path.relative_to(REFERENCE_ROOT).as_posix()
    for line in sums.read_text().splitlines():
        parts = line.strip().split(maxsplit=1)
        if len(parts) == 2 and not parts[0].startswith("#") and parts[1].lstrip("*") == name:
            return parts[0].lower()
    return None


def load_reference(env_id: str, level: str, profile: str | None = None, variant: str = "honest") -> EpisodeDataset:
    """The packaged reference imaginary dataset, checked against ``SHA256SUMS``.

    Its metadata gains ``reference: True`` and ``path``.  A missing or wrong checksum raises
    :class:`DatasetError` (the installed package is damaged: reinstall it).
    """
    path = reference_path(env_id, level, profile, variant)
    if not path.is_file():
        raise FileNotFoundError(f"No reference imaginary {level} dataset for {env_id} at {path}.")
    expected = _expected_sha256(path)
    if expected is None:
        raise DatasetError(f"{path}: reference dataset has no checksum in {REFERENCE_ROOT / REFERENCE_SUMS}; "
                           "the installed package is damaged, reinstall imaginebench.")
    if _file_sha256(path) != expected:
        raise DatasetError(f"{path}: SHA-256 does not match {REFERENCE_SUMS}; the reference dataset is damaged, "
                           "reinstall imaginebench (pip install --force-reinstall imaginebench).")
    ds = load_dataset(path)
    return dataclasses.replace(ds, metadata={**ds.metadata, "reference": True, "path": str(path)})


def imaginary_levels(env_id: str, profile: str | None = None, variant: str = "honest") -> tuple[str, ...]:
    """The novel levels of ``env_id`` that have ``variant`` imaginary data (the data home's or the
    packaged reference dataset): the levels a real vs real + imaginary comparison can run on."""
    return tuple(lv for lv in ("rephrase", "easy", "hard")
                 if imaginary_path(env_id, lv, profile, variant).exists()
                 or reference_available(env_id, lv, profile, variant))


def find_imaginary(env_id: str, level: str, profile: str | None = None,
                   variant: str = "honest") -> tuple[EpisodeDataset, Path] | None:
    """The imaginary dataset of ``level`` and its file: the data home's, else the packaged reference
    dataset (checked against its SHA-256), else ``None``.  The one place that precedence is decided."""
    path = imaginary_path(env_id, level, profile, variant)
    if path.exists():
        return load_dataset(path), path
    if reference_available(env_id, level, profile, variant):
        return load_reference(env_id, level, profile, variant), reference_path(env_id, level, profile, variant)
    return None


def load_imaginary(env_id: str, level: str, profile: str | None = None,
                   variant: str = "honest") -> EpisodeDataset | None:
    """Imaginary rollouts of ``level`` (``variant``: see :data:`IMAGINARY_VARIANTS`): the locally
    generated dataset, else the packaged reference dataset, else ``None`` (with a logged message)."""
    if level == "train":
        return None
    path = imaginary_path(env_id, level, profile, variant)
    found = find_imaginary(env_id, level, profile, variant)
    if found is not None and found[1] == path:
        return found[0]
    if found is not None:
        ds = found[0]
        logger.info("No imaginary %s dataset for %s at %s; using the reference dataset shipped with "
                    "imaginebench (%s). Build your own with: %s", level, env_id, path,
                    ds.metadata["path"], imagine_command(env_id, level, profile))
        return ds
    logger.warning("No imaginary %s dataset for %s at %s; imaginary is None. Build it with: %s",
                   level, env_id, path, imagine_command(env_id, level, profile))
    return None


def check_sources_match(env_id: str, sources: dict[str, EpisodeDataset], paths: dict[str, str],
                        levels: dict[str, str], profile: str | None = None) -> None:
    """Raise :class:`DatasetError` unless every training source fits the first one (the real data).

    Checked: the domain the data was made for is ``env_id``, each source is of the level it is
    used as, and the state layout, action kind and action size are the same everywhere — a
    dataset copied in from another domain, level or package version would otherwise train
    silently on rows that mean something else.  (Instructions are stored as text and embedded by
    the run's one encoder, so real and imaginary rows always share the encoder.)
    """
    names = list(sources)
    first = sources[names[0]]

    def shape(ds: EpisodeDataset) -> tuple[Any, ...]:
        kind = "discrete" if ds.discrete_actions else "continuous"
        size = ds.metadata.get("action_dim") if ds.discrete_actions else tuple(ds.actions.shape[1:])
        return ds.state_dim, kind, size

    for name in names:
        ds, where = sources[name], paths.get(name, name)
        rebuild = ("Rebuild it with: " + (imagine_command(env_id, levels[name], profile) if ds.metadata.get("source") ==
                   "imaginary" else collect_command(env_id, levels[name], profile)))
        domain = ds.metadata.get("domain")
        if domain is not None and domain != env_id:
            raise DatasetError(f"{where}: made for {domain}, but this run trains on {env_id}. {rebuild}")
        level = ds.metadata.get("level")
        if level is not None and level != levels[name]:
            raise DatasetError(f"{where}: holds {level}-level data, but the run uses it as its {levels[name]} "
                               f"data. {rebuild}")
        if shape(ds) != shape(first):
            dim, kind, size = shape(ds)
            dim0, kind0, size0 = shape(first)
            raise DatasetError(f"{where}: {dim}-dim states with {kind} actions of size {size} do not match "
                               f"{paths.get(names[0], names[0])} ({dim0}-dim states, {kind0} actions of size {size0}); "
                               f"both must come from this package version's {env_id}. {rebuild}")


def get_dataset(env_id: str, level: str, profile: str | None = None, variant: str = "honest", *,
                build: bool = False, progress: bool = True,
                workers: int = 1) -> tuple[EpisodeDataset, EpisodeDataset | None]:
    """``(real, imaginary)`` for ``level``: the real train-task data and that level's imaginary data.

    ``imaginary`` is ``None`` for the train level.  For other levels it is the dataset
    ``imaginebench imagine generate`` built under the data home; without one, the reference
    dataset shipped in the package (metadata ``reference: True``), if any; else ``None``
    (a message says so).  With ``build=True`` missing real data is collected first with the
    expert over ``workers`` processes (a progress bar shows the rate and the time left), as
    ``imaginebench data collect --workers N`` would; without it, missing real data raises
    ``FileNotFoundError`` naming both ways to build it.  Use ``dataset.arrays()`` for flat arrays
    any framework takes.
    """
    check_level(level)
    env_id = env_spec(env_id).env_id
    path = dataset_path(env_id, "real", "train", profile)
    if not path.exists() and not build:
        raise FileNotFoundError(f"No real train dataset for {env_id} at {path}. Build it with: "
                                f"{collect_command(env_id, 'train', profile)} --workers 2, or from Python with "
                                f"get_dataset(..., build=True, workers=2).")
    if build and not path.exists():
        n = get_profile(profile).episodes(domain_class(env_id), "real", "train")
        print(f"collecting {n} expert episodes of {env_id} (train, {get_profile(profile).name} profile) into "
              f"{path} with {workers} worker{'s' if workers != 1 else ''}", flush=True)
        build_real(env_id, "train", profile, workers=workers, progress=progress)
    return load_real(env_id, "train", profile), load_imaginary(env_id, level, profile, variant)


def build_real(env_id: str, level: str = "train", profile: str | None = None, episodes: int | None = None,
               seed: int = 0, workers: int = 1, overwrite: bool = False, progress: bool = True,
               ray_address: str | None = None) -> Path:
    """Collect expert rollouts for ``level`` and save them under the data home (``ray_address``:
    see :func:`imaginebench.data.collect.collect`)."""
    from imaginebench.data.collect import chunk_folder, collect, drop_chunks

    prof = get_profile(profile)
    limits.count("--episodes", episodes, allow_none=True)
    limits.workers("--workers", workers, cluster=ray_address not in (None, "local"))
    path = dataset_path(env_id, "real", level, prof.name)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} already exists; pass --overwrite to rebuild it.")
    check_writable(path.parent)
    n = episodes if episodes is not None else prof.episodes(domain_class(env_id), "real", level)
    chunks = chunk_folder(data_home() / "cache" / "collect", load_domain(env_id), level, seed, "expert")
    ds = collect(env_id, level, n, seed=seed, workers=workers, progress=progress,
                 metadata={"profile": prof.name}, ray_address=ray_address, keep_chunks=chunks)
    saved = save_dataset(ds, path, overwrite=overwrite)
    drop_chunks(chunks)  # the dataset holds them now
    return saved


provide_datasets(get_dataset)  # env.get_dataset(level) (SPEC) calls this layer without importing it
