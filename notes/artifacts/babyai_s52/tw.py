"""Diagnostic: the session-41 fine-tune with the rollout task sampled 4x as often (task weights 4,1,1,1),
stopped after argv[1] steps of the 2,000-step schedule, to compare validation losses step for step."""
import sys
from imaginebench.imagination import pipeline
import imaginebench.imagination.lm_training as T
stop = int(sys.argv[1])
def on_step(n):
    if n >= stop:
        raise SystemExit(0)
_orig = T.train_rollout_model
def patched(*a, **k):
    k["on_step"] = on_step
    return _orig(*a, **k)
T.train_rollout_model = patched
pipeline.train("BabyAI-v0", profile="small", out=sys.argv[2], threads=int(sys.argv[3]), progress=False, overwrite=True,
               task_weights=(4.0, 1.0, 1.0, 1.0))
