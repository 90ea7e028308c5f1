"""Diagnostic (not the package): the session-41 BabyAI fine-tune (2,000-step schedule, same seed and data),
stopped after STEPS steps so its validation losses compare step for step with session 41's log.

    python short_finetune.py STEPS OUT_DIR THREADS {integer-embedding|rollout-x4}

integer-embedding: one learned embedding per integer value of each state field, added to the linear state
embedding; rollout-x4: the rollout task (the only one with action targets) sampled 4x as often.
"""
import sys

import torch
import torch.nn as nn

import imaginebench.imagination.lm_training as T
from imaginebench.imagination import model as M
from imaginebench.imagination import pipeline

steps, out, threads, variant = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
V = 16  # value slots per field: round(x) + 1 in 0..15 (BabyAI fields span -1..7)

if variant == "integer-embedding":
    _init = M.RolloutLM.__init__

    def __init__(self, *a, **k):
        _init(self, *a, **k)
        self.field_embed = nn.Embedding(self.state_dim * V, self.hidden_size)
        nn.init.normal_(self.field_embed.weight, std=float(self.state_embed.weight.detach().std()) * 3)
        self.register_buffer("field_offset", torch.arange(self.state_dim) * V, persistent=False)

    def embed_states(self, states):
        idx = (torch.round(states).long() + 1).clamp(0, V - 1) + self.field_offset
        return self.state_embed(self.normalise(states)) + self.field_embed(idx).sum(-2)

    M.RolloutLM.__init__ = __init__
    M.RolloutLM.embed_states = embed_states
    overrides = {}
elif variant == "rollout-x4":
    overrides = {"task_weights": (4.0, 1.0, 1.0, 1.0)}
else:
    raise SystemExit(f"unknown variant {variant!r}: integer-embedding or rollout-x4")


def on_step(n: int) -> None:
    if n >= steps:
        raise SystemExit(0)


_train = T.train_rollout_model
T.train_rollout_model = lambda *a, **k: _train(*a, **{**k, "on_step": on_step})  # pipeline.train imports it late
pipeline.train("BabyAI-v0", profile="small", out=out, threads=threads, progress=False, overwrite=True, **overrides)
