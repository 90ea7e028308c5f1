"""The ``imaginebench`` command-line tool (``imaginebench --help`` lists the verbs)."""

from __future__ import annotations

from imaginebench.cli import (  # noqa: F401  (register commands)
    bench, calibrate, data, envs, experts, imagine, report, train,
)
from imaginebench.cli.common import app


def main() -> None:
    app()


__all__ = ["app", "main"]
