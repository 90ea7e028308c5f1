"""One torch thread (small networks run faster and steadier on a shared 2-core machine), and
the toy-environment fixture of :mod:`tests.algos.helpers`."""

import torch

from tests.algos.helpers import toy_envs  # noqa: F401  (fixture)

torch.set_num_threads(1)
