"""Online adaptation: fine-tune offline policies (or networks from scratch) in the environment.

>>> from imaginebench.finetune import FinetuneSpec, finetune
>>> result = finetune(FinetuneSpec("CLEVR-v0", "easy", start="discrete_cql/imaginary", seed=0))
>>> [c["success"] for c in result.record["curve"]]
"""

from typing import Any

from imaginebench.finetune.spec import ONLINE_METHODS, FinetuneSpec

__all__ = ["FinetuneResult", "FinetuneSpec", "ONLINE_METHODS", "finetune"]


def __getattr__(name: str) -> Any:
    """The runner (which needs d3rlpy) is imported on first use, so the command-line tool's other
    verbs (e.g. the rollout model's, on a GPU machine without d3rlpy) do not need it."""
    if name in ("finetune", "FinetuneResult"):
        from imaginebench.finetune import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
