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
    assert (data_home / "datasets" / "CLEVR-v0" / "tiny" / "real-train.npz").exists()
    namespace["vec"].close()
