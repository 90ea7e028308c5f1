"""Quality (imagine quality's checks) of the kept rollouts only, merged into the quality file; 'all' = the unfiltered file's
report from session 21 (the unfiltered file is byte-identical)."""
import json, sys, time
sys.path.insert(0, '/work/main/src')
from pathlib import Path
from imaginebench.data.storage import load_dataset
from imaginebench.imagination.quality import check_rollouts
D = Path('/work/home_mw22b/datasets/MetaWorld-v0/small')
for level in sys.argv[1:]:
    t0 = time.time()
    eps = list(load_dataset(D / f'imaginary-{level}.npz'))
    rep = check_rollouts('MetaWorld-v0', level, eps).report.to_dict()
    q = json.loads((D / f'imaginary-{level}.quality.json').read_text())
    q.update(rep); q['scored'] = True
    u = json.loads(Path(f'/work/main/src/imaginebench/reference_data/MetaWorld-v0/small/imaginary-{level}.quality.json').read_text())['all']
    q['all'] = u
    (D / f'imaginary-{level}.quality.json').write_text(json.dumps(q, indent=1) + '\n')
    print(level, round(time.time() - t0), 's', {k: rep.get(k) for k in ('episodes', 'consistency', 'transition_correctness', 'legality', 'replay_success')})
