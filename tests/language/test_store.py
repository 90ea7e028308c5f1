"""The embedding store: append-only shards, concurrent writers, kill -9 mid-write, exact vectors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from imaginebench.language.store import EmbeddingStore

ROOT = Path(__file__).resolve().parents[2]


def fake_vector(text: str, dim: int = 6) -> np.ndarray:
    """A deterministic stand-in vector per string (the store does not care where vectors come from)."""
    seed = int.from_bytes(text.encode()[:8].ljust(8, b"\0"), "little") ^ len(text)
    return np.random.default_rng(seed).normal(size=dim).astype(np.float32)


WRITER = """
import sys, time
from pathlib import Path
from imaginebench.language.store import EmbeddingStore
from tests.language.test_store import fake_vector

root, tag, start = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
while not start.exists():
    time.sleep(0.001)
store = EmbeddingStore(root)
for batch in range(40):
    texts = [f"{tag} instruction {batch} {i}" for i in range(5)] + [f"shared {batch}"]
    store.add({t: fake_vector(t) for t in store.missing(texts)})
"""


def test_two_processes_writing_at_once_keep_both_sets(tmp_path):
    start = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "store"), tag, str(start)], cwd=ROOT,
                              env=env) for tag in ("alpha", "beta")]
    time.sleep(0.5)
    start.touch()
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    store = EmbeddingStore(tmp_path / "store")
    store.refresh()
    expected = {f"{tag} instruction {b} {i}" for tag in ("alpha", "beta") for b in range(40) for i in range(5)}
    expected |= {f"shared {b}" for b in range(40)}
    assert set(store._vectors) == expected
    for text in expected:
        np.testing.assert_array_equal(store.get(text), fake_vector(text))
    assert not list((tmp_path / "store").glob(".*"))  # no temporaries left
    merged = store.compact()
    assert [p.name for p in store.shards()] == [merged.name]
    again = EmbeddingStore(tmp_path / "store")
    again.refresh()
    assert set(again._vectors) == expected


KILLED_WRITER = """
import os, sys, time
from pathlib import Path
import numpy as np
from imaginebench.language.store import EmbeddingStore
from tests.language.test_store import fake_vector

root, marker = Path(sys.argv[1]), Path(sys.argv[2])
real_savez = np.savez

def half_then_wait(file, **arrays):
    real_savez(file, **arrays)
    with open(file, "r+b") as fh:  # as if the process died half-way through writing the shard
        fh.truncate(os.path.getsize(file) // 2)
    marker.write_text(str(os.getpid()))
    while True:
        time.sleep(60)

np.savez = half_then_wait
store = EmbeddingStore(root)
store.add({t: fake_vector(t) for t in ["new one", "new two"]})
"""


def test_a_writer_killed_mid_write_leaves_the_old_entries_intact(tmp_path):
    root = tmp_path / "store"
    old = EmbeddingStore(root)
    old.add({t: fake_vector(t) for t in ["old one", "old two"]})
    before = {p.name: p.read_bytes() for p in root.iterdir()}
    marker = tmp_path / "marker"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(root), str(marker)], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the writer never reached its write"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert {p.name: p.read_bytes() for p in root.iterdir() if not p.name.startswith(".")} == before
    assert any(p.name.startswith(".") for p in root.iterdir())  # the killed write's half file
    store = EmbeddingStore(root)
    store.refresh()
    assert set(store._vectors) == {"old one", "old two"}
    assert store.missing(["old one", "new one"]) == ["new one"]
    store.add({"new one": fake_vector("new one")})
    fresh = EmbeddingStore(root)
    fresh.refresh()
    np.testing.assert_array_equal(fresh.get("new one"), fake_vector("new one"))


def test_an_unreadable_shard_is_skipped_and_its_strings_embedded_again(tmp_path, caplog):
    store = EmbeddingStore(tmp_path)
    shard = store.add({"a": fake_vector("a")})
    shard.write_bytes(shard.read_bytes()[:40])
    fresh = EmbeddingStore(tmp_path)
    assert fresh.missing(["a"]) == ["a"] and "unreadable embedding shard" in caplog.text
    with pytest.raises(ValueError, match="non-finite"):
        fresh.add({"b": np.array([np.nan, 1.0], dtype=np.float32)})


def test_a_shard_of_another_width_is_skipped_naming_it(tmp_path, caplog):
    store = EmbeddingStore(tmp_path)
    store.add({t: fake_vector(t) for t in ("a", "b", "c")})
    odd = store.add({"d": fake_vector("d", dim=9)})  # another encoder's shard, copied in
    fresh = EmbeddingStore(tmp_path)
    assert fresh.missing(["a", "b", "c", "d"]) == ["d"] and fresh.dim == 6
    assert f"Skipping embedding shard {odd}: its vectors have 9 entries, the store's 6" in caplog.text
    np.testing.assert_array_equal(np.stack([fresh.get(t) for t in "abc"]), np.stack([fake_vector(t) for t in "abc"]))


def test_the_encoder_returns_exactly_the_vectors_it_computes_and_loads_silently(tmp_path, capfd):
    from imaginebench.language import MINILM, InstructionEncoder
    from imaginebench.language.encoders import _minilm_dir

    texts = ["go to the red ball", "open the door", "go to the red ball", "pick up the key"]
    enc = InstructionEncoder(MINILM, _minilm_dir(), cache_dir=tmp_path)
    vecs = enc.encode(texts)
    assert capfd.readouterr().err == ""  # no progress bar or load report from the model's loader
    direct = dict(zip(sorted(set(texts)), InstructionEncoder(MINILM, _minilm_dir(), cache_dir=tmp_path / "x")
                      ._embed(sorted(set(texts)))))
    np.testing.assert_array_equal(vecs, np.stack([direct[t] for t in texts]))
    reread = InstructionEncoder(MINILM, _minilm_dir(), cache_dir=tmp_path)
    np.testing.assert_array_equal(reread.encode(texts), vecs)
    assert reread._model is None  # answered from the store
    assert reread.prepare(texts + ["a new instruction"]) == 1 and reread.prepare(texts) == 0
