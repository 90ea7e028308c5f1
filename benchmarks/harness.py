"""Shared plumbing of the scripts in ``benchmarks/``: timing, the machine line and one output format.

Every benchmark prints GitHub markdown tables (readable in a terminal, pasted as they are into
``notes/``) and, given ``--json PATH``, writes the same tables as one JSON file, so that a program
can compare runs without parsing text.  Every run first names the CPU it ran on: a timing without
its machine cannot be compared with anything.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from imaginebench.data import Episode, EpisodeDataset
from imaginebench.fileio import check_writable, write_json

Cell = str | int | float | None
"""What a table cell holds: numbers stay numbers in the JSON file, the markdown formats them."""


def median_times(fns: Sequence[Callable[[], object]], rounds: int, warmup: int = 0) -> list[float]:
    """Median seconds per call of each of ``fns``; the functions take turns, one call each per round.

    Alternating rounds make load from other processes on a shared machine hit every function
    alike, so the ratios between them hold even when the absolute times drift."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    seconds: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for k, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            seconds[k].append(time.perf_counter() - start)
    return [statistics.median(s) for s in seconds]


def calls_per_second(step: Callable[[], object], seconds: float, warmup: int = 3, min_calls: int = 3) -> float:
    """Calls of ``step`` per second over about ``seconds``, after ``warmup`` untimed calls (first
    calls pay for lazy initialisation) and never fewer than ``min_calls`` timed ones (a slow step
    still gets a rate)."""
    for _ in range(warmup):
        step()
    calls, start = 0, time.perf_counter()
    while calls < min_calls or time.perf_counter() - start < seconds:
        step()
        calls += 1
    return calls / (time.perf_counter() - start)


class Stopwatch:
    """``with Stopwatch() as watch: ...`` then ``watch.seconds``: the wall time of one block, for
    one-off costs (a build, a fit, a load) that cannot be repeated in rounds."""

    def __init__(self) -> None:
        self.seconds = float("nan")
        self._start = 0.0

    def __enter__(self) -> Stopwatch:
        self._start = time.perf_counter()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.seconds = time.perf_counter() - self._start


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``, else ``lscpu``, else what Python knows)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages: other processes' load makes every timing slower."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def machine_line() -> str:
    """CPU model, core count, torch's thread count and the load average now, in one line.

    torch's threads are named only when the script has imported torch: a script that never
    does runs no torch threads, and importing it just to ask would cost seconds and memory."""
    line = f"{cpu_model()}, {os.cpu_count()} cores"
    torch = sys.modules.get("torch")
    if torch is not None:
        line += f", torch {torch.get_num_threads()} thread(s)"
    return f"{line}; load average {load_average()}"


def _json_path(text: str) -> Path:
    """``--json``'s type: refuses, before a long run starts, a path whose folder cannot be written."""
    path = Path(text)
    try:
        check_writable(path.absolute().parent)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot write {text}: {exc.strerror or exc}") from exc
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder")
    return path


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    """Add the ``--json PATH`` option every benchmark takes (default ``None``: tables only)."""
    parser.add_argument("--json", type=_json_path, default=None, metavar="PATH",
                        help="also write every table of the run to PATH as one JSON file (atomically, at the end)")


def _plain(cell: Any) -> Cell:
    """``cell`` as a JSON-ready value: numpy scalars become Python numbers, other objects text."""
    if isinstance(cell, np.generic):
        cell = cell.item()
    return cell if cell is None or isinstance(cell, (str, int, float)) else str(cell)


class Table:
    """A GitHub markdown table, printed row by row as results arrive (a long benchmark shows its
    progress), and kept for the JSON file.  A row that follows another table's row repeats the
    title (marked "continued") and header, so that interleaved tables still print as valid markdown.

    ``formats`` maps a column to a ``str.format`` template (``"{:,.0f}"``, ``"{:.2f}x"``) applied
    to its numbers; such a column is right-aligned.  ``None`` and NaN (not measured) print as ``-``
    and are ``null`` in JSON, as are infinities (:func:`imaginebench.fileio.write_json`)."""

    _last_printed: Table | None = None
    """The table whose row was printed last, shared by all tables."""

    def __init__(self, title: str, columns: Sequence[str], formats: Mapping[str, str] | None = None) -> None:
        if len(set(columns)) != len(columns):
            raise ValueError(f"column names repeat: {list(columns)} (formats and JSON readers find columns by name)")
        self.formats = dict(formats or {})
        unknown = set(self.formats) - set(columns)
        if unknown:
            raise ValueError(f"formats for columns the table lacks: {sorted(unknown)}")
        self.title = title
        self.columns = list(columns)
        self.rows: list[list[Cell]] = []

    def add(self, *cells: Any) -> None:
        """Append one row (one cell per column) and print it, after the title and header if first."""
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns {self.columns}")
        if not self.rows or Table._last_printed is not self:
            print("\n" + "\n".join(self._head(continued=bool(self.rows))), flush=True)
        self.rows.append([_plain(cell) for cell in cells])
        print(self._line(self.rows[-1]), flush=True)
        Table._last_printed = self

    def markdown(self) -> str:
        """The title, header and every row so far, as printed."""
        return "\n".join([*self._head(), *(self._line(row) for row in self.rows)])

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "columns": self.columns, "rows": self.rows}

    def _head(self, continued: bool = False) -> list[str]:
        rule = "|" + "|".join("---:" if name in self.formats else "---" for name in self.columns) + "|"
        title = f"### {self.title} (continued)" if continued else f"### {self.title}"
        return [title, "", "| " + " | ".join(self.columns) + " |", rule]

    def _line(self, row: Sequence[Cell]) -> str:
        return "| " + " | ".join(self._text(name, cell) for name, cell in zip(self.columns, row)) + " |"

    def _text(self, column: str, cell: Cell) -> str:
        if cell is None or isinstance(cell, float) and math.isnan(cell):
            return "-"
        template = self.formats.get(column)
        if template is not None and isinstance(cell, (int, float)) and not isinstance(cell, bool):
            return template.format(cell)
        return str(cell).replace("|", "\\|")


class Report:
    """Every table of one benchmark run and the machine it ran on; written as one JSON file at the
    end when the script got ``--json PATH``.  Creating it prints the machine line, so create it
    after setting torch's thread count."""

    def __init__(self, script: str, json_path: Path | None) -> None:
        self.script = Path(script).name
        self.json_path = json_path
        self.machine = machine_line()
        self.tables: list[Table] = []
        print(f"machine: {self.machine}", flush=True)

    def table(self, title: str, columns: Sequence[str], formats: Mapping[str, str] | None = None) -> Table:
        """A new :class:`Table` that belongs to this run."""
        table = Table(title, columns, formats)
        self.tables.append(table)
        return table

    def to_json(self) -> dict[str, Any]:
        return {"script": self.script, "machine": self.machine, "tables": [t.to_json() for t in self.tables]}

    def finish(self) -> None:
        """Print the load average at the end (did it change during the run?) and write the JSON file."""
        print(f"\nload average at the end: {load_average()}", flush=True)
        if self.json_path is not None:
            write_json(self.json_path, self.to_json())
            print(f"tables written to {self.json_path}", flush=True)


# ------------------------------------------------------------------ synthetic data
STATE_DIM, EMBED_DIM, N_ACTIONS, ACTION_DIM = 10, 384, 40, 4


def synthetic(n_episodes: int, discrete: bool, seed: int, n_instructions: int = 80) -> EpisodeDataset:
    """CLEVR-sized episodes (10-d states, up to 50 steps) with ``n_instructions`` phrasings: data of the
    real shapes for throughput benchmarks that must not depend on a collected dataset."""
    rng = np.random.default_rng(seed)
    episodes = []
    for i in range(n_episodes):
        t = int(rng.integers(5, 51))
        term = np.zeros(t, bool)
        term[-1] = rng.random() < 0.8
        actions = rng.integers(0, N_ACTIONS, t) if discrete else rng.uniform(-1, 1, (t, ACTION_DIM)).astype(np.float32)
        episodes.append(Episode(task=f"task{i % 20}", instruction=f"instruction {seed} {i % n_instructions}",
                                states=rng.normal(size=(t + 1, STATE_DIM)).astype(np.float32), actions=actions,
                                rewards=rng.normal(size=t).astype(np.float32), terminals=term,
                                truncations=~term & (np.arange(t) == t - 1), successes=term.copy()))
    return EpisodeDataset.from_episodes(episodes, metadata={"action_dim": N_ACTIONS if discrete else ACTION_DIM})
