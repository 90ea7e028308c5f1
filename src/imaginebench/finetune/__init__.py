"""Online adaptation: fine-tune offline policies (or networks from scratch) in the environment.

>>> from imaginebench.finetune import FinetuneSpec, finetune
>>> result = finetune(FinetuneSpec("CLEVR-v0", "easy", start="discrete_cql/imaginary", seed=0))
>>> [c["success"] for c in result.record["curve"]]
"""

from imaginebench.finetune.runner import FinetuneResult, finetune
from imaginebench.finetune.spec import ONLINE_METHODS, FinetuneSpec

__all__ = ["FinetuneResult", "FinetuneSpec", "ONLINE_METHODS", "finetune"]
