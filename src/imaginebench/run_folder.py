"""The life of a run folder, one implementation for every stage that trains something.

Offline runs (:mod:`imaginebench.training`) and online fine-tunes (:mod:`imaginebench.finetune`)
keep the same files::

    record.json      the results record, written last: its presence means "finished"
    model.pt         final weights + d3rlpy config, read without unpickling (imaginebench.algos.weights)
    model.d3         the same in d3rlpy's own pickle format: an export, never read here
    checkpoint.pt    resume state while unfinished (removed when the record is written)
    .lock            the writer lock: one process writes a folder at a time (imaginebench.fileio.WriterLock)

and the same rules: a finished run is skipped when its settings equal the requested ones and
refused with :class:`SettingsClash` when they differ (a ``--tag`` keeps both); an unfinished
one resumes from its checkpoint, whose model bytes are checked against their SHA-256 first;
temporaries of a killed attempt are removed before anything is written.  The rollout model's
fine-tune (:mod:`imaginebench.imagination.lm_training`) keeps other files (safetensors and a
JSON meta, :mod:`imaginebench.imagination.checkpoint`) but refuses a clash of settings with the
same error, so every stage exits with the same code for it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

from imaginebench.algos.weights import MODEL_FILE, save_model
from imaginebench.errors import UsageError
from imaginebench.evaluation.records import RECORD_NAME, read_record
from imaginebench.fileio import (WriterLock, atomic_path, check_writable, first_line, remove_temporaries,
                                 torch_load_plain, write_json)

CHECKPOINT_NAME = "checkpoint.pt"
MODEL_NAME = "model.d3"
FILES = (CHECKPOINT_NAME, RECORD_NAME, MODEL_NAME, "model.pt")
T = TypeVar("T")


class SettingsClash(UsageError):
    """A folder holds work made with other settings than the ones asked for."""


def check_settings(found: Mapping[str, Any] | None, wanted: Mapping[str, Any], where: Path | str,
                   what: str = "run", remedy: str | None = None, absent: Mapping[str, Any] | None = None) -> None:
    """Raise :class:`SettingsClash` naming every setting of ``wanted`` that ``found`` holds
    differently (``found`` ``None``: nothing recorded, nothing to compare).  ``absent``: the value a
    setting that ``found`` does not name had (a field added since, at the default that keeps the
    old behaviour); without it a setting ``found`` lacks counts as ``None``."""
    if found is None:
        return
    absent = absent or {}
    have = {k: found[k] if k in found else absent.get(k) for k in wanted}
    diff = ", ".join(f"{k} {have[k]!r} there vs {wanted[k]!r} now" for k in wanted if have[k] != wanted[k])
    if not diff:
        return
    remedy = remedy or (f"Give this {what} a --tag (e.g. --tag variant) so both are kept; the {what} there is left "
                        "as it is.")
    raise SettingsClash(f"{where} holds a {what} with other settings ({diff}). {remedy}")


@dataclass(frozen=True)
class RunFolder:
    """One run's folder.

    Attributes:
        path: the folder.
        what: what it holds, in messages (``"run"``, ``"fine-tune"``).
    """

    path: Path
    what: str = "run"

    @property
    def record_path(self) -> Path:
        return self.path / RECORD_NAME

    @property
    def checkpoint_path(self) -> Path:
        return self.path / CHECKPOINT_NAME

    @property
    def finished(self) -> bool:
        return self.record_path.exists()

    def read_record(self) -> dict[str, Any]:
        return read_record(self.record_path)

    def check(self, found: Mapping[str, Any] | None, wanted: Mapping[str, Any],
              absent: Mapping[str, Any] | None = None) -> None:
        """:func:`check_settings` for this folder."""
        check_settings(found, wanted, self.path, self.what, absent=absent)

    def open(self) -> WriterLock:
        """Make the folder ready to write and take its writer lock (:class:`~imaginebench.fileio.
        WriterLock`; a second writer of the same folder is refused with :class:`~imaginebench.fileio.
        Busy` naming the first): refuse an unwritable folder, create it, lock it, then remove a killed
        attempt's temporaries.  The caller releases the lock when done (the OS does if it dies)."""
        check_writable(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        lock = WriterLock(self.path, self.what).acquire()
        for name in FILES:
            remove_temporaries(self.path / name)
        return lock

    def claim(self, build: Callable[[], T]) -> tuple[T, WriterLock] | None:
        """Take the folder's writer lock (:meth:`open`), then ``build()`` what will write it; returns
        ``(built, lock)``, or ``None`` where another process finished the folder meanwhile (read its
        record instead).  A build that fails releases the lock and leaves no folder behind.  The
        start every stage that trains something shares."""
        lock = self.open()
        try:
            if self.finished:
                lock.release()
                return None
            return build(), lock
        except BaseException:
            lock.release(tidy=True)
            raise

    def save_checkpoint(self, state: dict[str, Any]) -> None:
        """Write ``state`` (plain data; ``state["model"]``: the algorithm's bytes) atomically, with
        the model bytes' SHA-256 beside them."""
        import torch

        state = {**state, "model_sha256": hashlib.sha256(state["model"]).hexdigest()}
        with atomic_path(self.checkpoint_path) as tmp:
            torch.save(state, tmp)

    def load_checkpoint(self, wanted: Mapping[str, Any], restore: Callable[[dict[str, Any]], None] | None = None,
                        absent: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The checkpoint's state, its model bytes checked against their SHA-256 and its settings
        against ``wanted``, then handed to ``restore`` (which loads it into the run); a damaged
        file, or one ``restore`` cannot load, is a one-line error naming what to delete."""
        def damaged(exc: Exception) -> ValueError:
            return ValueError(f"Cannot resume from {self.checkpoint_path} ({first_line(exc)}); delete that file to "
                              f"restart the {self.what} from scratch.")

        try:
            state = torch_load_plain(self.checkpoint_path)  # plain data: no pickled code runs
            if hashlib.sha256(state["model"]).hexdigest() != state["model_sha256"]:
                raise ValueError("the model and optimiser bytes do not match their SHA-256")
        except Exception as exc:  # a damaged checkpoint is an error, never silently ignored
            raise damaged(exc) from None
        self.check(state.get("settings"), wanted, absent)
        if restore is not None:
            try:
                restore(state)
            except Exception as exc:
                raise damaged(exc) from None
        return state

    def finish(self, record: dict[str, Any], algo: Any) -> dict[str, Any]:
        """Save the final weights (``model.pt``, and d3rlpy's export), then the record with the
        weights' checksum under ``files``, then drop the checkpoint; returns the record."""
        record["files"] = {MODEL_FILE: save_model(algo, self.path / MODEL_FILE)}  # what finetune --from reads
        with atomic_path(self.path / MODEL_NAME) as tmp:  # d3rlpy's format, an export for its users
            algo.save(str(tmp))
        write_json(self.record_path, record)
        self.checkpoint_path.unlink(missing_ok=True)
        return record
