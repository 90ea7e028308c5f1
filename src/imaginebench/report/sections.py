"""Report sections beside the success tables: rollout quality, calibration and rollout pictures.

* :func:`quality_section`: per domain and novel level, the quality of the imaginary rollouts the
  runs trained on (the ``.quality.json`` written by ``imagine generate`` / ``imagine quality``
  beside the dataset; the locally generated dataset's, else the packaged reference dataset's):
  the kept (filtered) rollouts and all generated candidates.
* :func:`calibration_section`: per domain, the stored calibration (``imaginebench calibrate``;
  expert and random success per task), summarised per level.
* :func:`rollout_strips`: per domain and novel level, one imagined rollout and the expert's real
  rollout of the same task from the same initial state, drawn from their state vectors (the
  paper's Fig. 4).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from imaginebench.data.collect import rollout
from imaginebench.data.hub import imaginary_path, load_imaginary, reference_path
from imaginebench.envs.registry import domain_class
from imaginebench.evaluation.published import format_rows, reference_results
from imaginebench.evaluation.reference import calibration_path, calibration_summary, load_calibration
from imaginebench.imagination.quality import quality_path
from imaginebench.imagination.render import rollout_strip, save_png, stack_strips, state_renderer

NOVEL_LEVELS = ("rephrase", "easy", "hard")



def _pct(value: Any) -> str:
    return "–" if value is None or value != value else f"{100 * float(value):.1f}"


def quality_report(env_id: str, level: str, profile: str) -> tuple[dict[str, Any], str] | None:
    """The quality report of the honest imaginary dataset of ``level`` and where it comes from
    (``"local"`` or ``"reference"``), or ``None`` when neither has one."""
    for origin, dataset in (("local", imaginary_path(env_id, level, profile)),
                            ("reference", reference_path(env_id, level, profile))):
        path = quality_path(dataset)
        if dataset.is_file() and path.is_file():
            try:
                return json.loads(path.read_text()), origin
            except ValueError as exc:
                raise ValueError(f"Quality report {path} is damaged ({exc}); rebuild it with: imaginebench imagine "
                                 f"quality --env {env_id} --profile {profile}") from None
    return None


def quality_section(pairs: Sequence[tuple[str, str]]) -> list[str]:
    """Markdown: one rollout-quality table per (env, profile) that has imaginary datasets."""
    out: list[str] = []
    for env_id, profile in pairs:
        found = {lv: quality_report(env_id, lv, profile) for lv in NOVEL_LEVELS}
        if not any(found.values()):
            continue
        paper = domain_class(env_id).paper_quality
        out += [f"## {env_id} — quality of the imaginary rollouts (profile `{profile}`)", "",
                "Consistency: the goal holds by the task's success test. Transition: generated (s, a, s′) within "
                "the domain's tolerance of the simulator stepped from s. Legality: generated states physically "
                "valid. Replay: the imagined actions, replayed in the simulator from the imagined start, reach the "
                "goal. Model replay: the imagined actions, run through dynamics learned from real train data (no "
                "simulator), reach the goal; inverse agreement: imagined actions the inverse model learned from real "
                "data reads off the imagined states (both – where no grounding fit is cached). *kept*: the rollouts the runs trained on (after the filter); *all*: the generated "
                "candidates (what plain generation gives; a random sample of at most 2,000 where more were "
                "generated).", "",
                "| level | data | set | rollouts | consistency | transition | legality | replay | model replay | "
                "inverse agreement | candidates per kept |",
                "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for level, item in found.items():
            if item is None:
                out.append(f"| {level} | none | – | – | – | – | – | – | – | – | – |")
                continue
            report, origin = item
            data = f"{origin}, {report.get('filter') or ('filtered' if report.get('filtered') else 'unfiltered')}"
            rows = [("kept", report)] + ([("all", report["all"])] if isinstance(report.get("all"), dict) else [])
            for name, q in rows:
                per_kept = report.get("candidates_per_kept") if name == "kept" else None
                out.append(f"| {level} | {data} | {name} | {q.get('episodes', '–')} | {_pct(q.get('consistency'))} | "
                           f"{_pct(q.get('transition_correctness'))} | {_pct(q.get('legality'))} | "
                           f"{_pct(q.get('replay_success'))} | {_pct(q.get('model_replay_success'))} | "
                           f"{_pct(q.get('inverse_agreement'))} | "
                           f"{'–' if per_kept is None else f'{float(per_kept):.1f}'} |")
            if level in paper:
                c, t, lg = paper[level]
                out.append(f"| *{level}* | *original paper (KALM)* | *–* | *–* | *{_pct(c)}* | *{_pct(t)}* | "
                           f"*{_pct(lg)}* | *–* | *–* | *–* | *–* |")
        out.append("")
    return out


def calibration_section(envs: Sequence[str]) -> list[str]:
    """Markdown: each env's stored calibration summarised per level, or how to make one."""
    out: list[str] = []
    for env_id in envs:
        out += [f"## {env_id} — calibration (expert and uniformly random policy per task)", ""]
        stored = load_calibration(env_id)
        if stored is None:
            out += [f"No calibration stored in this data home; make one with: `imaginebench calibrate --env {env_id}`.",
                    ""]
            continue
        rows, settings = stored
        episodes = sorted({r.expert_episodes for r in rows})
        random_eps = sorted({r.random_episodes for r in rows})
        out += [f"{len(rows)} tasks; expert episodes per task: {', '.join(map(str, episodes))}; random episodes per "
                f"task: {min(random_eps)}–{max(random_eps)} (doubled up to {settings.get('max_random_episodes', '?')} "
                f"until the 95% interval lies on one side of 5%). Verdicts on the 95% Wilson intervals; the per-task "
                f"table is `{calibration_path(env_id).with_suffix('.md')}`.", ""]
        out += calibration_summary(rows) + [""]
    return out


def rollout_strips(pairs: Sequence[tuple[str, str]], out_dir: Path, frames: int = 6,
                   levels: Sequence[str] = NOVEL_LEVELS) -> tuple[dict[str, Path], list[str]]:
    """Per (env, profile) and level with imaginary data: a PNG of the first imagined rollout (honest
    dataset) under the expert's real rollout of the same task and instruction from the same
    initial state.  Returns ``({caption: png}, notes)``; a domain that cannot draw is named in
    ``notes`` instead of failing the report."""
    figures: dict[str, Path] = {}
    notes: list[str] = []
    for env_id, profile in pairs:
        datasets = {lv: load_imaginary(env_id, lv, profile) for lv in levels}
        if not any(ds is not None and len(ds.lengths) for ds in datasets.values()):
            continue
        for level, ds in datasets.items():
            if ds is None or not len(ds.lengths):
                continue
            imagined = ds.episode(0)
            try:
                env, render = state_renderer(env_id, level)
            except ValueError as exc:
                notes.append(f"{env_id}: no rollout pictures ({exc})")
                break
            try:
                real = rollout(env.unwrapped, imagined.task, seed=0, policy="expert",
                               initial_state=imagined.states[0], instruction=imagined.instruction)
                strip = stack_strips([rollout_strip(real, render, "real (expert, same start)", frames),
                                      rollout_strip(imagined, render, "imaginary", frames)])
            except Exception as exc:  # rendering needs OpenGL (MuJoCo domains); the report goes on without it
                notes.append(f"{env_id} {level}: rollout pictures not drawn ({type(exc).__name__}: "
                             f"{' '.join(str(exc).split())[:200]})")
                break
            finally:
                env.close()
            path = save_png(strip, out_dir / f"rollouts-{env_id}-{profile}-{level}.png")
            figures[f"{env_id} {level} (profile {profile}): the expert's real rollout (top) and the model's imagined "
                    f"rollout (bottom) of task {imagined.task}, from the same initial state"] = path
    return figures, notes


def published_section(pairs: list[tuple[str, str]], cells: list[Any] = ()) -> list[str]:
    """The package's published rows (``imaginebench.reference_results``) of every reported env and
    profile, marked as published, to read the runs above against; where the runs above used other
    gradient steps, evaluation episodes or seed counts than the rows, a line says they are not
    comparable."""
    lines: list[str] = []
    for env, profile in pairs:
        try:
            rows = reference_results(env, profile)
        except (ValueError, KeyError):  # a plugin env or profile without published rows
            rows = []
        if rows:
            lines += [f"## Published rows: {env}, profile `{profile}` (shipped with the package, not your runs)", "",
                      "Success (%) = mean over seeds of each run's mean of its last five checkpoints; each row was "
                      "produced by the command in `imaginebench.reference_results()`.", ""]
            differs = _not_comparable([c for c in cells if (c.env, c.profile) == (env, profile)], rows)
            lines += ([differs, ""] if differs else []) + [format_rows(rows), ""]
    return lines


def _not_comparable(cells: list[Any], rows: list[dict[str, Any]]) -> str | None:
    """A sentence naming how the runs of ``cells`` differ from the published ``rows`` (gradient steps,
    evaluation episodes per task, seeds), or ``None`` if they were run the same way."""
    def joined(values: Any) -> str:
        return "/".join(f"{v:,}" for v in sorted(values))

    if not cells:
        return None
    ours = {"gradient steps": {s for c in cells for s in c.step_counts},
            "evaluation episodes per task": {e for c in cells for _, e in c.reference},
            "seeds": {c.n for c in cells}}
    theirs = {"gradient steps": {int(r["steps"]) for r in rows},
              "evaluation episodes per task": {int(r["eval_episodes_per_task"]) for r in rows},
              "seeds": {int(r["n"]) for r in rows}}
    singular = {"gradient steps": "gradient step", "evaluation episodes per task": "evaluation episode per task",
                "seeds": "seed"}
    diffs = [f"{joined(ours[k])} {singular[k] if ours[k] == {1} else k} (published: {joined(theirs[k])})"
             for k in ours if ours[k] and not ours[k] <= theirs[k]]
    if not diffs:
        return None
    return ("**Not comparable with the runs above**: they used " + ", ".join(diffs) + "; rerun them with the "
            "profile's defaults to compare.")
