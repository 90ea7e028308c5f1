"""Helpers for tests that run the command-line tool through Typer's ``CliRunner``."""

from __future__ import annotations


def error_line(result) -> str:
    """The one line a failed command printed (stderr where the runner keeps it apart); fails the
    test if there is more than one line or the line is not an ``error:`` line."""
    out = result.stderr if hasattr(result, "stderr") else result.output
    lines = [ln for ln in out.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, out
    assert lines[0].startswith("error: ")
    return lines[0]
