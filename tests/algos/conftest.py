"""One torch thread: small networks run faster and steadier on a shared 2-core machine."""

import torch

torch.set_num_threads(1)
