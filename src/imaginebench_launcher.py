"""The ``imaginebench`` console script.

Importing the package and its verbs takes a second or two; a Ctrl-C in that window would
otherwise surface as a traceback from deep inside an import.  This module lives beside the
package (importing it imports nothing of ``imaginebench``), so the script can answer that
Ctrl-C with the CLI's own one line before the package loads, and then hand over to
:func:`imaginebench.cli.main`, which handles every later interrupt itself.
"""

from __future__ import annotations

import os
import signal
import sys

INTERRUPTED_LINE = "interrupted; rerun the same command to resume (finished work is kept)."
"""Equal to ``imaginebench.cli.common.INTERRUPTED_LINE`` (tested; not imported, see above)."""
INTERRUPTED_EXIT = 130


def _interrupted_while_loading(signum, frame) -> None:
    # Exit at once: nothing is written or started while the package loads, and an exception raised
    # here would be rewrapped by whatever code it lands in (a C extension's initialisation turns it
    # into an ImportError, a class body's ``__set_name__`` into a RuntimeError).
    sys.stderr.write(INTERRUPTED_LINE + "\n")
    sys.stderr.flush()
    os._exit(INTERRUPTED_EXIT)


def main() -> None:
    """Load the CLI with Ctrl-C answered by one line, then run it."""
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:  # started to ignore Ctrl-C (a background job, nohup): keep it so
        from imaginebench.cli import main as cli_main
    else:
        signal.signal(signal.SIGINT, _interrupted_while_loading)
        try:
            from imaginebench.cli import main as cli_main
        finally:
            signal.signal(signal.SIGINT, previous)
    cli_main()


if __name__ == "__main__":
    main()
