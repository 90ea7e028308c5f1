"""The evaluation protocol (balanced episodes per task, fixed reset seeds, the mean of the last
checkpoints), results records, chance/expert references and the published rows.  Training runs
live in :mod:`imaginebench.training`."""

from imaginebench.evaluation.protocol import LAST_CHECKPOINTS, Evaluator, LevelResult, eval_levels, eval_seed
from imaginebench.evaluation.records import load_records, read_record, runs_root, stable_view

__all__ = ["Evaluator", "LAST_CHECKPOINTS", "LevelResult", "eval_levels", "eval_seed", "load_records", "read_record",
           "runs_root", "stable_view"]
