"""Result tables (markdown) and figures (PNG) built from run records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from imaginebench.report.aggregate import Cell, aggregate, markdown


def build_report(out_dir: str | Path, runs: str | Path | None = None, **filters: Any) -> dict[str, Path]:
    """Write ``report.md``, ``success.png``, (with upper-bound runs) ``upper_bound.png`` and
    ``report.html`` (one self-contained page: the tables and the figures embedded).

    Args:
        out_dir: folder for the outputs.
        runs: folder of run records (default ``<data home>/runs``).
        filters: record fields to keep, e.g. ``env="CLEVR-v0"``, ``profile="small"``.

    Returns the written files by name; raises ``FileNotFoundError`` if no record matches.
    """
    from imaginebench.evaluation.records import load_records, runs_root
    from imaginebench.fileio import write_text
    from imaginebench.report.figures import success_bars, upper_bound_bars

    records = load_records(runs, **{k: v for k, v in filters.items() if v is not None})
    if not records:
        where = Path(runs) if runs is not None else runs_root()
        shown = ", ".join(f"{k}={v}" for k, v in filters.items() if v is not None)
        raise FileNotFoundError(f"No run records under {where}{' matching ' + shown if shown else ''}. "
                                f"Train some with: imaginebench train --env CLEVR-v0 --algo bc")
    cells = aggregate(records)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = {"report.md": out / "report.md"}
    write_text(written["report.md"], markdown(cells))
    for name, path in (("success.png", success_bars(cells, out / "success.png")),
                       ("upper_bound.png", upper_bound_bars(cells, out / "upper_bound.png"))):
        if path is not None:
            written[name] = path
    from imaginebench.report.html import html_page

    captions = {"success.png": "Success per algorithm, with and without imaginary rollouts (mean, half-std bars)",
                "upper_bound.png": "Imaginary rollouts vs the Real upper bound"}
    page = html_page(written["report.md"].read_text(),
                     {captions[n]: p for n, p in written.items() if n in captions})
    written["report.html"] = write_text(out / "report.html", page)
    return written


__all__ = ["Cell", "aggregate", "build_report", "markdown"]
