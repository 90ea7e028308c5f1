"""Re-filter session 22's v1-kept Meta-World rollouts with the honest filter of HEAD (contact rule v2); copy the unfiltered file."""
import json, shutil, subprocess, sys
from pathlib import Path
import numpy as np
sys.path.insert(0, '/work/main/src')
from imaginebench.data.storage import load_dataset, save_dataset
from imaginebench.data.dataset import EpisodeDataset
from imaginebench.domains.metaworld.domain import MetaWorldDomain
from imaginebench.imagination.filters import honest_ok
SRC = Path('/work/home_mw22/datasets/MetaWorld-v0/small'); DST = Path('/work/home_mw22b/datasets/MetaWorld-v0/small')
head = subprocess.run(['git', '-C', '/work/main', 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()
dom = MetaWorldDomain()
for level in sys.argv[1:]:
    ds = load_dataset(SRC / f'imaginary-{level}.npz'); eps = list(ds)
    ok = [honest_ok(dom, e) for e in eps]; kept = [e for e, k in zip(eps, ok) if k]
    md = dict(ds.metadata); md.update(episodes=len(kept), refiltered={
        'commit': head, 'from_commit': '9bde30c', 'before': len(eps), 'after': len(kept),
        'why': "generated with the contact rule of 9bde30c (task object: any of its 7 numbers, reach 0.38 m), then "
               "kept by the honest filter of this commit (task object: position only, reach 0.28 m)"})
    out = EpisodeDataset.from_episodes(kept, metadata=md, state_dim=dom.state_dim, action_shape=(dom.action_dim,))
    save_dataset(out, DST / f'imaginary-{level}.npz', overwrite=True)
    for extra in ('unfiltered', 'candidates'):
        shutil.copy2(SRC / f'imaginary-{level}.{extra}.npz', DST / f'imaginary-{level}.{extra}.npz')
    q = json.loads((SRC / f'imaginary-{level}.quality.json').read_text())
    per = {}
    for e, k in zip(eps, ok): per.setdefault(e.task, [0, 0]); per[e.task][0] += k; per[e.task][1] += 1
    for t, v in q['per_task'].items(): v['kept_v1'] = v['kept']; v['kept'] = per.get(t, [0, 0])[0]
    q.update(episodes=len(kept), kept=len(kept), dropped=q['generated'] - len(kept), candidates_per_kept=q['generated'] / max(len(kept), 1),
             refiltered=md['refiltered'], dataset=str(DST / f'imaginary-{level}.npz'))
    (DST / f'imaginary-{level}.quality.json').write_text(json.dumps(q, indent=1) + '\n')
    print(level, len(eps), '->', len(kept), {t: v['kept'] for t, v in q['per_task'].items()})
