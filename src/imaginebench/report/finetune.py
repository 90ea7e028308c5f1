"""Online fine-tuning results: the records of ``imaginebench finetune`` as tables and curves.

Records are grouped by (env, profile, level) and, within that, by (start, method, tag, budget,
evaluation interval): seeds of one row always share their budget and their evaluation steps, so
nothing of different lengths is averaged together.  Success is given in % as mean ± std over
seeds (sample std, ``ddof=1``; 0 for one seed); the curves draw a band of half a standard
deviation.  Chance (uniformly random policy) and expert are measured on the same evaluation
episodes as the fine-tunes (see :func:`imaginebench.finetune.runner.build_record`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from imaginebench.config import data_home
from imaginebench.evaluation.records import load_records
from imaginebench.report.figures import _pyplot, _save

START_ORDER = ("scratch", "offline real", "offline real+imaginary")
MAX_COLUMNS = 11
"""At most this many evaluation columns (more: the first, every k-th and the last)."""

Group = tuple[str, str, str]  # env, profile, level
Row = tuple[str, str, str, int, int]  # start name, method, tag, budget, eval_every


def load_finetune_records(root: str | Path | None = None, **filters: Any) -> list[dict[str, Any]]:
    """Fine-tune records under ``root`` (default ``<data home>/finetune``) whose fields equal
    ``filters`` (e.g. ``env="CLEVR-v0"``)."""
    if root is None:
        root = data_home() / "finetune"  # FINETUNE_DIR of imaginebench.finetune.spec (which imports d3rlpy)
    return load_records(root, **filters)


def _row_key(r: dict[str, Any]) -> Row:
    return r["start"]["name"], r["method"], r.get("tag") or "", int(r["budget"]), int(r["eval_every"])


def _grouped(records: Sequence[dict[str, Any]]) -> dict[Group, dict[Row, list[dict[str, Any]]]]:
    """``{(env, profile, level): {row key: records sorted by seed}}`` in display order."""
    out: dict[Group, dict[Row, list[dict[str, Any]]]] = {}
    for r in sorted(records, key=lambda r: (r["env"], r["profile"], r["level"], int(r["seed"]))):
        out.setdefault((r["env"], r["profile"], r["level"]), {}).setdefault(_row_key(r), []).append(r)

    def order(item: tuple[Row, list[dict[str, Any]]]) -> tuple:
        (start, method, tag, budget, every), rs = item
        label = rs[0]["start"].get("label", start)
        return (budget, every, START_ORDER.index(label) if label in START_ORDER else 99, label, start, method, tag)

    return {g: dict(sorted(rows.items(), key=order)) for g, rows in out.items()}


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    return float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def _pct(values: Sequence[float]) -> str:
    if not values:
        return "–"
    mean, std = _mean_std(values)
    return f"{100 * mean:.1f} ± {100 * std:.1f}"


def _short(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else f"{n:,}"


def _at(records: Sequence[dict[str, Any]], step: int) -> list[float]:
    """Each seed's success at ``step`` environment steps (seeds without that evaluation left out)."""
    return [float(c["success"]) for r in records for c in r["curve"] if int(c["env_steps"]) == step]


def _columns(steps: list[int]) -> list[int]:
    if len(steps) <= MAX_COLUMNS:
        return steps
    k = -(-(len(steps) - 1) // (MAX_COLUMNS - 1))
    return steps[::k] + ([steps[-1]] if (len(steps) - 1) % k else [])


def _references(records: Sequence[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """Chance and expert, mean ± std over the distinct (seed, episodes per task) of ``records``."""
    merged = {(int(r["seed"]), int(r.get("eval", {}).get("episodes_per_task", 0))): r["reference"]
              for r in records if r.get("reference")}
    return {k: _mean_std([float(v[k]) for v in merged.values()]) for k in ("random", "expert")} if merged else {}


def _row_name(rs: list[dict[str, Any]], ambiguous: bool) -> tuple[str, str]:
    r = rs[0]
    start = r["start"].get("label", r["start"]["name"]) + (f" (`{r['start']['name']}`)" if ambiguous else "")
    method = r.get("method_label", r["method"]) + (f" [{r['tag']}]" if r.get("tag") else "")
    return start, method


def _half_expert(rs: list[dict[str, Any]]) -> str:
    reached = [int(s) for r in rs if (s := r["score"].get("steps_to_half_expert")) is not None]
    return f"{np.mean(reached):,.0f} ({len(reached)}/{len(rs)} reached)" if reached else "–"


def finetune_section(records: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown lines: per (env, profile, level) and budget, success at the evaluation steps,
    AUC and steps to half the expert's success, one row per start and method."""
    if not records:
        return []
    out = ["## Online fine-tuning", "",
           "Success rate (%) of the fine-tuned policy at each evaluation (columns: environment steps; 0 = the "
           "start itself), mean ± std over seeds. AUC: mean success over the budget (trapezoid), mean ± std. "
           "½ expert: environment steps of the first evaluation at or above half the expert's success, mean over "
           "the seeds that reached it.", ""]
    for (env, profile, level), rows in _grouped(records).items():
        out += [f"### {env} — `{level}` (profile `{profile}`)", ""]
        for budget, every in dict.fromkeys((k[3], k[4]) for k in rows):
            table = {k: rs for k, rs in rows.items() if (k[3], k[4]) == (budget, every)}
            members = [r for rs in table.values() for r in rs]
            methods = ", ".join(dict.fromkeys(r.get("method_label", r["method"]) for r in members))
            steps = sorted({int(c["env_steps"]) for r in members for c in r["curve"]})
            shown = _columns(steps)
            out += [f"budget {budget:,} environment steps, evaluated every {every:,}"
                    + (f" (columns: {len(shown)} of {len(steps)} evaluations)" if shown != steps else "")
                    + f"; method{'s' if ',' in methods else ''} {methods}", ""]
            labels = {k[0]: rs[0]["start"].get("label", k[0]) for k, rs in table.items()}
            shared = list(labels.values())  # one entry per start: a label two starts share names them
            out += ["| start | method | n | " + " | ".join(_short(s) for s in shown) + " | AUC | steps to ½ expert |",
                    "|---|---|---:|" + "---:|" * (len(shown) + 2)]
            for key, rs in table.items():
                start, method = _row_name(rs, shared.count(labels[key[0]]) > 1)
                cells = [_pct(_at(rs, s)) for s in shown]
                cells += [_pct([float(r["score"]["auc"]) for r in rs]), _half_expert(rs)]
                out.append(f"| {start} | {method} | {len(rs)} | " + " | ".join(cells) + " |")
            refs = _references(members)
            if refs:
                out += ["", f"Chance (uniformly random policy): {_pct_ms(refs['random'])}; expert: "
                        f"{_pct_ms(refs['expert'])} (same evaluation episodes)."]
            out.append("")
    return out


def _pct_ms(mean_std: tuple[float, float]) -> str:
    return f"{100 * mean_std[0]:.1f} ± {100 * mean_std[1]:.1f} %"


def finetune_curves(records: Sequence[dict[str, Any]], path: str | Path) -> Path | None:
    """Success vs environment steps, one panel per (env, profile, level), one line per start and
    method (mean over seeds, band of ± half a std); chance dashed, expert dotted."""
    if not records:
        return None

    plt = _pyplot()
    groups = _grouped(records)
    fig, axes = plt.subplots(1, len(groups), figsize=(5.5 * len(groups), 4.6), squeeze=False)
    for ax, ((env, profile, level), rows) in zip(axes[0], groups.items()):
        budgets = len({(k[3], k[4]) for k in rows}) > 1
        for key, rs in rows.items():
            steps = sorted({int(c["env_steps"]) for r in rs for c in r["curve"]})
            stats = np.array([_mean_std(_at(rs, s)) for s in steps]) * 100
            start, method = _row_name(rs, False)
            name = f"{start} → {method}" + (f" ({_short(key[3])} budget)" if budgets else "")
            (line,) = ax.plot(steps, stats[:, 0], marker="o", markersize=3, label=name)
            ax.fill_between(steps, stats[:, 0] - stats[:, 1] / 2, stats[:, 0] + stats[:, 1] / 2,
                            color=line.get_color(), alpha=0.2)
        refs = _references([r for rs in rows.values() for r in rs])
        for name, style, label in (("random", "--", "chance (random policy)"), ("expert", ":", "expert")):
            if name in refs:
                ax.axhline(100 * refs[name][0], color="black", linestyle=style, linewidth=1.2, label=label)
        ax.set_ylim(0, 105)
        ax.set_xlabel("environment steps")
        ax.set_ylabel("success rate (%)")
        ax.set_title(f"{env} — {level} ({profile})")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, frameon=False)
    fig.suptitle("Online fine-tuning: success vs environment steps (band: ½ std over seeds)", fontsize=10)
    path = _save(fig, Path(path))
    plt.close(fig)
    return path
