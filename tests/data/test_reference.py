"""Reference imaginary datasets shipped in the package: fallback, precedence, checksum."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pytest

from imaginebench.data import DatasetError, EpisodeDataset, get_dataset, load_imaginary, save_dataset
from imaginebench.data import hub
from imaginebench.data.hub import dataset_path, reference_available, reference_path
from tests.data.helpers import random_dataset

ENV, LEVEL, PROFILE = "BabyAI-v0", "easy", "tiny"
HALFCHEETAH_LEVELS = ("rephrase", "easy", "hard")
"""HalfCheetah-v0 levels with shipped reference data."""
METAWORLD_LEVELS = ("rephrase", "easy", "hard")
"""MetaWorld-v0 levels with shipped reference data (hard: 4 rollouts, one task; see reference_data/README.md)."""
LIBERO_LEVELS = ("rephrase", "easy")
"""LIBERO-v0 levels with shipped reference data (hard: see reference_data/README.md)."""


def small_dataset(seed: int, source: str = "imaginary") -> EpisodeDataset:
    ds = random_dataset(n=6, state_dim=17, seed=seed)
    return EpisodeDataset.from_episodes(list(ds), state_dim=17,
                                        metadata={"domain": ENV, "level": LEVEL, "source": source, "seed": seed})


@pytest.fixture
def reference_root(tmp_path, monkeypatch) -> Path:
    """An empty reference folder in place of the packaged one."""
    root = tmp_path / "reference_data"
    root.mkdir()
    (root / hub.REFERENCE_SUMS).write_text("# test checksums\n")
    monkeypatch.setattr(hub, "REFERENCE_ROOT", root)
    return root


def ship(root: Path, ds: EpisodeDataset, level: str = LEVEL) -> Path:
    """Save ``ds`` as the reference dataset of ``level`` and list its SHA-256."""
    path = save_dataset(ds, root / ENV / PROFILE / f"imaginary-{level}.npz")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with (root / hub.REFERENCE_SUMS).open("a") as f:
        f.write(f"{digest}  {path.relative_to(root).as_posix()}\n")
    return path


@pytest.fixture
def real_train() -> Path:
    return save_dataset(small_dataset(0, "real"), dataset_path(ENV, "real", "train", PROFILE))


def test_packaged_folder_exists():
    root = Path(hub.REFERENCE_ROOT)
    assert (root / "README.md").is_file() and (root / "SHA256SUMS").is_file()
    assert reference_path(ENV, LEVEL, PROFILE) == root / ENV / PROFILE / f"imaginary-{LEVEL}.npz"
    with pytest.raises(ValueError, match="train level has no imaginary"):
        reference_path(ENV, "train", PROFILE)
    assert not reference_available(ENV, "train", PROFILE)


def test_falls_back_to_reference(reference_root, real_train, caplog):
    shipped = ship(reference_root, small_dataset(7))
    assert reference_available(ENV, LEVEL, PROFILE)
    assert reference_path(ENV, LEVEL, PROFILE) == shipped
    assert not dataset_path(ENV, "imaginary", LEVEL, PROFILE).exists()
    with caplog.at_level(logging.INFO, logger="imaginebench.data"):
        real, imaginary = get_dataset(ENV, LEVEL, PROFILE)
    assert imaginary is not None and len(imaginary) == 6
    assert imaginary.metadata["reference"] is True
    assert imaginary.metadata["path"] == str(shipped)
    assert imaginary.metadata["seed"] == 7
    assert "reference" not in real.metadata
    messages = [r for r in caplog.records if r.name == "imaginebench.data" and r.levelno == logging.INFO]
    assert any("reference dataset" in r.getMessage() and "imagine generate" in r.getMessage() for r in messages)


def test_local_dataset_wins(reference_root, real_train):
    ship(reference_root, small_dataset(7))
    save_dataset(small_dataset(9), dataset_path(ENV, "imaginary", LEVEL, PROFILE))
    _, imaginary = get_dataset(ENV, LEVEL, PROFILE)
    assert imaginary is not None
    assert imaginary.metadata["seed"] == 9 and "reference" not in imaginary.metadata


def test_checksum_mismatch_raises_one_line(reference_root, real_train):
    shipped = ship(reference_root, small_dataset(7))
    raw = bytearray(shipped.read_bytes())
    raw[-10] ^= 0xFF
    shipped.write_bytes(bytes(raw))
    with pytest.raises(DatasetError) as err:
        load_imaginary(ENV, LEVEL, PROFILE)
    message = str(err.value)
    assert "\n" not in message
    assert str(shipped) in message and "reinstall" in message.lower()


def test_unlisted_reference_raises(reference_root):
    path = save_dataset(small_dataset(7), reference_root / ENV / PROFILE / f"imaginary-{LEVEL}.npz")
    with pytest.raises(DatasetError, match="reinstall") as err:
        load_imaginary(ENV, LEVEL, PROFILE)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_no_reference_and_no_local_gives_none(reference_root, real_train, caplog):
    ship(reference_root, small_dataset(7), level="hard")  # another level's reference does not count
    assert not reference_available(ENV, LEVEL, PROFILE)
    with caplog.at_level(logging.WARNING, logger="imaginebench.data"):
        real, imaginary = get_dataset(ENV, LEVEL, PROFILE)
    assert imaginary is None and len(real) == 6
    assert any("imaginary is None" in r.getMessage() for r in caplog.records)
    assert get_dataset(ENV, "train", PROFILE)[1] is None


SHIPPED = [(env, level) for env in ("CLEVR-v0", "BabyAI-v0") for level in ("rephrase", "easy", "hard")]
SHIPPED += [("HalfCheetah-v0", level) for level in HALFCHEETAH_LEVELS]
SHIPPED += [("MetaWorld-v0", level) for level in METAWORLD_LEVELS]
SHIPPED += [("LIBERO-v0", level) for level in LIBERO_LEVELS]
NUMERIC_LAYERS = {"CLEVR-v0": None, "BabyAI-v0": 4, "HalfCheetah-v0": 4, "MetaWorld-v0": None, "LIBERO-v0": None}
"""The rollout model behind each domain's files: full depth (None) or late entry with 4 numeric layers."""
PHYSICS_PRIOR = {"LIBERO-v0", "MetaWorld-v0"}
"""Domains whose files were imagined with the physics prior (``imagine generate --physics-prior``)."""


@pytest.mark.parametrize("env_id,level", SHIPPED)
def test_every_shipped_honest_rollout_passes_todays_honest_filter(env_id, level, data_home):
    """A change to a domain's honest filter (its legality, success or step rules) must come with
    reference files made under it: the shipped honest files are what the filter keeps."""
    from imaginebench.envs.registry import load_domain
    from imaginebench.imagination.filters import honest_ok

    domain = load_domain(env_id)
    honest = load_imaginary(env_id, level, "small")
    rejected = [i for i, episode in enumerate(honest) if not honest_ok(domain, episode)]
    assert not rejected, f"{len(rejected)} of {len(honest)} shipped rollouts fail the honest filter, e.g. #{rejected[0]}"


@pytest.mark.parametrize("env_id,level", SHIPPED)
def test_shipped_reference_datasets_load_in_an_empty_data_home(env_id, level, data_home):
    """The packaged small-profile datasets: checksummed, honest filter, the rollout model in metadata."""
    from imaginebench.data.hub import load_imaginary

    assert not (data_home / "datasets").exists()
    honest = load_imaginary(env_id, level, "small")
    assert honest is not None and len(honest) > 0
    md = honest.metadata
    assert md["reference"] is True and md["filter"] == "honest" and md["oracle"] is False
    assert md["backbone"] == "smollm2-135m" and md["model"]["num_layers"] is None
    assert md["model"].get("numeric_layers") == NUMERIC_LAYERS[env_id]
    assert md["level"] == level and md["domain"] == env_id
    assert bool((md.get("sampling") or {}).get("physics_prior", False)) == (env_id in PHYSICS_PRIOR)
    unfiltered = load_imaginary(env_id, level, "small", variant="unfiltered")
    assert unfiltered is not None and unfiltered.metadata["filter"] == "none"
    assert len(unfiltered) >= len(honest)
