"""The grid's cost cache: measured rates kept in the data home, a damaged file measured again."""

from __future__ import annotations

import json

from imaginebench.sweep.cost import RateCache


def test_a_damaged_rate_cache_is_measured_again_not_trusted(tmp_path):
    path = tmp_path / "cost.json"
    calls = []

    def measure():
        calls.append(1)
        return 12.5

    for content in (b"[1, 2, 3]", b"\xff\xfe", json.dumps({"a": "fast", "b": -1, "c": float("nan")}).encode(), b"{"):
        path.write_bytes(content)
        cache = RateCache(path)
        assert cache.get("a", measure) == 12.5
        assert json.loads(path.read_text())["a"] == 12.5
    assert len(calls) == 4
    assert RateCache(path).get("a", measure) == 12.5 and len(calls) == 4  # a good file is reused
