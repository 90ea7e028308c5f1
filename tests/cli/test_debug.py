"""IMAGINEBENCH_DEBUG=1 shows the traceback behind a one-line error; without it, one line only."""

from __future__ import annotations

import pytest

from imaginebench.cli import run_app


@pytest.mark.parametrize("debug", ["", "0", "1", "true"])
def test_debug_shows_the_traceback_above_the_line(debug, data_home, monkeypatch, capsys):
    monkeypatch.setenv("IMAGINEBENCH_DEBUG", debug)
    code = run_app(["report", "--env", "CLEVR-v0", "--profile", "tiny"])  # an empty data home: no records
    err = capsys.readouterr().err
    assert code == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: No run records") and "imaginebench train" in last  # the same line either way, with the command to run
    if debug in ("1", "true"):
        assert "Traceback (most recent call last)" in err and "FileNotFoundError" in err
    else:
        assert err.strip().count("\n") == 0 and "Traceback" not in err
