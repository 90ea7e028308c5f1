"""Result tables (markdown) and figures (PNG) built from run records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from imaginebench.evaluation.records import load_records, runs_root
from imaginebench.fileio import write_text
from imaginebench.report.aggregate import Cell, aggregate, markdown


def build_report(out_dir: str | Path, runs: str | Path | None = None, pictures: bool = True,
                 finetune_runs: str | Path | None = None, **filters: Any) -> dict[str, Path]:
    """Write ``report.md``, ``success.png``, (with upper-bound runs) ``upper_bound.png``, the
    rollout pictures ``rollouts-<env>-<profile>-<level>.png`` and ``report.html`` (one
    self-contained page: the tables and the figures embedded).

    Besides the success tables, the report holds the quality of the imaginary rollouts the runs
    trained on and each domain's stored calibration (:mod:`imaginebench.report.sections`), and
    the online fine-tunes' tables and ``finetune.png`` curves (:mod:`imaginebench.report.finetune`).
    With fine-tune records only, the offline parts are left out.

    Args:
        out_dir: folder for the outputs.
        runs: folder of run records (default ``<data home>/runs``).
        finetune_runs: folder of fine-tune records (default ``<data home>/finetune``).
        pictures: draw one real and one imagined rollout per domain and novel level (MuJoCo
            domains need OpenGL: ``MUJOCO_GL=egl``; where drawing fails the report says so).
        filters: record fields to keep, e.g. ``env="CLEVR-v0"``, ``profile="small"``.

    Returns the written files by name; raises ``FileNotFoundError`` if no record (offline or
    fine-tune) matches.
    """
    from imaginebench.report.figures import success_bars, upper_bound_bars
    from imaginebench.report.finetune import finetune_curves, finetune_section, load_finetune_records

    wanted = {k: v for k, v in filters.items() if v is not None}
    records = load_records(runs, **wanted)
    tuned = load_finetune_records(finetune_runs, **wanted)
    if not records and not tuned:
        where = Path(runs) if runs is not None else runs_root()
        shown = ", ".join(f"{k}={v}" for k, v in filters.items() if v is not None)
        raise FileNotFoundError(f"No run records under {where}{' matching ' + shown if shown else ''}, "
                                "nor fine-tune records. "
                                f"Train some with: imaginebench train --env {filters.get('env') or 'CLEVR-v0'} --algo bc"
                                + (f" --profile {filters['profile']}" if filters.get("profile") else ""))
    from imaginebench.report.sections import calibration_section, published_section, quality_section, rollout_strips

    cells = aggregate(records)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pairs = list(dict.fromkeys((c.env, c.profile) for c in cells))
    strips, notes = rollout_strips(pairs, out) if pictures else ({}, [])
    text = markdown(cells).rstrip("\n").split("\n") + [""] if cells else ["# ImagineBench results", ""]
    if cells:
        text += published_section(pairs, cells)
        text += quality_section(pairs) + calibration_section(list(dict.fromkeys(env for env, _ in pairs)))
    if strips or notes:
        text += ["## Rollout pictures", ""] + [f"- `{p.name}`: {caption}" for caption, p in strips.items()]
        text += [f"- {note}" for note in notes] + [""]
    text += finetune_section(tuned)
    written = {"report.md": out / "report.md"}
    write_text(written["report.md"], "\n".join(text).rstrip() + "\n")
    for name, path in (("success.png", success_bars(cells, out / "success.png")),
                       ("upper_bound.png", upper_bound_bars(cells, out / "upper_bound.png")),
                       ("finetune.png", finetune_curves(tuned, out / "finetune.png"))):
        if path is not None:
            written[name] = path
    written.update({p.name: p for p in strips.values()})
    from imaginebench.report.html import html_page

    captions = {"success.png": "Success per algorithm, with and without imaginary rollouts (mean, half-std bars)",
                "upper_bound.png": "Imaginary rollouts vs the Real upper bound",
                "finetune.png": "Success vs environment steps during online fine-tuning (mean, half-std band)",
                **{p.name: caption for caption, p in strips.items()}}
    page = html_page(written["report.md"].read_text(),
                     {captions[n]: p for n, p in written.items() if n in captions})
    written["report.html"] = write_text(out / "report.html", page)
    return written


__all__ = ["Cell", "aggregate", "build_report", "markdown"]
