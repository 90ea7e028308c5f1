"""Result tables (markdown) and figures (PNG) built from run records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from imaginebench.report.aggregate import Cell, aggregate, markdown


def build_report(out_dir: str | Path, runs: str | Path | None = None, pictures: bool = True,
                 **filters: Any) -> dict[str, Path]:
    """Write ``report.md``, ``success.png``, (with upper-bound runs) ``upper_bound.png``, the
    rollout pictures ``rollouts-<env>-<profile>-<level>.png`` and ``report.html`` (one
    self-contained page: the tables and the figures embedded).

    Besides the success tables, the report holds the quality of the imaginary rollouts the runs
    trained on and each domain's stored calibration (:mod:`imaginebench.report.sections`).

    Args:
        out_dir: folder for the outputs.
        runs: folder of run records (default ``<data home>/runs``).
        pictures: draw one real and one imagined rollout per domain and novel level (MuJoCo
            domains need OpenGL: ``MUJOCO_GL=egl``; where drawing fails the report says so).
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
                                f"Train some with: imaginebench train --env {filters.get('env') or 'CLEVR-v0'} --algo bc")
    from imaginebench.report.sections import calibration_section, quality_section, rollout_strips

    cells = aggregate(records)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pairs = list(dict.fromkeys((c.env, c.profile) for c in cells))
    strips, notes = rollout_strips(pairs, out) if pictures else ({}, [])
    text = markdown(cells).rstrip("\n").split("\n") + [""]
    text += quality_section(pairs) + calibration_section(list(dict.fromkeys(env for env, _ in pairs)))
    if strips or notes:
        text += ["## Rollout pictures", ""] + [f"- `{p.name}`: {caption}" for caption, p in strips.items()]
        text += [f"- {note}" for note in notes] + [""]
    written = {"report.md": out / "report.md"}
    write_text(written["report.md"], "\n".join(text).rstrip() + "\n")
    for name, path in (("success.png", success_bars(cells, out / "success.png")),
                       ("upper_bound.png", upper_bound_bars(cells, out / "upper_bound.png"))):
        if path is not None:
            written[name] = path
    written.update({p.name: p for p in strips.values()})
    from imaginebench.report.html import html_page

    captions = {"success.png": "Success per algorithm, with and without imaginary rollouts (mean, half-std bars)",
                "upper_bound.png": "Imaginary rollouts vs the Real upper bound",
                **{p.name: caption for caption, p in strips.items()}}
    page = html_page(written["report.md"].read_text(),
                     {captions[n]: p for n, p in written.items() if n in captions})
    written["report.html"] = write_text(out / "report.html", page)
    return written


__all__ = ["Cell", "aggregate", "build_report", "markdown"]
