"""``imaginebench results``: the published rows, without running anything."""

from __future__ import annotations

import json
from typing import Optional

import typer

from imaginebench.cli.common import PROFILE_HELP, app, friendly
from imaginebench.errors import UsageError
from imaginebench.evaluation.published import baselines_table, format_rows, reference_results


@app.command()
@friendly
def results(
    env: Optional[str] = typer.Option(None, "--env", help="Only this environment, e.g. CLEVR-v0."),
    level: Optional[str] = typer.Option(None, "--level", help="Only this level: train, rephrase, easy or hard."),
    algo: Optional[str] = typer.Option(None, "--algo", help="Only this algorithm (bc means discrete_bc on a "
                                       "discrete domain, as in train)."),
    data: Optional[str] = typer.Option(None, "--data", help="Only this training data: real, real-retrieval, "
                                       "imaginary, imaginary-unfiltered, imaginary-oracle, imaginary-grounded, "
                                       "real-upper-bound."),
    profile: Optional[str] = typer.Option("small", "--profile", help=PROFILE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the rows as JSON (every field, command included)."),
    baselines: bool = typer.Option(False, "--baselines", help="The side-by-side table instead: per domain, "
                                   "reference algorithm and level, real only / retrieval / real + imaginary / Real "
                                   "upper bound (the README's table)."),
) -> None:
    """The published rows shipped with the package (imaginebench.reference_results) as a table:
    success over seeds (mean ± std), normalised score (0 chance, 100 expert), and the version and
    commit that measured them; rows measured at a domain's older sizes, or before its card changed
    the algorithm's settings, say so."""
    if baselines:
        if env or level or algo or data or as_json:
            raise UsageError("--baselines shows the whole side-by-side table; drop --env, --level, --algo, --data "
                             "and --json, or drop --baselines.")
        typer.echo(baselines_table(profile or "small"))
        return
    rows = reference_results(env, profile or "small", level=level, algorithm=algo, data=data)
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
        return
    if not rows:
        typer.echo("No published rows match; `imaginebench results` without filters lists them all.")
        return
    typer.echo(format_rows(rows))
    typer.echo(f"\n{len(rows)} rows. Each row's command reproduces it: imaginebench results --json.")
