"""One torch thread, and the toy-environment fixture of :mod:`tests.algos.helpers`."""

import torch

from tests.algos.helpers import toy_envs  # noqa: F401  (fixture)

torch.set_num_threads(1)
