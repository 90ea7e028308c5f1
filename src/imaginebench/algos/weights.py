"""Saving and loading trained algorithms without unpickling anything.

d3rlpy's own formats run code on load: ``model.d3`` (``d3rlpy.load_learnable``) is a pickle, and
``impl.load_model`` calls ``torch.load`` without ``weights_only``, so a crafted file in a folder a
user points at (``imaginebench finetune --from FOLDER``) would run its payload.  Every path of this
package that reads a trained algorithm therefore reads ``model.pt`` through this module:

* ``model.pt`` holds the algorithm's config as d3rlpy's own JSON (``LearnableConfigWithShape``,
  the same text ``model.d3`` carries) and its networks' and optimisers' state dicts as plain
  tensors; it is read with ``torch.load(weights_only=True)``, which refuses any pickled object;
* the algorithm is rebuilt from the config (only classes registered with d3rlpy can appear in it)
  and the tensors are copied into it with ``load_state_dict``.

``model.d3`` is still written beside it, as an export for d3rlpy users; the package never reads it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from pathlib import Path
from typing import Any

from imaginebench.algos._d3rlpy import load as load_d3rlpy
from imaginebench.fileio import atomic_path, first_line, torch_load_plain

FORMAT = "imaginebench-model/1"
MODEL_FILE = "model.pt"


def impl_state_bytes(impl: Any) -> bytes:
    """The impl's networks and optimisers as the bytes d3rlpy's ``save_model`` writes (a
    ``torch.save`` of state dicts: tensors and numbers only)."""
    buf = io.BytesIO()
    impl.save_model(buf)
    return buf.getvalue()


def load_impl_state(impl: Any, data: bytes) -> None:
    """Load ``data`` (from :func:`impl_state_bytes`) into ``impl`` without unpickling objects:
    the replacement for d3rlpy's ``impl.load_model``, whose ``torch.load`` leaves
    ``weights_only`` to torch's default."""
    where = load_d3rlpy().torch_utility.map_location(impl.device)  # d3rlpy's "cpu:0" -> "cpu"
    states = torch_load_plain(io.BytesIO(data), map_location=where)
    modules = impl._checkpointer.modules  # d3rlpy keeps the name -> module/optimiser map here
    missing = sorted(set(modules) - set(states))
    if missing:
        raise ValueError(f"the saved state has no {', '.join(missing)}")
    for name, module in modules.items():
        module.load_state_dict(states[name])


def save_model(algo: Any, path: Path) -> str:
    """Write ``algo`` (config + weights) to ``path`` atomically; returns the file's SHA-256."""
    import torch


    d3rlpy = load_d3rlpy()
    config = d3rlpy.base.LearnableConfigWithShape(observation_shape=algo.impl.observation_shape,
                                                  action_size=algo.impl.action_size, config=algo.config)
    buffer = getattr(algo.impl, "model_buffer", None)  # COMBO's model rollouts: training state, not the model
    with buffer.emptied() if buffer is not None else contextlib.nullcontext():
        state = {"format": FORMAT, "d3rlpy": d3rlpy.__version__, "config": config.serialize(),
                 "model": impl_state_bytes(algo.impl)}
    buf = io.BytesIO()  # not torch.save(state, tmp): the archive would be named after the temporary file,
    torch.save(state, buf)  # so two identical models would get different bytes (and checksums)
    with atomic_path(path) as tmp:
        tmp.write_bytes(buf.getvalue())
    return file_sha256(path)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_model(path: Path, device: str = "cpu:0", sha256: str | None = None) -> Any:
    """The algorithm saved at ``path`` by :func:`save_model`, on ``device``.

    Raises ``ValueError`` (one line, naming the file) for anything but such a file: a pickle with
    objects in it, a truncated or foreign file, a checksum that differs from ``sha256``."""
    import imaginebench.algos.encoders  # noqa: F401  (register our encoder and optimiser factories
    import imaginebench.algos.optimizers  # noqa: F401  with d3rlpy before it reads a saved config)

    path = Path(path)
    if sha256 is not None and file_sha256(path) != sha256:
        raise ValueError(f"{path} does not match the SHA-256 its run record holds (changed or damaged); "
                         "train the run again.")
    try:
        state = torch_load_plain(path)
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            raise ValueError(f"not an {FORMAT} file")
        d3rlpy = load_d3rlpy()
        config = d3rlpy.base.LearnableConfigWithShape.deserialize(state["config"])
        algo = config.create(device)
        load_impl_state(algo.impl, state["model"])
    except Exception as exc:  # noqa: BLE001  (whatever the file holds, the answer is one line)
        raise ValueError(f"Cannot load the trained model {path} ({first_line(exc)}); it must be a model.pt written "
                         "by imaginebench train.") from None
    return algo
