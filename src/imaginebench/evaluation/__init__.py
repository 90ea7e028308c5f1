"""The evaluation protocol, training runs and their results records."""

from imaginebench.evaluation.protocol import LAST_CHECKPOINTS, Evaluator, LevelResult, eval_levels, eval_seed
from imaginebench.evaluation.records import load_records, read_record, runs_root, stable_view
from imaginebench.evaluation.runner import DATA_VARIANTS, RunResult, RunSpec, run_dir, train

__all__ = [
    "DATA_VARIANTS", "Evaluator", "LAST_CHECKPOINTS", "LevelResult", "RunResult", "RunSpec", "eval_levels",
    "eval_seed", "load_records", "read_record", "run_dir", "runs_root", "stable_view", "train",
]
