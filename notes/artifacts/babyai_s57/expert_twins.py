"""Session 57 ablation: the expert's episode from each honest easy rollout's own first state and instruction,
written as a scratch data home's `imaginary-easy.oracle.npz` (a diagnostic, never shipped or published),
so that `train --imaginary oracle` on it asks: would 125 *perfect* rollouts of the same tasks do better?
usage: expert_twins.py HOME"""
import sys
from pathlib import Path

import numpy as np

import imaginebench
from imaginebench.data import load_imaginary
from imaginebench.data.collect import rollout
from imaginebench.data.dataset import EpisodeDataset
from imaginebench.data.storage import save_dataset

honest = load_imaginary("BabyAI-v0", "easy", "small")
env = imaginebench.make("BabyAI-v0", level="easy", encode_instruction=False).unwrapped
eps = [rollout(env, ep.task, 1000 + i, initial_state=np.asarray(ep.states[0]), instruction=ep.instruction)
       for i, ep in enumerate(honest)]
assert all(e.successes[-1] for e in eps)
print(len(eps), "expert twins; mean length", np.mean([len(e) for e in eps]), "vs imagined", np.mean([len(e) for e in honest]))
md = {**{k: v for k, v in honest.metadata.items() if k not in ("reference", "path")}, "filter": "oracle", "oracle": True,
      "note": "session 57 ablation: the expert's episode from each honest rollout's first state and instruction"}
out = Path(sys.argv[1]) / "datasets/BabyAI-v0/small/imaginary-easy.oracle.npz"
save_dataset(EpisodeDataset.from_episodes(eps, metadata=md, state_dim=17, action_shape=()), out, overwrite=True)
print(out)
