"""Every Python block of the README runs, in order, on a fresh data home.

The blocks are the quick start a newcomer copies; they run here at the ``tiny`` profile (the
profile named in a block and the default one are swapped for it), so the test takes seconds."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_python_blocks_run_on_a_fresh_data_home(data_home, monkeypatch, capsys):
    monkeypatch.setenv("IMAGINEBENCH_PROFILE", "tiny")
    blocks = python_blocks()
    assert len(blocks) >= 2
    namespace: dict = {}
    for block in blocks:
        code = block.replace('profile="small"', 'profile="tiny"').replace('"CLEVR-v0", "small"', '"CLEVR-v0", "tiny"')
        exec(compile(code, str(README), "exec"), namespace)  # noqa: S102  (the README's own code)
    assert "success" in capsys.readouterr().out
    # the first block's policy acts uniformly at random, so it scores like the chance row on the
    # same episodes: two binomial draws, within 2.5 standard deviations of their difference (both
    # seeded, so the check is deterministic; a policy that repeats one action batch every call
    # scored 8.8% against chance 31.2% here and fails it)
    result = namespace["result"]
    p, n = result.random, result.episodes
    assert p is not None and abs(result.success - p) <= 2.5 * (2 * max(p * (1 - p), 0.05) / n) ** 0.5, (result.success, p, n)
    assert (data_home / "datasets" / "CLEVR-v0" / "tiny" / "real-train.npz").exists()
    namespace["vec"].close()
