"""Re-filter a domain's shipped honest rollouts with the honest filter of HEAD (propulsion check added):
what generation would have kept of the same candidates. Writes DST/imaginary-<level>.npz and .quality.json.

    python refilter.py ENV_ID SRC_DIR DST_DIR LEVEL...
"""
import json, subprocess, sys
from pathlib import Path
from imaginebench.data.storage import load_dataset, save_dataset
from imaginebench.data.dataset import EpisodeDataset
from imaginebench.envs.registry import load_domain
from imaginebench.imagination.filters import honest_ok

ENV, SRC, DST = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
head = subprocess.run(['git', '-C', str(Path(__file__).parent), 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()
dom = load_domain(ENV)
WHY = {"HalfCheetah-v0": "HalfCheetahDomain.unpowered: the first 20 actions replayed through a dynamics model fit on the "
                         "real train data must reach 0.2 of the rollout's own displacement",
       "MetaWorld-v0": "MetaWorldDomain.unpowered: over the first 10 actions the imagined hand stays within 0.0759 m of "
                       "where the arm's linear position control moves it"}
for level in sys.argv[4:]:
    ds = load_dataset(SRC / f'imaginary-{level}.npz'); eps = list(ds)
    ok = [honest_ok(dom, e) for e in eps]; kept = [e for e, k in zip(eps, ok) if k]
    md = dict(ds.metadata); md.update(episodes=len(kept), refiltered={
        'commit': head, 'before': len(eps), 'after': len(kept),
        'why': "generated and kept by the honest filter without the propulsion check, then kept by the honest "
               f"filter of this commit ({WHY[ENV]})"})
    out = EpisodeDataset.from_episodes(kept, metadata=md, state_dim=dom.state_dim, action_shape=(dom.action_dim,))
    save_dataset(out, DST / f'imaginary-{level}.npz', overwrite=True)
    q = json.loads((SRC / f'imaginary-{level}.quality.json').read_text())
    per = {}
    for e, k in zip(eps, ok):
        per.setdefault(e.task, [0, 0]); per[e.task][0] += k; per[e.task][1] += 1
    for t, v in q['per_task'].items():
        v['kept_before_refilter'] = v['kept']; v['kept'] = per.get(t, [0, 0])[0]
    q.update(episodes=len(kept), kept=len(kept), dropped=q['generated'] - len(kept),
             candidates_per_kept=q['generated'] / max(len(kept), 1), refiltered=md['refiltered'],
             dataset=str(DST / f'imaginary-{level}.npz'))
    (DST / f'imaginary-{level}.quality.json').write_text(json.dumps(q, indent=1) + '\n')
    print(level, len(eps), '->', len(kept), {t: v['kept'] for t, v in q['per_task'].items()})
