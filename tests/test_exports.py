"""Every public name a module of the package exports resolves: ``__all__`` never goes stale."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import imaginebench

MODULES = sorted(m.name for m in pkgutil.walk_packages(imaginebench.__path__, "imaginebench."))


@pytest.mark.parametrize("name", ["imaginebench", *MODULES])
def test_every_name_in_all_resolves(name):
    try:
        module = importlib.import_module(name)
    except ImportError as exc:  # an optional extra this install lacks
        pytest.skip(f"{name}: {exc}")
    exported = getattr(module, "__all__", ())
    assert len(set(exported)) == len(exported), f"{name}.__all__ names something twice"
    missing = [n for n in exported if not hasattr(module, n)]
    assert missing == [], f"{name}.__all__ names what it does not define: {missing}"
