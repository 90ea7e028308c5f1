"""Error kinds the command-line tool tells apart.

A :class:`UsageError` is a bad argument — an unknown id, level or option value, or options
that contradict each other; the CLI prints it on one line and exits with code 2 (the code
click uses for its own usage errors). Everything else it expects (missing or corrupt data,
an existing output, a missing optional extra, a folder it cannot write) exits with code 1.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence


class UsageError(ValueError):
    """A bad argument: what was given, and what would be valid."""


def choice_error(kind: str, value: object, choices: Sequence[str]) -> UsageError:
    """A :class:`UsageError` naming the bad value, a close match and every valid choice."""
    valid = ", ".join(str(c) for c in choices)
    close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return UsageError(f"Unknown {kind} {value!r}.{hint} Valid choices: {valid}.")
