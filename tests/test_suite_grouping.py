"""The suite's ``xdist_group`` marks hold: tests that share one local Ray instance or one
worker's expert episodes run in one worker under ``--dist loadgroup`` (pytest 9.2 with
pytest-xdist 3.8 silently distributes them as if unmarked, pytest-dev/pytest-xdist#1386)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap


def test_tests_of_one_xdist_group_run_in_one_worker(tmp_path):
    (tmp_path / "test_grouped.py").write_text(textwrap.dedent("""
        import pytest

        pytestmark = pytest.mark.xdist_group("together")

        @pytest.mark.parametrize("k", range(6))
        def test_member(k):
            pass
    """))
    done = subprocess.run([sys.executable, "-m", "pytest", "-v", "-n", "2", "--dist", "loadgroup", "-p",
                           "no:cacheprovider", "-p", "no:randomly", str(tmp_path / "test_grouped.py")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    workers = set(re.findall(r"\[(gw\d+)\] \[\s*\d+%\] PASSED", done.stdout))
    assert len(re.findall(r"PASSED", done.stdout)) == 6
    assert len(workers) == 1, f"one xdist group ran in {sorted(workers)}: pin pytest below 9.2 (pyproject, dev)"
