"""An append-only, sharded on-disk store of instruction embeddings.

Each batch of newly embedded strings becomes one new shard file, ``shard-<digest>.npz`` (keys
and float32 vectors), written to a temporary name and renamed.  Nothing is ever rewritten, so:

* a miss costs one small file, not a rewrite of everything embedded so far;
* writers in several processes, or on several machines sharing the folder, never lose each
  other's work (distinct shards; the same strings embedded twice give the same vectors, and the
  first shard read wins);
* a writer killed at any moment leaves at most a temporary file that readers ignore; every
  shard already there stays intact.

:meth:`EmbeddingStore.compact` merges the shards into one (``imaginebench embed`` does it after
building a store): the merged shard is written first, then the merged files are deleted, so a
reader at any moment sees every vector at least once.  A shard that cannot be read (damaged by
a disk fault) is skipped with a warning and its strings are embedded again.
"""

from __future__ import annotations

import hashlib
import logging
import os
import zipfile
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from imaginebench.fileio import atomic_path

logger = logging.getLogger(__name__)

SHARD_PREFIX = "shard-"


def _read_shard(path: Path) -> dict[str, np.ndarray] | None:
    """The vectors of one shard, or ``None`` if it vanished (compacted) or cannot be read."""
    try:
        with np.load(path, allow_pickle=False) as z:
            keys, vectors = z["keys"], z["vectors"]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
        logger.warning("Skipping unreadable embedding shard %s (%s); its strings will be embedded again.",
                       path, exc)
        return None
    if vectors.ndim != 2 or len(keys) != len(vectors) or not np.all(np.isfinite(vectors)):
        logger.warning("Skipping malformed embedding shard %s; its strings will be embedded again.", path)
        return None
    return {str(k): v for k, v in zip(keys, vectors.astype(np.float32, copy=False))}


class EmbeddingStore:
    """Instruction → vector, for one encoder, in the folder ``root``.

    ``get`` answers from memory after reading every shard once; ``refresh`` reads the shards
    other processes added since.  ``add`` writes one new shard for the vectors it is given.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._vectors: dict[str, np.ndarray] = {}
        self._seen: set[str] = set()

    def shards(self) -> list[Path]:
        """The shard files now in the folder."""
        if not self.root.is_dir():
            return []
        return sorted(self.root.glob(f"{SHARD_PREFIX}*.npz"))

    def refresh(self) -> int:
        """Read shards not read before; returns how many strings became known.  Every vector has one
        width: the width of the vectors already held, else the one most new strings have; a shard of
        another width (another encoder's, copied in) is skipped with a warning naming it."""
        before = len(self._vectors)
        new: list[tuple[Path, dict[str, np.ndarray]]] = []
        for path in self.shards():
            if path.name in self._seen:
                continue
            found = _read_shard(path)
            if found:
                new.append((path, found))
        if not new:
            return 0
        width = self._width()
        if width is None:
            counts: dict[int, int] = {}
            for _, found in new:
                w = len(next(iter(found.values())))
                counts[w] = counts.get(w, 0) + len(found)
            width = max(counts, key=lambda w: counts[w])
        for path, found in new:
            self._seen.add(path.name)
            if len(next(iter(found.values()))) != width:
                logger.warning("Skipping embedding shard %s: its vectors have %d entries, the store's %d (another "
                               "encoder's?); move it out of %s.", path, len(next(iter(found.values()))), width,
                               self.root)
                continue
            for key, vector in found.items():
                self._vectors.setdefault(key, vector)
        return len(self._vectors) - before

    def _width(self) -> int | None:
        return int(next(iter(self._vectors.values())).shape[0]) if self._vectors else None

    def __len__(self) -> int:
        return len(self._vectors)

    def __contains__(self, text: str) -> bool:
        return text in self._vectors

    def get(self, text: str) -> np.ndarray:
        return self._vectors[text]

    def missing(self, texts: Iterable[str]) -> list[str]:
        """Strings of ``texts`` not in the store, after reading what other processes added."""
        wanted = sorted({t for t in texts if t not in self._vectors})
        if wanted and self.refresh():
            wanted = [t for t in wanted if t not in self._vectors]
        return wanted

    @property
    def dim(self) -> int | None:
        """Vector size, or ``None`` while the store is empty."""
        if not self._vectors:
            self.refresh()
        return int(next(iter(self._vectors.values())).shape[0]) if self._vectors else None

    def add(self, vectors: Mapping[str, np.ndarray]) -> Path | None:
        """Store ``vectors`` as one new shard (named by its contents); returns its path."""
        new = {k: np.asarray(v, dtype=np.float32) for k, v in vectors.items() if k not in self._vectors}
        if not new:
            return None
        keys = sorted(new)
        stacked = np.stack([new[k] for k in keys])
        if not np.all(np.isfinite(stacked)):
            raise ValueError("Refusing to store non-finite embedding vectors.")
        digest = hashlib.sha256("\n".join(keys).encode() + stacked.tobytes()).hexdigest()[:24]
        path = self._write(f"{SHARD_PREFIX}{digest}.npz", keys, stacked)
        self._seen.add(path.name)
        self._vectors.update(zip(keys, stacked))
        return path

    def _write(self, name: str, keys: Sequence[str], vectors: np.ndarray) -> Path:
        path = self.root / name
        with atomic_path(path, suffix=".tmp.npz") as tmp:
            np.savez(tmp, keys=np.array(list(keys), dtype=str), vectors=vectors)
        return path

    def compact(self) -> Path | None:
        """Merge every shard into one; returns the merged shard (``None`` if the store is empty)."""
        before = self.shards()
        self.refresh()
        if len(before) <= 1 or not self._vectors:
            return before[0] if before else None
        keys = sorted(self._vectors)
        stacked = np.stack([self._vectors[k] for k in keys])
        digest = hashlib.sha256("\n".join(keys).encode() + stacked.tobytes()).hexdigest()[:24]
        merged = self._write(f"{SHARD_PREFIX}{digest}.npz", keys, stacked)
        self._seen.add(merged.name)
        for path in before:
            if path != merged:
                try:
                    os.remove(path)
                except FileNotFoundError:
                    pass
        return merged
