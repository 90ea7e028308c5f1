"""Where things live on disk and how big every stage is (profiles), in one place.

The data home is ``$IMAGINEBENCH_HOME`` (default ``~/.imaginebench``); datasets, encoder
caches, language-model checkpoints and run records all live under it, never in git.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from imaginebench.domains.base import choice_error
from imaginebench.errors import UsageError

HOME_ENV_VAR = "IMAGINEBENCH_HOME"
PROFILE_ENV_VAR = "IMAGINEBENCH_PROFILE"
DEFAULT_PROFILE = "small"


def data_home() -> Path:
    """The root folder for datasets, caches and runs (``$IMAGINEBENCH_HOME``).

    Raises ``NotADirectoryError`` (with a message of its own) if a file stands there.
    """
    home = Path(os.environ.get(HOME_ENV_VAR, Path.home() / ".imaginebench")).expanduser()
    if home.exists() and not home.is_dir():
        raise NotADirectoryError(f"The data home {home} is a file, not a folder; point {HOME_ENV_VAR} at a folder "
                                 "(it is created if missing).")
    return home


# Reference sizes of SPEC §3.6 (rollouts): real, then imaginary per level.
_PAPER_REAL = {"MetaWorld-v0": 20_000, "CLEVR-v0": 100_000, "BabyAI-v0": 19_200,
               "LIBERO-v0": 29_780, "HalfCheetah-v0": 16_000}
_PAPER_IMAGINARY = {
    "MetaWorld-v0": {"rephrase": 72_400, "easy": 8_000, "hard": 4_000},
    "CLEVR-v0": {"rephrase": 72_400, "easy": 5_600, "hard": 1_680},
    "BabyAI-v0": {"rephrase": 19_200, "easy": 18_000, "hard": 18_000},
    "LIBERO-v0": {"rephrase": 12_000, "easy": 24_000, "hard": 13_000},
    "HalfCheetah-v0": {"rephrase": 10_000, "easy": 6_000, "hard": 9_000},
}


def _scaled(table: Mapping[str, int], divisor: int, floor: int) -> dict[str, int]:
    return {k: max(floor, v // divisor) for k, v in table.items()}


LATE_ENTRY_LAYERS = 4
"""Top decoder layers that state/action positions run through by default (late entry); chosen by
measurement, see ``notes/imagination.md`` (session 15)."""


@dataclass(frozen=True)
class Profile:
    """Sizes of every stage.

    Attributes:
        name: ``tiny`` (tests/CI), ``small`` (one machine) or ``paper`` (Table 1 sizes).
        real_episodes: real (expert) rollouts per domain.
        imaginary_episodes: imaginary rollouts per domain and level.
        upper_bound_episodes: expert rollouts of a novel level's tasks (the "Real" upper bound).
        train_steps: gradient steps per offline RL run.
        checkpoint_every: steps between checkpoints (each checkpoint is evaluated).
        eval_episodes_per_task: evaluation episodes per task and checkpoint.
        batch_size: offline RL batch size.
        lm_steps: fine-tuning steps of the rollout language model.
        lm_backbone: default backbone of the rollout language model.
        lm_numeric_layers: late entry by default: state/action positions run through only the
            backbone's top N layers (``ModelConfig.numeric_layers``); ``None``: every layer.
        lm_batch_size: sequences per fine-tuning step.
        lm_eval_every: fine-tuning steps between validations (per-task validation loss).
        lm_checkpoint_every: fine-tuning steps between checkpoints.
        lm_val_episodes: real episodes held out for validation.
        lm_generate_batch: rollouts imagined together (one batch with a KV cache).
        finetune_budget: environment steps of an online fine-tune (``imaginebench finetune``).
        finetune_eval_every: environment steps between a fine-tune's evaluations.
    """

    name: str
    real_episodes: Mapping[str, int]
    imaginary_episodes: Mapping[str, Mapping[str, int]]
    upper_bound_episodes: Mapping[str, int]
    train_steps: int
    checkpoint_every: int
    eval_episodes_per_task: int
    batch_size: int = 256
    lm_steps: int = 1000
    lm_backbone: str = "smollm2-135m"
    lm_numeric_layers: int | None = LATE_ENTRY_LAYERS
    lm_batch_size: int = 8
    lm_eval_every: int = 100
    lm_checkpoint_every: int = 250
    lm_val_episodes: int = 64
    lm_generate_batch: int = 64
    finetune_budget: int = 10_000
    finetune_eval_every: int = 1_000
    seeds: tuple[int, ...] = field(default=(0, 1, 2))

    def episodes(self, env_id: str, source: str, level: str) -> int:
        """Number of episodes of ``source`` (real/imaginary) data for ``env_id`` at ``level``
        (an environment the profile has no size for, e.g. a plugin's, is a one-line error)."""
        table = (self.imaginary_episodes if source == "imaginary" else
                 self.real_episodes if level == "train" else self.upper_bound_episodes)
        if env_id not in table:
            raise UsageError(f"The {self.name} profile has no {source} {level} episode count for {env_id}; give "
                             f"--episodes N.")
        return int(table[env_id][level] if source == "imaginary" else table[env_id])


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            name="tiny",
            real_episodes={k: 200 for k in _PAPER_REAL},
            imaginary_episodes={k: {"rephrase": 40, "easy": 40, "hard": 40} for k in _PAPER_REAL},
            upper_bound_episodes={k: 100 for k in _PAPER_REAL},
            train_steps=300,
            checkpoint_every=100,
            eval_episodes_per_task=1,
            batch_size=64,
            lm_steps=5,
            lm_batch_size=4,
            lm_eval_every=5,
            lm_checkpoint_every=5,
            lm_val_episodes=8,
            lm_generate_batch=16,
            finetune_budget=256,
            finetune_eval_every=64,
            seeds=(0,),
        ),
        Profile(
            name="small",
            real_episodes=_scaled(_PAPER_REAL, 10, 1_000),
            imaginary_episodes={k: _scaled(v, 10, 200) for k, v in _PAPER_IMAGINARY.items()},
            upper_bound_episodes={k: 2_000 for k in _PAPER_REAL},
            train_steps=20_000,
            checkpoint_every=2_000,
            eval_episodes_per_task=2,
            # Imagination on the CPU (late entry, 4 numeric layers): 2,000 steps of 16 took 40 min
            # (CLEVR) / 48 min (BabyAI) with one thread each on the 2-core EPYC, two fine-tunes side
            # by side; CLEVR's three levels then generated in 35 min (notes/imagination_cpu.md).
            lm_steps=2_000,
            lm_batch_size=16,
        ),
        Profile(
            name="paper",
            real_episodes=dict(_PAPER_REAL),
            imaginary_episodes={k: dict(v) for k, v in _PAPER_IMAGINARY.items()},
            upper_bound_episodes=dict(_PAPER_REAL),
            train_steps=500_000,
            checkpoint_every=10_000,
            eval_episodes_per_task=5,
            lm_steps=50_000,
            lm_batch_size=16,
            lm_eval_every=1_000,
            lm_checkpoint_every=2_000,
            lm_val_episodes=256,
            lm_generate_batch=128,
            finetune_budget=200_000,
            finetune_eval_every=10_000,
        ),
    )
}


def get_profile(name: str | None = None) -> Profile:
    """The named profile (default ``$IMAGINEBENCH_PROFILE`` or ``small``)."""
    name = name or os.environ.get(PROFILE_ENV_VAR, DEFAULT_PROFILE)
    if name not in PROFILES:
        raise choice_error("profile", name, tuple(PROFILES))
    return PROFILES[name]
