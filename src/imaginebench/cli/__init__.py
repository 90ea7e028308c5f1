"""The ``imaginebench`` command-line tool (``imaginebench --help`` lists the verbs)."""

from __future__ import annotations

from imaginebench.cli import calibrate, data, envs, experts, imagine, report, train  # noqa: F401  (register commands)
from imaginebench.cli.common import app


def main() -> None:
    app()


__all__ = ["app", "main"]
