"""LIBERO-v0 without its extra: ``make`` names the extra and the install command."""

from __future__ import annotations

import sys

import pytest

import imaginebench
from imaginebench.domains.libero import physics


@pytest.mark.parametrize("missing", ["libero", "robosuite"])
def test_make_without_the_extra_names_it(monkeypatch, missing):
    monkeypatch.setitem(sys.modules, missing, None)  # import of it now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'imaginebench\[libero\]'") as err:
        imaginebench.make("LIBERO-v0", encode_instruction=False)
    assert "\n" not in str(err.value)


def test_scene_without_the_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "libero.libero.envs", None)
    with pytest.raises(ImportError, match=r"imaginebench\[libero\]"):
        physics.import_libero()
