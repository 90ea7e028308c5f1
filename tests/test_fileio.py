"""Atomic writes: the old file survives a failed write, no temporary files are left."""

from __future__ import annotations

import json
import math

import pytest

from imaginebench.fileio import atomic_path, write_json


def test_failed_write_keeps_the_old_file(tmp_path):
    target = tmp_path / "sub" / "data.txt"
    with atomic_path(target) as tmp:
        tmp.write_text("first")
    assert target.read_text() == "first"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("disk full")
    assert target.read_text() == "first"
    assert sorted(p.name for p in target.parent.iterdir()) == ["data.txt"]


def test_write_json_round_trip_with_numpy_and_nan(tmp_path):
    """numpy numbers are written as numbers; NaN, which JSON cannot spell, as null (valid JSON)."""
    import numpy as np

    path = write_json(tmp_path / "r.json", {"a": np.float32(0.5), "b": math.nan, "c": [1, 2], "d": np.int64(3)})
    back = json.loads(path.read_text(), parse_constant=lambda token: pytest.fail(f"{token} written"))
    assert back == {"a": 0.5, "b": None, "c": [1, 2], "d": 3}


def test_atomic_files_get_the_permissions_of_a_plain_file(tmp_path):
    import os
    import stat

    from imaginebench.fileio import write_json

    plain = tmp_path / "plain.json"
    plain.write_text("{}")
    written = write_json(tmp_path / "atomic.json", {})
    assert stat.S_IMODE(os.stat(written).st_mode) == stat.S_IMODE(os.stat(plain).st_mode)


def test_remove_temporaries_deletes_only_a_killed_writers_leftovers(tmp_path):
    from imaginebench.fileio import remove_temporaries

    target = tmp_path / "real-train.npz"
    target.write_text("data")
    leftovers = [tmp_path / ".real-train.npz.ab12cd.tmp", tmp_path / ".real-train.npz.x9.tmp.npz"]
    keep = [tmp_path / ".real-train.npz.notes", tmp_path / ".other.npz.ab12.tmp", tmp_path / "real-train.npz.tmp"]
    for p in leftovers + keep:
        p.write_text("x")
    assert sorted(remove_temporaries(target)) == sorted(leftovers)
    assert all(p.exists() for p in keep) and target.read_text() == "data"
    assert remove_temporaries(tmp_path / "missing" / "file") == []
