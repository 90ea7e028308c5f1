"""The CLI restates no default: an option named after a field of the spec it fills takes the
spec's default (one source of defaults, as d3rlpy's configs are); a required option is the one
exception."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from imaginebench.cli.finetune import finetune
from imaginebench.cli.train import train
from imaginebench.finetune import FinetuneSpec
from imaginebench.training.spec import RunSpec


@pytest.mark.parametrize("command, spec", [(train, RunSpec), (finetune, FinetuneSpec)])
def test_options_named_after_spec_fields_take_the_spec_defaults(command, spec):
    fields = {f.name: f.default for f in dataclasses.fields(spec) if f.default is not dataclasses.MISSING}
    shared = [name for name in inspect.signature(command).parameters if name in fields]
    assert len(shared) >= 3, shared  # the comparison covers real options
    for name in shared:
        option = inspect.signature(command).parameters[name].default
        default = getattr(option, "default", option)
        if default is ...:  # required on the command line (finetune's --from), deliberately
            continue
        assert default == fields[name], (command.__name__, name)
