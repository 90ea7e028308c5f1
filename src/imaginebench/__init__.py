"""ImagineBench: reinforcement learning from imaginary rollouts.

>>> import imaginebench
>>> env = imaginebench.make("CLEVR-v0", level="hard")
"""

from imaginebench.data.hub import get_dataset
from imaginebench.domains.base import LEVELS, Task
from imaginebench.envs.registry import ENV_IDS, make, make_vec, register_envs
from imaginebench.evaluation.evaluate import EvaluationResult, evaluate
from imaginebench.evaluation.published import reference_results
from imaginebench.threads import set_threads

__version__ = "0.1.0"
__all__ = ["ENV_IDS", "LEVELS", "EvaluationResult", "Task", "evaluate", "get_dataset", "make", "make_vec",
           "reference_results", "set_threads", "__version__"]

register_envs()
