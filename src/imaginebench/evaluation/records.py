"""Run records: one JSON file per (env, profile, level, data, algorithm, seed).

Layout under the data home: ``runs/<env id>/<profile>/<level>/<data>/<algo>[@<tag>]/seed<k>/``
holding a run folder's files (:mod:`imaginebench.run_folder`: ``record.json`` written last,
``model.pt``, the ``model.d3`` export, ``checkpoint.pt`` while unfinished).

``data`` is ``imaginary`` (real + that level's imaginary rollouts; real only at ``train``),
``real`` (real rollouts only: the no-imagination baseline) or ``real-upper-bound`` (real +
expert rollouts of the level's tasks).

Record fields (schema 1): ``env, level, algo, algo_family, algo_label, algo_requested, tag,
seed, profile, settings`` (steps, checkpoint interval, evaluation episodes, batch size, mix
ratio, encoder, standardisation, algorithm overrides: a finished run is only reused for the
same settings), ``data,
sources`` (name, level, episodes, transitions, batch share, path), ``mix_ratio, steps,
checkpoint_every, batch_size, eval`` (levels, episodes per task, episodes per level),
``score`` (level -> mean success of the last five checkpoints), ``success`` (score at the
target level), ``per_task`` (level -> task -> mean over the last five checkpoints),
``reference`` (level -> success of the uniformly random policy and of the expert on the
run's own evaluation episodes, see :mod:`imaginebench.evaluation.reference`),
``normalised`` (level -> 100·(score − random)/(expert − random), null where the expert is not
above chance), ``curve`` (per checkpoint: step, and per level success, per-task success, mean length),
``config`` (algorithm fields, encoder, standardisation; ``derived``: what the algorithm took from the
data, e.g. Decision Transformer's target return), ``versions``, ``files`` (``model.pt`` -> its
SHA-256: what ``finetune --from`` loads, checked first), and ``timing`` (wall/train/eval seconds,
steps/s, start and end time, step resumed from) — everything that may differ between two runs of
the same seed lives under ``timing`` and ``files``.
"""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any, Iterator

from imaginebench.config import data_home
from imaginebench.fileio import read_json, write_json
from imaginebench.version import __version__

RECORD_NAME = "record.json"
"""A finished run's record in its folder (:class:`imaginebench.run_folder.RunFolder`)."""

SCHEMA_VERSION = 1
VOLATILE_KEYS = ("timing", "files")
"""Keys that may differ between two runs of the same seed: wall times, and the checksums of saved
files (``torch.save`` bytes differ with the optimiser state's history, e.g. after a resume)."""


def train_data_flags(data: str, level: str) -> str:
    """The ``imaginebench train`` flags that give a record's ``data`` setting at ``level``."""
    if data == "real":
        return " --real-only" if level != "train" else ""
    if data == "real-retrieval":
        return " --real-only --retrieval"
    if data == "real-upper-bound":
        return " --real-upper-bound"
    return f" --imaginary {data.partition('-')[2]}" if data.startswith("imaginary-") else ""


def runs_root() -> Path:
    """``<data home>/runs``."""
    return data_home() / "runs"


def versions() -> dict[str, str]:
    """Versions of Python and the packages a result depends on."""
    import gymnasium
    import numpy

    out = {"python": platform.python_version(), "imaginebench": __version__,
           "numpy": numpy.__version__, "gymnasium": gymnasium.__version__}
    for name in ("torch", "d3rlpy"):
        try:
            module = __import__(name)
            out[name] = str(module.__version__)
        except ImportError:
            pass
    return out


def _badly_typed(record: dict[str, Any]) -> str | None:
    """The first field of ``record`` whose type is not what training, reports and publishing read
    (``None``: all fine), so a damaged or hand-edited record fails where it is read, naming itself."""
    def number(x: Any) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    for name in ("env", "level", "algo", "data"):
        if name in record and not isinstance(record[name], str):
            return f"a {name} that is not text ({record[name]!r})"
    for name in ("seed", "steps"):
        if name in record and not (isinstance(record[name], int) and not isinstance(record[name], bool)):
            return f"a {name} that is not a whole number ({record[name]!r})"
    for name in ("settings", "score", "normalised", "timing", "eval", "config", "per_task"):
        if name in record and record[name] is not None and not isinstance(record[name], dict):
            return f"{name} that is not a mapping ({type(record[name]).__name__})"
    for level, value in (record.get("normalised") or {}).items():
        if value is not None and not number(value):
            return f"a normalised score at {level} that is not a number ({value!r})"
    curve = record.get("curve", [])
    if not isinstance(curve, list):
        return f"a curve that is not a list ({type(curve).__name__})"
    for entry in curve:
        if not isinstance(entry, dict) or not number(entry.get("step", 0)):
            return f"a curve entry that is not a checkpoint ({entry!r:.60})"
        for key, value in entry.items():
            if key in ("train", "rephrase", "easy", "hard") and not (isinstance(value, dict)
                                                                    and number(value.get("success"))):
                return f"a checkpoint at step {entry.get('step')} without a success rate at {key}"
    return None


def read_record(path: str | Path) -> dict[str, Any]:
    """One record; a damaged file raises ``ValueError`` naming it."""
    path = Path(path)
    try:
        record = read_json(path)
    except (OSError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
        raise ValueError(f"Cannot read run record {path}: {exc}; train that run again, or move the record out "
                         "of the runs folder.") from None
    if not isinstance(record, dict) or record.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"{path} is not a schema-{SCHEMA_VERSION} run record.")
    bad = _badly_typed(record)
    if bad:
        raise ValueError(f"Run record {path} has {bad}; train that run again in a fresh data home, or move the "
                         "record out of the runs folder.")
    scores = record.get("score")
    if isinstance(scores, dict):  # an offline run's success rate per level (a fine-tune's scores are others)
        for level, value in scores.items():
            if level not in ("train", "rephrase", "easy", "hard"):
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise ValueError(f"Run record {path} has no valid score at {level} (got {value!r}); train that run "
                                 "again in a fresh data home, or move the record out of the runs folder.")
    return record


def iter_records(root: str | Path | None = None) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every ``record.json`` under ``root`` (default :func:`runs_root`), sorted by path."""
    root = Path(root) if root is not None else runs_root()
    for path in sorted(root.rglob(RECORD_NAME)):
        yield path, read_record(path)


def load_records(root: str | Path | None = None, **filters: Any) -> list[dict[str, Any]]:
    """Records under ``root`` whose fields equal ``filters`` (e.g. ``env="CLEVR-v0"``)."""
    return [r for _, r in iter_records(root) if all(r.get(k) == v for k, v in filters.items())]


def stable_view(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` without the fields that may differ between identical runs (timing)."""
    return {k: v for k, v in record.items() if k not in VOLATILE_KEYS}
