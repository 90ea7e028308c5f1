"""The ``imaginebench`` command-line tool: one verb per pipeline stage.

Commands are thin: parse, validate, call the library. Expected errors print one line on
stderr and exit with code 1. Each stage's commands live in their own module of this package.
"""

from __future__ import annotations

import functools
from typing import Callable

import typer

from imaginebench.config import PROFILES

app = typer.Typer(help="ImagineBench: reinforcement learning from imaginary rollouts.", no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False)

EXPECTED_ERRORS = (ValueError, FileNotFoundError, FileExistsError, ImportError, NotImplementedError, KeyError)


def friendly(fn: Callable) -> Callable:
    """Turn expected errors into one line on stderr and exit code 1."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except EXPECTED_ERRORS as exc:
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            typer.echo(f"error: {msg}", err=True)
            raise typer.Exit(1) from None

    return wrapper


PROFILE_HELP = f"Size profile: {', '.join(PROFILES)} (default $IMAGINEBENCH_PROFILE or small)."


