"""The benchmark grid: many runs (envs × algorithms × levels × data × seeds) on Ray, with their
status and scores kept in an embedded SQLite results store so a grid can be stopped and resumed.

>>> from imaginebench.sweep import GridSpec, ResultsStore, run_grid
>>> summary = run_grid(GridSpec(envs=("CLEVR-v0",), algos=("bc",), profile="tiny"), ResultsStore())

Ray is an optional dependency (``pip install 'imaginebench[ray]'``); only :func:`run_grid` needs it.
"""

from imaginebench.sweep.grid import GridSpec, run_config, run_id
from imaginebench.sweep.ray_runner import GridSummary, run_grid
from imaginebench.sweep.store import ResultsStore, default_store_path

__all__ = ["GridSpec", "GridSummary", "ResultsStore", "default_store_path", "run_config", "run_grid", "run_id"]
