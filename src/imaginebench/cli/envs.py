"""``imaginebench envs``."""

from __future__ import annotations

import typer

from imaginebench.cli.common import app, friendly
from imaginebench.domains.base import LEVELS
from imaginebench.envs.registry import ENV_SPECS, load_domain


@app.command()
@friendly
def envs() -> None:
    """List domains, whether they are installed, their levels, task and instruction counts."""
    import importlib.util


    typer.echo(f"{'env id':<16} {'installed':<20} {'spaces':<20} " + " ".join(f"{lv:>16}" for lv in LEVELS))
    for env_id, spec in ENV_SPECS.items():
        missing = [m for m in spec.requires if importlib.util.find_spec(m) is None]
        installed = f"no: pip install 'imaginebench[{spec.extra}]'" if missing else f"yes [{spec.extra}]"
        try:
            domain = load_domain(env_id)
        except ImportError:
            typer.echo(f"{env_id:<16} {installed:<20}")
            continue
        except NotImplementedError:
            typer.echo(f"{env_id:<16} {'not implemented yet':<20}")
            continue
        cells = []
        for lv in LEVELS:
            tasks = domain.tasks(lv)
            n_instr = sum(len(t.bank(lv)) for t in tasks)
            cells.append(f"{len(tasks):>4} tasks/{n_instr:<5}")
        kind = f"Discrete({domain.action_dim})" if domain.discrete_actions else f"Box({domain.action_dim})"
        typer.echo(f"{env_id:<16} {installed:<20} {f'state {domain.state_dim}, {kind}':<20} "
                   + " ".join(f"{c:>16}" for c in cells))
    typer.echo("\ncells: tasks / instruction phrasings at that level (rephrase: held-out phrasings).")
