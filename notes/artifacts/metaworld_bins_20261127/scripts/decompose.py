"""Per task of an unfiltered file: share of candidates passing each honest-filter stage.

    python decompose.py ENV FILE.unfiltered.npz
"""
import sys, json
import numpy as np

KEYS = ["goal", "legal", "contact", "propulsion", "goal_legal_contact", "all"]


def stages(domain, ep):
    """(goal, legal, contact, propulsion, goal∧legal∧contact, all) of one rollout: the honest filter's checks."""
    s = np.asarray(ep.states, np.float64)
    legal = bool(np.all(domain.is_legal_batch(s[1:])))
    contact = not bool(np.any(domain.untouched_steps(s)))
    try:
        prop = not domain.unpowered(s, np.asarray(ep.actions))
    except ValueError:
        prop = False
    _, succ = domain.score_rollout(domain.task(ep.task), s, ep.actions)
    goal = bool(succ[-1])
    return goal, legal, contact, prop, goal and legal and contact, goal and legal and contact and prop


def table(rows, keys):
    out = {t: dict(zip(keys, np.mean(v, axis=0).round(3).tolist()), n=len(v)) for t, v in rows.items()}
    out["ALL"] = dict(zip(keys, np.mean([x for v in rows.values() for x in v], axis=0).round(3).tolist()))
    return out


if __name__ == "__main__":
    from imaginebench.data.storage import load_dataset
    from imaginebench.envs.registry import load_domain

    domain = load_domain(sys.argv[1])
    rows = {}
    for ep in load_dataset(sys.argv[2]):
        rows.setdefault(ep.task, []).append(stages(domain, ep))
    print(json.dumps(table(rows, KEYS), indent=1))
