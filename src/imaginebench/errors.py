"""Error kinds the command-line tool tells apart.

A :class:`UsageError` is a bad argument — an unknown id, level or option value, or options
that contradict each other; the CLI prints it on one line and exits with code 2 (the code
click uses for its own usage errors). Everything else it expects (missing or corrupt data,
an existing output, a missing optional extra, a folder it cannot write) exits with code 1.
"""

from __future__ import annotations


class UsageError(ValueError):
    """A bad argument: what was given, and what would be valid."""
