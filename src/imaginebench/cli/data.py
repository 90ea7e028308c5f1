"""``imaginebench data collect|info|export-minari``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import typer

from imaginebench.cli.common import PROFILE_HELP, app, friendly
from imaginebench.config import data_home
from imaginebench.data.hub import REFERENCE_ROOT, build_real, dataset_path, imaginary_levels
from imaginebench.data.minari_export import export_minari
from imaginebench.data.storage import load_dataset, read_manifest

data_app = typer.Typer(help="Build, inspect and export datasets.", no_args_is_help=True)
app.add_typer(data_app, name="data")
ProfileOpt = typer.Option(None, "--profile", help=PROFILE_HELP)


@data_app.command("collect")
@friendly
def data_collect(
    env: str = typer.Option("CLEVR-v0", "--env", help="Environment id."),
    level: str = typer.Option("train", "--level", help="train = the real dataset; rephrase/easy/hard = expert data of that level (the Real upper bound)."),
    profile: Optional[str] = ProfileOpt,
    episodes: Optional[int] = typer.Option(None, "--episodes", help="Override the profile's episode count."),
    seed: int = typer.Option(0, "--seed"),
    workers: int = typer.Option(1, "--workers", help="Worker processes (with --ray local: CPUs of the local Ray "
                                "instance)."),
    ray: Optional[str] = typer.Option(None, "--ray", help="Run the collection as Ray tasks: 'local' (a local "
                                      "instance) or a cluster address such as 'auto' (workers need this package)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing dataset."),
    skip_existing: bool = typer.Option(False, "--skip-existing", help="Do nothing if the dataset exists."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
) -> None:
    """Collect expert rollouts and save them under the data home."""
    existing = dataset_path(env, "real", level, profile)
    if skip_existing and existing.exists():
        typer.echo(f"{existing} exists; skipped")
        return
    start = time.perf_counter()
    path = build_real(env, level, profile, episodes=episodes, seed=seed, workers=workers, overwrite=overwrite,
                      ray_address=ray, progress=progress)
    n = read_manifest(path)["metadata"]["episodes"]
    typer.echo(f"wrote {n} episodes to {path} in {time.perf_counter() - start:.1f} s")


@data_app.command("info")
@friendly
def data_info(
    path: Optional[Path] = typer.Argument(None, help="A dataset file; default: every dataset under the data home."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Summarise datasets (episodes, transitions, success rate, metadata): every dataset under the
    data home, then the reference imaginary datasets shipped in the package that get_dataset and
    train fall back on (those the data home does not shadow)."""
    root = data_home() / "datasets"
    if path:
        paths, shipped = [path], []
    else:
        paths = sorted(root.glob("*/*/*.npz"))
        shipped = [p for p in sorted(Path(REFERENCE_ROOT).glob("*/*/*.npz"))
                   if not (root / p.relative_to(REFERENCE_ROOT)).exists()]
    if not paths and not as_json:
        typer.echo(f"No datasets under {root}. Build one with: imaginebench data collect"
                   + ("\nShipped with the package:" if shipped else ""))
    if not paths and not shipped:
        return
    rows = []
    for p, is_shipped in [*((p, False) for p in paths), *((p, True) for p in shipped)]:
        summary = load_dataset(p).summary()
        summary["path"] = str(p)
        summary["shipped"] = is_shipped
        rows.append(summary)
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
        return
    for r in rows:
        typer.echo(f"{r['path']}{' (shipped reference data)' if r['shipped'] else ''}\n  {r.get('domain')} level={r.get('level')} source={r.get('source')} "
                   f"generator={r.get('generator')} profile={r.get('profile')} seed={r.get('seed')}\n"
                   f"  {r['episodes']} episodes, {r['transitions']} transitions, {r['tasks']} tasks, "
                   f"{r['instructions']} instructions, success {r['success_rate']:.1%}, mean length {r['mean_length']:.1f}")


@data_app.command("levels")
@friendly
def data_levels(
    env: str = typer.Option("CLEVR-v0", "--env", help="Environment id."),
    profile: Optional[str] = ProfileOpt,
) -> None:
    """The novel levels that have imaginary data (built here or shipped), comma-separated: what
    `make run` compares real and real + imaginary on."""
    levels = imaginary_levels(env, profile)
    if not levels:
        raise FileNotFoundError(f"No imaginary data for {env} at any novel level; build some with: imaginebench "
                                f"imagine train --env {env} && imaginebench imagine generate --env {env}")
    typer.echo(",".join(levels))


@data_app.command("export-minari")
@friendly
def data_export_minari(
    env: str = typer.Option("CLEVR-v0", "--env"),
    level: str = typer.Option("train", "--level"),
    source: str = typer.Option("real", "--source", help="real or imaginary"),
    profile: Optional[str] = ProfileOpt,
    root: Optional[Path] = typer.Option(None, "--root", help="Minari datasets folder (default $MINARI_DATASETS_PATH)."),
) -> None:
    """Export a dataset to the Minari format."""
    path = dataset_path(env, source, level, profile)
    if not path.exists():
        from imaginebench.data.hub import collect_command, imagine_command

        build = (imagine_command if source == "imaginary" else collect_command)(env, level, profile)
        raise FileNotFoundError(f"No dataset at {path}; build it first: {build}")
    out = export_minari(load_dataset(path), root=root)
    typer.echo(f"exported {out.total_episodes} episodes as Minari dataset {out.spec.dataset_id}")
