"""Importing d3rlpy quietly.

d3rlpy 2.8 imports the unmaintained ``gym`` package, whose ``gym_notices`` hook prints a
four-line banner on stderr at import time.  Every module of this package that needs d3rlpy
imports it through :func:`load` so the banner never reaches users; any real import error is
turned into an ``ImportError`` naming the extra to install.
"""

from __future__ import annotations

import contextlib
import io
import sys
from types import ModuleType

INSTALL_HINT = "pip install 'imaginebench[rl]'"


def load() -> ModuleType:
    """The ``d3rlpy`` module (imported once, without the gym banner)."""
    if "d3rlpy" in sys.modules:
        return sys.modules["d3rlpy"]
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            import d3rlpy
    except ImportError as exc:
        raise ImportError(f"Offline RL needs d3rlpy and torch ({exc}). Install them with: {INSTALL_HINT}") from None
    return d3rlpy
