"""ImagineBench: reinforcement learning from imaginary rollouts.

>>> import imaginebench
>>> env = imaginebench.make("CLEVR-v0", level="hard")
"""

from imaginebench.domains.base import LEVELS, Task
from imaginebench.envs.registry import ENV_IDS, make, make_vec, register_envs

__version__ = "0.1.0"
__all__ = ["ENV_IDS", "LEVELS", "Task", "make", "make_vec", "__version__"]

register_envs()
