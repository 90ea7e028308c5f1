"""``imaginebench embed``."""

from __future__ import annotations

from typing import List, Optional

import typer

from imaginebench.cli.common import app, friendly
from imaginebench.domains.base import LEVELS, check_level
from imaginebench.envs.registry import ENV_SPECS, env_spec, load_domain
from imaginebench.errors import UsageError
from imaginebench.language import get_encoder


@app.command()
@friendly
def embed(
    envs: Optional[List[str]] = typer.Option(None, "--env", help="Environment id (repeatable; default: every "
                                             "installed domain)."),
    levels: str = typer.Option("all", "--levels", help="Comma-separated levels, or all."),
    encoder: Optional[str] = typer.Option(None, "--encoder", help="Instruction encoder name (default: the "
                                          "package's MiniLM)."),
    compact: bool = typer.Option(True, "--compact/--no-compact", help="Merge the store's shards into one "
                                 "afterwards."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
) -> None:
    """Embed every instruction phrasing of the given domains and levels into the encoder's store
    ahead of time (e.g. before a grid), so no run or worker embeds them itself."""
    import time


    wanted = list(LEVELS) if levels == "all" else [check_level(lv.strip()) for lv in levels.split(",") if lv.strip()]
    if not wanted:
        raise UsageError("--levels needs at least one level (or all).")
    ids = [env_spec(e).env_id for e in envs] if envs else list(ENV_SPECS)
    texts: dict[str, None] = {}
    for env_id in ids:
        try:
            domain = load_domain(env_id)
        except ImportError as exc:
            if envs:
                raise
            typer.echo(f"{env_id}: skipped ({exc})")
            continue
        for level in wanted:
            texts.update(dict.fromkeys(domain.instruction_bank(level)))
    enc = get_encoder(encoder)
    if not hasattr(enc, "prepare"):
        raise UsageError(f"Encoder {getattr(enc, 'name', encoder)!r} keeps no embedding store; nothing to build.")
    start = time.perf_counter()
    new = enc.prepare(list(texts), what=", ".join(ids), progress=progress)
    took = time.perf_counter() - start
    merged = enc.store.compact() if compact else None
    typer.echo(f"{len(texts)} instructions ({new} new, embedded in {took:.1f} s) in {enc.store.root}"
               + (f"; {len(enc.store)} vectors in {merged.name}" if merged is not None else ""))
