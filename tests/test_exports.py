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


def test_the_version_is_stated_once_for_the_package_and_its_metadata():
    import tomllib
    from pathlib import Path

    from imaginebench.version import __version__

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert imaginebench.__version__ == __version__ == pyproject["project"]["version"]
