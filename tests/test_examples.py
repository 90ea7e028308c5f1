"""The example scripts run end to end at ``tiny`` size (the fast hash encoder stands in for MiniLM)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

from tests.algos.helpers import HASH_ENCODER

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize("script", ["own_algorithm.py", "d3rlpy_direct.py"])
def test_example_runs(script, data_home, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [script, "--env", "CLEVR-v0", "--level", "rephrase", "--profile", "tiny",
                                      "--steps", "30", "--episodes-per-task", "1", "--encoder", HASH_ENCODER])
    runpy.run_path(str(EXAMPLES / script), run_name="__main__")
    out = capsys.readouterr().out
    assert "CLEVR-v0 rephrase: success" in out and "random" in out and "expert" in out
