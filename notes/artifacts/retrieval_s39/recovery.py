"""Share of rephrase-level phrasings that the retrieval baseline maps to a train phrasing of their own
task (under the package's default encoder).  Usage: python recovery.py > recovery.json"""
import json, sys, time

import numpy as np
import torch

from imaginebench.envs.registry import load_domain
from imaginebench.evaluation.retrieval import NearestTrainInstruction
from imaginebench.language import get_encoder

torch.set_num_threads(1)
enc = get_encoder()
out = {"encoder": enc.name}
for env in ("CLEVR-v0", "BabyAI-v0", "MetaWorld-v0", "LIBERO-v0", "HalfCheetah-v0"):
    t0 = time.time()
    domain = load_domain(env)
    r = NearestTrainInstruction(env, enc)
    task_of = {}
    for t in domain.tasks("train"):
        for text in t.bank("train"):
            task_of.setdefault(text, set()).add(t.name)
    pairs = [(text, t.name) for t in domain.tasks("rephrase") for text in t.bank("rephrase")]
    got = r.text([p for p, _ in pairs])
    right = float(np.mean([name in task_of[g] for g, (_, name) in zip(got, pairs)]))
    out[env] = {"train_phrasings": len(r.bank), "rephrase_phrasings": len(pairs), "own_task": right,
                "seconds": time.time() - t0}
    print(f"{env}: {100 * right:.1f}% of {len(pairs)} rephrasings -> own task ({time.time() - t0:.0f} s)", file=sys.stderr)
print(json.dumps(out, indent=1))
