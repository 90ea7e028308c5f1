"""Run a drawing check in a subprocess with an OpenGL backend for MuJoCo.

MuJoCo picks its backend (``MUJOCO_GL``) when it is imported, so checks that draw run in a fresh
interpreter with ``MUJOCO_GL=egl`` (unless set).  The script prints ``NO-GL <reason>`` and exits 0
where no OpenGL context can be made (the test then skips), and ``OK`` when its checks pass.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def run_drawing_check(script: str, timeout: int = 300) -> None:
    """Run ``script``; fail on an error, skip on ``NO-GL``, require ``OK``."""
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=timeout)
    assert r.returncode == 0, r.stderr[-2000:]
    if "NO-GL" in r.stdout:
        pytest.skip(f"no OpenGL backend for MuJoCo here: {r.stdout.strip()[:200]}")
    assert "OK" in r.stdout
