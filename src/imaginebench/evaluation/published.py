"""Published baseline results: the rows our own runs produced, shipped in the package.

``reference_results(env_id, profile)`` returns the measured rows (domain, level, algorithm,
training data, seeds, mean ± std of the run scores, mean normalised score), each naming the
package version, the commit, the machine and the command that reproduces it.  A cell nobody
ran is absent, never estimated.  The file is
``imaginebench/reference_results/results-<profile>.json``; :func:`rows_from_records` makes its
rows from finished run records (one row per setting, seeds pooled), so the shipped numbers are
exactly what ``imaginebench train`` wrote.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from imaginebench.algos.registry import get_spec, resolve
from imaginebench.config import get_profile
from imaginebench.domains.base import LEVELS, check_level
from imaginebench.envs.registry import domain_class, env_ids, env_spec
from imaginebench.errors import UsageError, choice_error
from imaginebench.evaluation.records import train_data_flags
from imaginebench.fileio import atomic_path

RESULTS_SCHEMA = 1
DATA_LABELS = {"real": "real only", "imaginary": "real + imaginary (honest)",
               "imaginary-unfiltered": "real + imaginary (unfiltered)",
               "imaginary-oracle": "real + imaginary (oracle filter)",
               "imaginary-grounded": "real + imaginary (grounded)", "real-retrieval": "retrieval (real only)",
               "real-upper-bound": "Real upper bound"}


def results_path(profile: str = "small") -> Path:
    """The shipped file of ``profile``'s published rows."""
    return Path(str(resources.files("imaginebench") / "reference_results" / f"results-{profile}.json"))


def reference_results(env_id: str | None = None, profile: str = "small", *, level: str | None = None,
                      algorithm: str | None = None, data: str | None = None) -> list[dict[str, Any]]:
    """The published rows of ``profile`` (``[]`` where none were measured), optionally of one
    environment, level, algorithm or training-data variant, sorted by env, level, algorithm and
    data.  Each row: ``env, level, algorithm, data, data_label, seeds, n, mean, std, normalised,
    steps, real_episodes, eval_episodes_per_task, version, commit, command, measured_on, machine,
    profile``; ``mean``/``std`` are success rates in [0, 1] (std over seeds, ddof 1; ``None`` for
    one seed).  A row measured before its domain was resized stays, with its sizes;
    :func:`is_current` tells it apart.

    Level names are case-insensitive; ``algorithm`` is resolved per domain as ``train`` does
    (``bc`` is ``discrete_bc`` on a discrete domain); an unknown env id, profile, level, algorithm
    or data variant is a one-line error naming the valid values."""
    name = get_profile(profile).name
    if level is not None:
        level = check_level(str(level).strip().lower())
    if data is not None and data not in DATA_LABELS:
        raise choice_error("training data variant", data, tuple(DATA_LABELS))
    if algorithm is not None:
        algorithm = str(algorithm).strip().lower()
        get_spec(algorithm)  # an unknown name is a one-line error listing the algorithms
    if env_id is not None:
        env_id = env_spec(env_id).env_id
    path = results_path(name)
    if not path.exists():
        return []
    rows = [{**r, "profile": name} for r in json.loads(path.read_text()).get("rows", [])]
    rows = [r for r in rows if (env_id is None or r["env"] == env_id) and (level is None or r["level"] == level)
            and (data is None or r["data"] == data)
            and (algorithm is None or _algorithm_matches(algorithm, r["algorithm"].partition("@")[0], r["env"]))]
    order = {lv: i for i, lv in enumerate(LEVELS)}
    kinds = {d: i for i, d in enumerate(DATA_LABELS)}
    return sorted(rows, key=lambda r: (r["env"], order.get(r["level"], 9), r["algorithm"], kinds.get(r["data"], 99)))


def _algorithm_matches(asked: str, row_algorithm: str, env_id: str) -> bool:
    """Whether a row's algorithm is what ``asked`` runs on ``env_id`` (``bc`` on a discrete domain
    is ``discrete_bc``), as :func:`imaginebench.algos.registry.resolve` decides for ``train``."""
    if asked == row_algorithm:
        return True
    try:
        return resolve(asked, bool(domain_class(env_id).discrete_actions)).name == row_algorithm
    except (UsageError, KeyError):  # does not fit the domain, or a domain this install lacks
        return False


def rows_from_records(records: Iterable[Mapping[str, Any]], *, commit: str, command: str, measured_on: str,
                      machine: str) -> list[dict[str, Any]]:
    """One published row per (env, level, algorithm, data, tag, settings) of finished run records;
    ``command`` may hold ``{env}``, ``{algo}``, ``{level}``, ``{seeds}``, ``{profile}`` and ``{data_flag}``."""
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for rec in records:
        key = (rec["env"], rec["level"], rec["algo"] + (f"@{rec['tag']}" if rec.get("tag") else ""), rec["data"],
               rec["profile"], json.dumps(rec["settings"], sort_keys=True))
        groups.setdefault(key, []).append(rec)
    rows = []
    for (env, level, algo, data, profile, _), recs in sorted(groups.items()):
        recs = sorted(recs, key=lambda r: r["seed"])
        scores = np.array([float(r["score"][level]) for r in recs])
        normalised = [r.get("normalised", {}).get(level) for r in recs]
        flag = train_data_flags(data, level)
        seeds = [int(r["seed"]) for r in recs]
        rows.append({
            "env": env, "level": level, "algorithm": algo, "data": data, "data_label": DATA_LABELS.get(data, data),
            "seeds": seeds, "n": len(recs), "mean": float(scores.mean()),
            "std": float(scores.std(ddof=1)) if len(recs) > 1 else None,
            "normalised": (float(np.mean(normalised)) if all(v is not None for v in normalised) else None),
            "steps": int(recs[0]["steps"]), "real_episodes": _real_episodes(recs[0]),
            "algorithm_config": dict(recs[0].get("config", {}).get("algorithm", {})),
            "eval_episodes_per_task": int(recs[0]["eval"]["episodes_per_task"])
            if isinstance(recs[0].get("eval"), dict) and "episodes_per_task" in recs[0]["eval"]
            else int(recs[0]["settings"]["eval_episodes_per_task"]),
            "version": recs[0]["versions"]["imaginebench"], "commit": commit, "measured_on": measured_on,
            "machine": machine,
            "command": command.format(env=env, algo=algo.partition("@")[0], level=level,
                                      seeds=" ".join(map(str, seeds)), profile=profile, data_flag=flag),
        })
    return rows


def _real_episodes(record: Mapping[str, Any]) -> int | None:
    """Real train episodes the run trained on (its ``real`` source), ``None`` if it names none."""
    for source in record.get("sources", []):
        if source.get("name") == "real":
            return int(source["episodes"])
    return None


def card_settings_changed(row: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The algorithm settings the row's domain card now sets (``Domain.algo_defaults``) that the
    row was measured without: ``{field: (value then, value now)}``.  A row that does not carry its
    ``algorithm_config`` (published before rows did) was measured with the algorithm's own
    defaults, as every run was before cards set any."""
    try:
        card = domain_class(row["env"])
        algorithm = row["algorithm"].partition("@")[0]
        now = dict(card.algo_defaults.get(algorithm, {}))
        then = row.get("algorithm_config") or {}
        defaults = get_spec(algorithm).default_config() if now else None
    except (KeyError, ValueError, UsageError):  # an env or algorithm this install does not know
        return {}
    changed = {}
    for field, value in now.items():
        old = then[field] if field in then else getattr(defaults, field, None)
        if old != value:
            changed[field] = (old, value)
    return changed


def _older_sizes(row: Mapping[str, Any]) -> bool:
    """Whether ``row`` was measured at other sizes than its profile's present ones (real train
    episodes, gradient steps); ``False`` for an env this install does not know."""
    prof = get_profile(row.get("profile", "small"))
    try:
        card = domain_class(row["env"])
        real, steps = prof.episodes(card, "real", "train"), prof.steps_for(card)
    except (KeyError, ValueError):  # an env this install does not know
        return False
    return row.get("real_episodes") not in (None, real) or int(row["steps"]) != steps


def is_current(row: Mapping[str, Any]) -> bool:
    """Whether ``row`` was measured at its profile's present sizes (real train episodes and
    gradient steps, :meth:`imaginebench.config.Profile.episodes` / ``steps_for``) and with the
    algorithm settings its domain card now sets (:func:`card_settings_changed`): a domain resized
    or re-tuned after a row was published leaves that row standing, marked as measured before."""
    return not _older_sizes(row) and not card_settings_changed(row)


def _staleness(row: Mapping[str, Any]) -> str:
    """Why a row is not current, for a table: its older sizes and/or older card settings."""
    why = [f"real {row.get('real_episodes')}, {row['steps']} steps: older sizes"] if _older_sizes(row) else []
    changed = card_settings_changed(row)
    if changed:
        why.append("older settings: " + ", ".join(f"{k} {a} (now {b})" for k, (a, b) in changed.items()))
    return f" ({'; '.join(why)})" if why else ""


ROW_KEY = ("env", "level", "algorithm", "data")
"""What makes two published rows the same cell: a new row replaces the old one."""


def merge_rows(rows: Iterable[Mapping[str, Any]], profile: str = "small", dry_run: bool = False) -> list[dict[str, Any]]:
    """Put ``rows`` into the published file of ``profile``, each replacing the row of the same
    :data:`ROW_KEY`; written atomically (unless ``dry_run``).  Returns the file's rows."""
    path = results_path(profile)
    data = json.loads(path.read_text())
    new = list({tuple(r[k] for k in ROW_KEY): dict(r) for r in rows}.values())  # the last of a key wins
    keys = {tuple(r[k] for k in ROW_KEY) for r in new}
    data["rows"] = [r for r in data["rows"] if tuple(r[k] for k in ROW_KEY) not in keys] + new
    if new and not dry_run:
        with atomic_path(path, suffix=".json") as tmp:
            tmp.write_text(json.dumps(data, indent=1) + "\n")
    return data["rows"]


def format_rows(rows: Iterable[Mapping[str, Any]]) -> str:
    """Markdown table of published rows (success in %, mean ± std over seeds)."""
    lines = ["| env | level | algorithm | data | seeds | success | normalised | version |",
             "|---|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        spread = f" ± {100 * r['std']:.1f}" if r.get("std") is not None else ""
        norm = f"{round(r['normalised']):d}" if r.get("normalised") is not None else "–"  # no "-0"
        old = _staleness(r)
        lines.append(f"| {r['env']} | {r['level']} | {r['algorithm']} | {r['data_label']}{old} | {r['n']} | "
                     f"{100 * r['mean']:.1f}{spread} | {norm} | {r['version']} ({r['commit'][:7]}) |")
    return "\n".join(lines)


BASELINE_COLUMNS = ("real", "real-retrieval", "imaginary", "imaginary-grounded", "real-upper-bound")
"""The side-by-side comparison of :func:`baselines_table`, in reading order."""
REFERENCE_ALGORITHMS = ("bc", "discrete_bc", "td3bc", "discrete_cql")
"""The reference algorithms of every domain (BC / DiscreteBC, TD3+BC / DiscreteCQL)."""


def baselines_table(profile: str = "small", algorithms: Iterable[str] = REFERENCE_ALGORITHMS) -> str:
    """Markdown table: per domain, reference algorithm and level, the published success (%, mean
    over seeds) of real only, retrieval, real + imaginary (honest, grounded) and the Real upper
    bound side by side, with the train level's real-only row first (was the domain learned at
    all?).  Only rows at the profile's present sizes; "–" where a cell is not published; the best
    cell short of the upper bound in bold.  The README's table is this function's output (tested)."""
    rows = [r for r in reference_results(profile=profile) if is_current(r) and r["algorithm"] in tuple(algorithms)]
    cells = {(r["env"], r["algorithm"], r["level"], r["data"]): r for r in rows}
    order = {name: i for i, name in enumerate(algorithms)}
    envs = [e for e in env_ids() if any(r["env"] == e for r in rows)]
    heads = [DATA_LABELS[d].replace(" (real only)", "") for d in BASELINE_COLUMNS]
    lines = [f"| domain | algorithm | level | {' | '.join(heads)} |", "|---|---|---|" + "---:|" * len(heads)]

    def cell(row: Mapping[str, Any] | None, bold: bool) -> str:
        if row is None:
            return "–"
        text = f"{100 * row['mean']:.1f}" + ("" if row["n"] >= 3 else f" (n={row['n']})")
        return f"**{text}**" if bold else text

    for env in envs:
        for algo in sorted({a for (e, a, _, _) in cells if e == env}, key=order.__getitem__):
            for level in ("train", "rephrase", "easy", "hard"):
                found = [cells.get((env, algo, level, d)) for d in BASELINE_COLUMNS]
                if not any(found):
                    continue
                compared = [r["mean"] for r in found[:-1] if r is not None]
                best = max(compared) if len(compared) > 1 and max(compared) > 0 else None
                texts = [cell(r, best is not None and r is not None and i < len(found) - 1 and r["mean"] == best)
                         for i, r in enumerate(found)]
                lines.append(f"| {env} | {algo} | {level} | {' | '.join(texts)} |")
    return "\n".join(lines)
