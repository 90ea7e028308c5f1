"""One writer per run folder: a second ``train`` of the same run is refused, naming the first."""

from __future__ import annotations

import os
import threading

import pytest

from imaginebench.fileio import Busy, WriterLock
from imaginebench.training import RunSpec, run_dir, train
from tests.training.test_runner import SMALL, toy_data  # noqa: F401  (toy_data: fixture)


def test_a_run_folder_held_by_another_writer_is_refused_and_left_as_it_was(toy_data):
    spec = RunSpec("Toy-v0", "bc", level="easy", data="real", **SMALL)
    folder = run_dir(spec)
    folder.mkdir(parents=True)
    other = WriterLock(folder).acquire()  # another process's writer, as far as the folder can tell
    with pytest.raises(Busy, match=f"{folder} is being written by pid {os.getpid()} on .* since .*; wait for that "
                                   "run to finish or stop it, then rerun this command"):
        train(spec, progress=False)
    assert sorted(p.name for p in folder.iterdir()) == [".lock"]
    other.release()
    result = train(spec, progress=False)  # the writer gone, the run trains
    assert not result.skipped and (folder / "record.json").exists()
    lock = WriterLock(folder).acquire()  # and its lock was let go
    lock.release()


def test_two_trains_of_one_run_started_together_leave_one_writers_files(toy_data):
    spec = RunSpec("Toy-v0", "discrete_cql", level="easy", data="real", **SMALL)
    outcomes: list = [None, None]
    start = threading.Barrier(2)

    def go(i):
        start.wait()
        try:
            outcomes[i] = train(spec, progress=False)
        except Busy as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    trained = [o for o in outcomes if not isinstance(o, Busy) and not o.skipped]
    assert len(trained) == 1, outcomes  # the other was refused, or found it finished and skipped it
    import hashlib

    from imaginebench.algos.weights import MODEL_FILE

    model = (run_dir(spec) / MODEL_FILE).read_bytes()
    assert trained[0].record["files"][MODEL_FILE] == hashlib.sha256(model).hexdigest()


def test_a_claim_builds_under_the_lock_tidies_a_failed_start_and_yields_to_a_finished_folder(tmp_path):
    """``RunFolder.claim``: the start offline training and online fine-tuning share."""
    from imaginebench.run_folder import RunFolder

    folder = RunFolder(tmp_path / "run")

    def fails() -> None:
        raise RuntimeError("no data")

    with pytest.raises(RuntimeError, match="no data"):
        folder.claim(fails)
    assert not folder.path.exists()  # a start that failed before writing leaves no folder behind

    def build() -> str:
        with pytest.raises(Busy):  # built while the lock is held
            WriterLock(folder.path).acquire()
        return "built"

    built, lock = folder.claim(build)
    assert built == "built"
    lock.release()
    folder.record_path.write_text("{}")  # another process finished it meanwhile
    assert folder.claim(lambda: pytest.fail("built a finished run")) is None
    WriterLock(folder.path).acquire().release()  # and the lock was let go
