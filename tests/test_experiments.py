"""Every script in experiments/ still runs against the package's API (its --help at least)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "experiments").rglob("*.py") if p.name != "__init__.py")


def test_there_are_scripts_to_check():
    assert SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_script_starts(script):
    if "argparse" in script.read_text():  # a command: its help
        args = [sys.executable, str(script), "--help"]
    else:  # a module other scripts load (e.g. the dry-run import guard): it loads
        args = [sys.executable, "-c", f"import runpy; runpy.run_path({str(script)!r})"]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--help" not in args or "usage" in done.stdout.lower()
