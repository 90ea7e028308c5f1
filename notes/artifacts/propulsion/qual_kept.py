"""Quality (imagine quality's checks, re-simulated) of the re-filtered kept rollouts, merged into their quality file;
'all' stays the unfiltered file's report (the unfiltered files are unchanged).

    python qual_kept.py ENV_ID DIR LEVEL...
"""
import json, sys, time
from pathlib import Path
from imaginebench.data.storage import load_dataset
from imaginebench.imagination.quality import check_rollouts
ENV, D = sys.argv[1], Path(sys.argv[2])
for level in sys.argv[3:]:
    t0 = time.time()
    eps = list(load_dataset(D / f'imaginary-{level}.npz'))
    rep = check_rollouts(ENV, level, eps).report.to_dict()
    q = json.loads((D / f'imaginary-{level}.quality.json').read_text())
    all_ = q.get('all')
    q.update(rep); q['scored'] = True; q['all'] = all_
    (D / f'imaginary-{level}.quality.json').write_text(json.dumps(q, indent=1) + '\n')
    print(level, round(time.time() - t0), 's', {k: rep.get(k) for k in ('episodes', 'consistency', 'transition_correctness', 'legality', 'replay_success', 'mean_transition_error')})
