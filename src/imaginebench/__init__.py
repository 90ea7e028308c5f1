"""ImagineBench: reinforcement learning from imaginary rollouts.

>>> import imaginebench
>>> env = imaginebench.make("CLEVR-v0", level="hard")
"""

from imaginebench.data.hub import get_dataset
from imaginebench.domains.base import LEVELS, Task
from imaginebench.envs.registry import env_ids, make, make_vec, register_domain, register_envs, unregister_domain
from imaginebench.evaluation.evaluate import EvaluationResult, evaluate
from imaginebench.evaluation.published import reference_results
from imaginebench.threads import set_threads
from imaginebench.version import __version__

__all__ = ["ENV_IDS", "LEVELS", "EvaluationResult", "Task", "env_ids", "evaluate", "get_dataset", "make", "make_vec",
           "reference_results", "register_domain", "set_threads", "unregister_domain", "__version__"]


def __getattr__(name: str):
    if name == "ENV_IDS":  # computed on access: a domain registered with register_domain is in it
        return env_ids()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


register_envs()
