"""Diagnostic (not the package): the session-41 fine-tune with one learned embedding per integer value
of each state field added to the linear state embedding; stops after argv[1] steps of a 2,000-step
schedule so its validation losses compare with the session-41 run's at the same steps."""
import sys, torch, torch.nn as nn
from imaginebench.imagination import model as M
from imaginebench.imagination import pipeline

V = 16  # value slots per field: round(x) + 1 in 0..15 (BabyAI fields span -1..7)
_init = M.RolloutLM.__init__
def __init__(self, *a, **k):
    _init(self, *a, **k)
    self.field_embed = nn.Embedding(self.state_dim * V, self.hidden_size)
    nn.init.normal_(self.field_embed.weight, std=float(self.state_embed.weight.std()) * 3)
    self.register_buffer("field_offset", torch.arange(self.state_dim) * V, persistent=False)
def embed_states(self, states):
    idx = (torch.round(states).long() + 1).clamp(0, V - 1) + self.field_offset
    return self.state_embed(self.normalise(states)) + self.field_embed(idx).sum(-2)
M.RolloutLM.__init__ = __init__
M.RolloutLM.embed_states = embed_states
stop = int(sys.argv[1])
def on_step(n):
    if n >= stop:
        raise SystemExit(0)
from imaginebench.imagination.lm_training import train_rollout_model
import imaginebench.imagination.lm_training as T
_orig = T.train_rollout_model
def patched(*a, **k):
    k["on_step"] = on_step
    return _orig(*a, **k)
pipeline.train_rollout_model = patched  # the pipeline imports it inside train()
T.train_rollout_model = patched
pipeline.train("BabyAI-v0", profile="small", out=sys.argv[2], threads=int(sys.argv[3]), progress=False, overwrite=True)
