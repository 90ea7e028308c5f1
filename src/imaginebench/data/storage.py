"""On-disk dataset format: one zip file (readable by ``numpy.load``) with a checksummed manifest.

Layout of ``<name>.npz``::

    manifest.json      {"format": "imaginebench-episodes", "schema_version": 1,
                        "metadata": {...}, "tasks": [...], "instructions": [...],
                        "arrays": {name: {"shape", "dtype", "sha256"}}}
    <array>.npy        one member per column of :class:`EpisodeDataset`

Members are stored uncompressed (fast to read) unless written with ``compress=True`` (deflated:
what the package's reference files use where states are wide and repetitive — Meta-World's 91-d
entity slots shrink ~5×); the reader takes both.  Files are written to a temporary name in the
same folder and renamed, so a crash never leaves a partial file and never damages an existing one.  Every array is verified against
its SHA-256 on load; a damaged file raises :class:`DatasetError` naming the file.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from imaginebench.data.dataset import EpisodeDataset
from imaginebench.fileio import atomic_path, remove_temporaries

FORMAT_NAME = "imaginebench-episodes"
SCHEMA_VERSION = 1
MANIFEST = "manifest.json"


class DatasetError(ValueError):
    """A dataset file is missing, damaged, truncated or of an unknown format."""


def _sha256(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).view(np.uint8).reshape(-1).data).hexdigest()


def _member(name: str, compress: bool = False) -> zipfile.ZipInfo:
    """A zip member with a fixed timestamp, so equal datasets give byte-identical files."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    return info


def save_dataset(dataset: EpisodeDataset, path: str | Path, overwrite: bool = False, compress: bool = False) -> Path:
    """Write ``dataset`` to ``path`` atomically; refuse to replace a file unless ``overwrite``.
    ``compress`` deflates the members (smaller files, slower reads)."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} already exists; pass overwrite=True (CLI: --overwrite) to replace it.")
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_temporaries(path)  # a killed earlier write's, never read as data
    arrays = {name: np.ascontiguousarray(getattr(dataset, name)) for name in EpisodeDataset.ARRAYS}
    manifest: dict[str, Any] = {
        "format": FORMAT_NAME,
        "schema_version": SCHEMA_VERSION,
        "metadata": dict(dataset.metadata),
        "tasks": list(dataset.tasks),
        "instructions": list(dataset.instructions),
        "arrays": {n: {"shape": list(a.shape), "dtype": a.dtype.str, "sha256": _sha256(a)} for n, a in arrays.items()},
    }
    with atomic_path(path) as tmp:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            zf.writestr(_member(MANIFEST, compress), json.dumps(manifest, indent=1))
            for name, array in arrays.items():
                with zf.open(_member(f"{name}.npy", compress), "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, array, allow_pickle=False)
    return path


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The manifest of a dataset file (cheap: reads no arrays)."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as zf:
            return _manifest(zf, path)
    except FileNotFoundError:
        raise
    except DatasetError:
        raise
    except Exception as exc:
        raise DatasetError(f"{path}: not a readable ImagineBench dataset ({type(exc).__name__}: {exc}); "
                           "delete it and rebuild it.") from None


def _manifest(zf: zipfile.ZipFile, path: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(zf.read(MANIFEST))
    except KeyError:
        raise DatasetError(f"{path}: no {MANIFEST}; not an ImagineBench dataset.") from None
    if manifest.get("format") != FORMAT_NAME:
        raise DatasetError(f"{path}: unknown format {manifest.get('format')!r}; expected {FORMAT_NAME!r}.")
    version = manifest.get("schema_version")
    if version != SCHEMA_VERSION:
        raise DatasetError(f"{path}: schema version {version} is not supported (this imaginebench reads "
                           f"version {SCHEMA_VERSION}); rebuild the dataset or upgrade imaginebench.")
    return manifest


def load_dataset(path: str | Path, verify: bool = True) -> EpisodeDataset:
    """Read a dataset written by :func:`save_dataset`, checking every array's checksum and (with
    ``verify``) that its contents are usable (:func:`check_contents`)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"No dataset at {path}.")
    try:
        with zipfile.ZipFile(path) as zf:
            manifest = _manifest(zf, path)
            arrays = {}
            for name in EpisodeDataset.ARRAYS:
                spec = manifest["arrays"][name]
                array = np.lib.format.read_array(io.BytesIO(zf.read(f"{name}.npy")), allow_pickle=False)
                if list(array.shape) != spec["shape"] or array.dtype.str != spec["dtype"]:
                    raise DatasetError(f"{path}: array {name!r} has shape {array.shape}/{array.dtype.str}, "
                                       f"manifest says {tuple(spec['shape'])}/{spec['dtype']}.")
                if verify and _sha256(array) != spec["sha256"]:
                    raise DatasetError(f"{path}: checksum mismatch in array {name!r}; the file is corrupt. "
                                       "Delete it and rebuild it.")
                arrays[name] = array
        ds = EpisodeDataset(**arrays, tasks=tuple(manifest["tasks"]),
                            instructions=tuple(manifest["instructions"]), metadata=manifest["metadata"])
    except DatasetError:
        raise
    except Exception as exc:
        raise DatasetError(f"{path}: corrupt or truncated dataset file ({type(exc).__name__}: {exc}); "
                           "delete it and rebuild it.") from None
    if verify:
        check_contents(ds, path)
    return ds


ACTION_RANGE_TOLERANCE = 1e-6
"""How far a continuous action may lie outside [-1, 1] (float rounding)."""


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


DTYPE_KINDS = {"states": "f", "actions": "iuf", "rewards": "f", "terminals": "bu", "truncations": "bu",
               "successes": "bu", "lengths": "iu", "task_ids": "iu", "instruction_ids": "iu"}
"""numpy dtype kinds each array may have (float states and rewards, integer ids and lengths, ...)."""
KIND_NAMES = {"f": "float", "i": "integer", "u": "unsigned integer", "b": "bool"}


def check_contents(ds: EpisodeDataset, path: str | Path) -> None:
    """Raise :class:`DatasetError` (one line: file, check, first bad episode, fix) unless every value
    is finite, the state width and the actions fit the metadata's ``state_dim``, ``action_dim``
    and ``discrete_actions``, and termination/truncation flags sit only on an episode's last step
    (never both).  Vectorised; checksums say a file is intact, this says its contents are usable."""
    meta = ds.metadata
    source, env_id, level = meta.get("source", "?"), meta.get("domain", "<env>"), meta.get("level", "<level>")
    profile = f" --profile {meta['profile']}" if meta.get("profile") else ""
    fix = (f"imaginebench imagine generate --env {env_id} --level {level}{profile} --overwrite" if source == "imaginary"
           else f"imaginebench data collect --env {env_id} --level {level}{profile} --overwrite")

    def fail(what: str, episode: int) -> None:
        raise DatasetError(f"{path}: {what} (first at episode {episode}); the file's contents are unusable: "
                           f"delete it and rebuild it with: {fix}")

    for name, kinds in DTYPE_KINDS.items():
        kind = getattr(ds, name).dtype.kind
        if kind not in kinds:
            fail(f"array {name!r} has dtype {getattr(ds, name).dtype} (expected "
                 f"{' or '.join(KIND_NAMES[k] for k in kinds)})", 0)
    if len(ds.lengths) == 0:
        raise DatasetError(f"{path}: holds no episodes; nothing to train on: delete it and rebuild it with: {fix}")
    for name, table in (("task_ids", ds.tasks), ("instruction_ids", ds.instructions)):
        ids = getattr(ds, name)
        bad = (ids < 0) | (ids >= len(table))
        if bad.any():
            fail(f"{name} holds {int(ids[_first(bad)])}, outside its table of {len(table)} strings",
                 _first(bad))
    episode_of_action = np.repeat(np.arange(len(ds.lengths)), ds.lengths)
    episode_of_state = np.repeat(np.arange(len(ds.lengths)), ds.lengths + 1)
    if ds.states.size and not np.all(np.isfinite(ds.states)):
        fail("a state holds NaN or inf", int(episode_of_state[_first(~np.isfinite(ds.states).all(axis=1))]))
    if not np.all(np.isfinite(ds.rewards)):
        fail("a reward is NaN or inf", int(episode_of_action[_first(~np.isfinite(ds.rewards))]))
    if "state_dim" in meta and ds.states.shape[1] != int(meta["state_dim"]):
        fail(f"states have {ds.states.shape[1]} values, the metadata's state_dim is {meta['state_dim']}", 0)
    actions = ds.actions.reshape(len(ds.actions), int(np.prod(ds.actions.shape[1:], dtype=np.int64)))
    if np.issubdtype(actions.dtype, np.floating) and not np.all(np.isfinite(actions)):
        fail("an action holds NaN or inf", int(episode_of_action[_first(~np.isfinite(actions).all(axis=1))]))
    if "action_dim" in meta and len(actions):
        n = int(meta["action_dim"])
        if meta.get("discrete_actions"):
            bad = (actions[:, 0] < 0) | (actions[:, 0] >= n) | (actions[:, 0] != np.round(actions[:, 0]))
            if bad.any():
                fail(f"a discrete action is outside 0..{n - 1}", int(episode_of_action[_first(bad)]))
        else:
            if actions.shape[1] != n:
                fail(f"actions have {actions.shape[1]} values, the metadata's action_dim is {n}", 0)
            bad = (np.abs(actions) > 1 + ACTION_RANGE_TOLERANCE).any(axis=1)
            if bad.any():
                fail("a continuous action lies outside [-1, 1]", int(episode_of_action[_first(bad)]))
    last = np.zeros(len(ds.terminals), dtype=bool)
    ends = np.cumsum(ds.lengths)[ds.lengths > 0] - 1
    last[ends] = True
    flagged = ds.terminals.astype(bool) | ds.truncations.astype(bool)
    if np.any(flagged & ~last):
        fail("a termination or truncation flag sits before an episode's last step",
             int(episode_of_action[_first(flagged & ~last)]))
    both = ds.terminals.astype(bool) & ds.truncations.astype(bool)
    if both.any():
        fail("a step is both terminated and truncated", int(episode_of_action[_first(both)]))
