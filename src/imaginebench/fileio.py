"""Atomic file writes: a file is either its old self or completely new, never half written."""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | Path, suffix: str = ".tmp") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` when the block succeeds.

    The parent folder is created.  If the block raises, the temporary file is removed and
    ``path`` is left untouched.  ``suffix`` matters for writers that append an extension
    (``np.savez`` adds ``.npz`` unless the name already ends with it).  The file gets the
    permissions of a plainly created one (``0666`` less the umask), not ``mkstemp``'s ``0600``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:  # name the file being written, not its temporary
        if exc.filename in (None, tmp):
            raise OSError(exc.errno, exc.strerror or first_line(exc), str(path)) from exc
        raise
    except RuntimeError as exc:
        # torch.save reports a failed write (a full disk, a file-size limit) as a RuntimeError
        if "writ" not in str(exc).lower():
            raise
        full = shutil.disk_usage(path.parent).free < FULL_DISK_BYTES
        raise OSError(errno.ENOSPC if full else errno.EIO,
                      f"{'No space left on device' if full else 'Input/output error'} ({first_line(exc)})",
                      str(path)) from exc
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


FULL_DISK_BYTES = 64 * 2**20
"""Free space under which a failed write is reported as a full disk."""


def finite_json(obj: Any) -> Any:
    """``obj`` with every NaN or infinite float (numpy's too) replaced by ``None``: NaN is not JSON,
    and a reader that meets ``null`` where it wants a number fails visibly instead of comparing NaN."""
    import math

    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    if isinstance(obj, float) or type(obj).__module__ == "numpy" and hasattr(obj, "dtype") and obj.dtype.kind == "f":
        value = float(obj)
        return value if math.isfinite(value) else None
    return obj


def write_json(path: str | Path, obj: Any) -> Path:
    """Write ``obj`` as indented JSON atomically (numpy numbers as numbers; NaN and infinities,
    which JSON has no spelling for, as ``null``: :func:`finite_json`)."""
    path = Path(path)
    text = json.dumps(finite_json(obj), indent=1, allow_nan=False, default=float)
    with atomic_path(path) as tmp:
        with open(tmp, "w") as f:
            f.write(text + "\n")
    return path


def read_json(path: str | Path) -> Any:
    """JSON from ``path``; ``NaN``/``Infinity`` (not JSON, though Python writes them) raise ``ValueError``."""
    def refuse(token: str) -> Any:
        raise ValueError(f"holds {token}, which is not a JSON number")

    return json.loads(Path(path).read_text(), parse_constant=refuse)


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) atomically."""
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path


def check_writable(path: str | Path) -> None:
    """Raise the ``OSError`` that writing under ``path`` would meet, before any work is done.

    ``path`` (a folder to be) need not exist: its nearest existing ancestor must be a writable
    folder on a writable file system.  Creates nothing, so a run that fails later on bad input
    leaves no empty folder behind.
    """
    probe = Path(path).absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(probe))
    if not os.access(probe, os.W_OK | os.X_OK):
        code = errno.EROFS if os.statvfs(probe).f_flag & os.ST_RDONLY else errno.EACCES
        raise PermissionError(code, os.strerror(code), str(probe))


def remove_temporaries(path: str | Path) -> list[Path]:
    """Delete the temporary files :func:`atomic_path` left beside ``path`` when a writer was killed
    before its rename (``.<name>.<random><suffix>``); returns what it removed.  Call it only where
    no other process writes ``path`` at the same time (a dataset being rebuilt, a run one holds)."""
    path = Path(path)
    if not path.parent.is_dir():
        return []
    stale = [p for p in path.parent.glob(f".{path.name}.*") if p.is_file() and ".tmp" in p.name[len(path.name) + 2:]]
    for p in stale:
        p.unlink(missing_ok=True)
    return stale


def torch_load_plain(source: Any, map_location: Any = "cpu") -> Any:
    """``torch.load(weights_only=True)``: tensors, numbers, strings, bytes and containers of them,
    never a pickled object (which could run code on load).  A file holding one raises a one-line
    ``ValueError`` (torch's own message spans a dozen lines and suggests the unsafe fallback)."""
    import pickle
    import warnings

    import torch

    try:
        with warnings.catch_warnings():  # torch warns about the pickle protocol of foreign files
            warnings.simplefilter("ignore")
            return torch.load(source, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError:
        raise ValueError("it holds pickled objects, not only tensors and numbers; refused, since loading it "
                         "could run code") from None


def first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of ``exc``'s message (or its type's name), at most ``limit`` characters."""
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:limit]


LOCK_NAME = ".lock"


class Busy(FileExistsError):
    """Another process is writing an output that takes one writer at a time."""


class WriterLock:
    """An exclusive lock on ``<folder>/.lock`` for an output that takes one writer at a time (a run
    folder): ``fcntl.flock``, so the operating system releases it when the holder exits or is
    killed, and a lock is never left behind.  The file keeps the last holder's pid, host and start
    time, which a refused second writer names.  The file itself stays (removing a lock file races
    with the next writer opening it)."""

    def __init__(self, folder: str | Path, what: str = "run") -> None:
        self.path = Path(folder) / LOCK_NAME
        self.what = what
        self._fd: int | None = None

    def acquire(self) -> "WriterLock":
        """Take the lock, or raise :class:`Busy` naming the holder."""
        import fcntl
        import socket
        from datetime import datetime, timezone

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666 & ~_umask())
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 200).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            raise Busy(f"{self.path.parent} is being written by {holder}; wait for that {self.what} to finish or "
                       f"stop it, then rerun this command (it resumes).") from None
        except OSError as exc:  # a file system without locks (some network mounts): write unlocked, say so
            logging.getLogger("imaginebench").warning("Cannot lock %s (%s); two writers of this %s would not be "
                                                      "kept apart.", self.path, exc.strerror or exc, self.what)
        os.ftruncate(fd, 0)
        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()} since {stamp}".encode())
        self._fd = fd
        return self

    def release(self, tidy: bool = False) -> None:
        """Let the lock go (again: nothing).  With ``tidy`` (a writer that failed before writing
        anything), a folder that holds nothing but the lock file is removed, so a failed command
        leaves no trace."""
        if self._fd is not None:
            import fcntl

            if tidy and [p.name for p in self.path.parent.iterdir()] == [LOCK_NAME]:
                self.path.unlink(missing_ok=True)
                try:
                    self.path.parent.rmdir()
                except OSError:
                    pass
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None
