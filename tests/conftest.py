"""Shared fixtures: every test gets its own data home."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(autouse=True)
def data_home(tmp_path, monkeypatch):
    """Point the data home at a temporary folder."""
    home = tmp_path / "home"
    monkeypatch.setenv("IMAGINEBENCH_HOME", str(home))
    return home
