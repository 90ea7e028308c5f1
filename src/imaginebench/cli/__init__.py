"""The ``imaginebench`` command-line tool (``imaginebench --help`` lists the verbs)."""

from __future__ import annotations

import sys

from imaginebench.cli import (  # noqa: F401  (register commands)
    bench, calibrate, data, embed, envs, experts, finetune, imagine, report, results, train,
)
from imaginebench.cli.common import app, run_app


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``imaginebench`` script: exits with :func:`run_app`'s code."""
    sys.exit(run_app(argv))


__all__ = ["app", "main", "run_app"]
