"""The ``imaginebench`` command-line tool: one verb per pipeline stage.

Commands are thin: parse, validate, call the library. Expected errors print one line on
stderr: exit code 2 for a bad argument (:class:`~imaginebench.errors.UsageError`, and click's
own usage errors), 1 for anything else expected (missing or corrupt data, an existing output,
a missing optional extra, a folder that cannot be written). With ``IMAGINEBENCH_DEBUG=1`` the
traceback behind such a line is printed above it. Each stage's commands live in their own
module of this package.
"""

from __future__ import annotations

import errno
import functools
import os
import traceback
from typing import Callable

import typer
from tqdm import tqdm

from imaginebench.config import PROFILES
from imaginebench.errors import UsageError

app = typer.Typer(help="ImagineBench: reinforcement learning from imaginary rollouts.", no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False)

EXPECTED_ERRORS = (ValueError, FileNotFoundError, FileExistsError, ImportError, NotImplementedError, KeyError)
USAGE_EXIT = 2
RUNTIME_EXIT = 1
INTERRUPTED_EXIT = 130
"""Ctrl-C, as shells report a command ended by SIGINT (128 + 2)."""
INTERRUPTED_LINE = "interrupted; rerun the same command to resume (finished work is kept)."
DEBUG_ENV_VAR = "IMAGINEBENCH_DEBUG"
"""Set to 1 (or yes/true) to see the traceback behind a one-line error."""


def close_progress_bars() -> None:
    """Close every live tqdm bar, so none redraws itself below the one-line message that ends a
    command (an exception or Ctrl-C leaves them open until the interpreter exits)."""
    for bar in list(getattr(tqdm, "_instances", ())):
        try:
            bar.close()
        except Exception:  # noqa: BLE001  (a half-built bar: nothing left to redraw)
            pass


def say_last(line: str) -> None:
    """``line`` on stderr as the command's last words, after any progress bar."""
    close_progress_bars()
    typer.echo(line, err=True)


def debug_enabled() -> bool:
    """Whether ``IMAGINEBENCH_DEBUG`` asks for tracebacks."""
    return os.environ.get(DEBUG_ENV_VAR, "").strip().lower() in ("1", "yes", "true", "on")


def _show_traceback() -> None:
    if debug_enabled():
        traceback.print_exc()


def os_error_message(exc: OSError) -> str:
    """One line for an operating-system error (no traceback): what failed, on which path, what to do."""
    if exc.errno is None and exc.args:  # raised by our code with a message of its own
        return str(exc.args[0])
    where = f" {exc.filename}" if exc.filename else ""
    what = exc.strerror or type(exc).__name__
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        hint = (" Make it writable, or point IMAGINEBENCH_HOME (the data home) at a writable folder "
                "(or the command's output option at one).")
    elif exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        hint = " Free some space (or lift the file-size limit) or point IMAGINEBENCH_HOME at another disk."
    elif exc.errno in (errno.ENOTDIR, errno.EISDIR):
        hint = " A file stands where a folder is expected (or the other way round); move it away."
    else:
        hint = ""
    return f"cannot use{where}: {what}.{hint}"


def friendly(fn: Callable) -> Callable:
    """Turn expected errors into one line on stderr and exit code 2 (usage) or 1 (runtime)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except EXPECTED_ERRORS as exc:
            _show_traceback()
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            if isinstance(exc, OSError) and exc.errno is not None:
                msg = os_error_message(exc)
            say_last(f"error: {msg}")
            raise typer.Exit(USAGE_EXIT if isinstance(exc, UsageError) else RUNTIME_EXIT) from None
        except OSError as exc:
            _show_traceback()
            say_last(f"error: {os_error_message(exc)}")
            raise typer.Exit(RUNTIME_EXIT) from None

    return wrapper


def run_app(argv: list[str] | None = None) -> int:
    """Run the tool on ``argv`` (default: the process's) and return its exit code.

    click's usage errors (unknown command or option, a value of the wrong type, a missing
    option) are printed as one line naming the command's ``--help``, with exit code 2.
    """
    try:  # typer vendors click from 0.2x on; its exceptions are not the click package's
        from typer._click import exceptions as click_errors
    except ImportError:  # pragma: no cover
        from click import exceptions as click_errors

    try:
        code = app(args=argv, prog_name="imaginebench", standalone_mode=False)
    except click_errors.NoArgsIsHelpError as exc:
        exc.show()
        return USAGE_EXIT
    except click_errors.UsageError as exc:
        command = exc.ctx.command_path if exc.ctx is not None else "imaginebench"
        message = " ".join(exc.format_message().split())
        typer.echo(f"error: {message} (see: {command} --help)", err=True)
        return USAGE_EXIT
    except click_errors.ClickException as exc:
        typer.echo(f"error: {' '.join(exc.format_message().split())}", err=True)
        return exc.exit_code
    except (typer.Abort, getattr(click_errors, "Abort", typer.Abort), KeyboardInterrupt):
        # click turns Ctrl-C into Abort; workers were stopped on the way out (imaginebench.processes)
        say_last(INTERRUPTED_LINE)
        return INTERRUPTED_EXIT
    if code == INTERRUPTED_EXIT:
        # Ctrl-C, in a command or while typer parsed its arguments: typer turns the KeyboardInterrupt
        # into a silent exit code 130 (worker pools are already down: imaginebench.processes)
        say_last(INTERRUPTED_LINE)
    return code if isinstance(code, int) else 0


PROFILE_HELP = f"Size profile: {', '.join(PROFILES)} (default $IMAGINEBENCH_PROFILE or small)."
