"""Where things live on disk and how big every stage is (profiles), in one place.

The data home is ``$IMAGINEBENCH_HOME`` (default ``~/.imaginebench``); datasets, encoder
caches, language-model checkpoints and run records all live under it, never in git.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Protocol

from imaginebench.errors import UsageError, choice_error

class SizedCard(Protocol):
    """What a profile reads from a domain's card (:class:`~imaginebench.domains.base.Domain`, the
    class or an instance) to size its stages: the card is passed in, never looked up here."""

    env_id: str
    paper_episodes: Mapping[str, int]
    profile_sizes: Mapping[str, Mapping[str, int]]


HOME_ENV_VAR = "IMAGINEBENCH_HOME"
PROFILE_ENV_VAR = "IMAGINEBENCH_PROFILE"
DEFAULT_PROFILE = "small"


def data_home() -> Path:
    """The root folder for datasets, caches and runs (``$IMAGINEBENCH_HOME``).

    Raises ``NotADirectoryError`` (with a message of its own) if a file or a dangling link stands
    there, and :class:`~imaginebench.errors.UsageError` if the variable is set but empty (which would
    otherwise mean the current folder).
    """
    raw = os.environ.get(HOME_ENV_VAR)
    if raw is not None and not raw.strip():
        raise UsageError(f"{HOME_ENV_VAR} is set but empty; unset it (the default is ~/.imaginebench) or point it at "
                         "a folder.")
    home = Path(raw if raw is not None else Path.home() / ".imaginebench").expanduser()
    if home.is_symlink() and not home.exists():
        raise NotADirectoryError(f"The data home {home} is a link to {os.readlink(home)}, which does not exist; "
                                 f"create that folder or point {HOME_ENV_VAR} elsewhere.")
    if home.exists() and not home.is_dir():
        raise NotADirectoryError(f"The data home {home} is a file, not a folder; point {HOME_ENV_VAR} at a folder "
                                 "(it is created if missing).")
    return home


@dataclass(frozen=True)
class Scale:
    """A profile's size of one kind of dataset, from the paper's size in the domain's card
    (``Domain.paper_episodes``): ``paper // divisor`` but at least ``floor``; ``divisor=None``:
    ``floor`` whatever the paper's size."""

    divisor: int | None
    floor: int

    def of(self, paper: int) -> int:
        return self.floor if self.divisor is None else max(self.floor, int(paper) // self.divisor)


LATE_ENTRY_LAYERS = 4
"""Top decoder layers that state/action positions run through by default (late entry); chosen by
measurement, see ``notes/imagination.md`` (session 15)."""


@dataclass(frozen=True)
class Profile:
    """Sizes of every stage.

    Attributes:
        name: ``tiny`` (tests/CI), ``small`` (one machine) or ``paper`` (Table 1 sizes).
        real: real (expert) rollouts, scaled from the domain card's paper size.
        imaginary: imaginary rollouts per level, scaled from the card's paper size of that level.
        upper_bound: expert rollouts of a novel level's tasks (the "Real" upper bound), scaled
            from the card's real size.
        real_episodes / imaginary_episodes / upper_bound_episodes: explicit sizes per env id
            that take the place of the scaled ones (e.g. a plugin domain without a paper size).
        train_steps: gradient steps per offline RL run (a domain card may choose its own:
            :meth:`steps_for`).
        checkpoint_every: steps between checkpoints (each checkpoint is evaluated; stretched with a
            card's step count: :meth:`checkpoint_every_for`).
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
    real: Scale
    imaginary: Scale
    upper_bound: Scale
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
    real_episodes: dict[str, int] = field(default_factory=dict)
    imaginary_episodes: dict[str, dict[str, int]] = field(default_factory=dict)
    upper_bound_episodes: dict[str, int] = field(default_factory=dict)

    def episodes(self, card: SizedCard, source: str, level: str) -> int:
        """Number of episodes of ``source`` (real/imaginary) data at ``level`` for the domain whose
        card is ``card`` (``imaginebench.envs.registry.domain_class(env_id)``): the explicit size if
        the profile has one, else the size the card chose for this profile
        (``Domain.profile_sizes``), else the card's paper size scaled (a card with neither is a
        one-line error)."""
        env_id = card.env_id
        if source == "imaginary":
            explicit, scale, key, card_key = (self.imaginary_episodes.get(env_id, {}).get(level), self.imaginary,
                                              level, level)
        elif level == "train":
            explicit, scale, key, card_key = self.real_episodes.get(env_id), self.real, "real", "real"
        else:
            explicit, scale, key, card_key = (self.upper_bound_episodes.get(env_id), self.upper_bound, "real",
                                              "upper_bound")
        if explicit is not None:
            return int(explicit)
        chosen = card.profile_sizes.get(self.name, {}).get(card_key)
        if chosen is not None:
            return int(chosen)
        paper = card.paper_episodes.get(key)
        if paper is None:
            raise UsageError(f"The {self.name} profile has no {source} {level} episode count for {env_id}; give "
                             f"--episodes N.")
        return scale.of(paper)

    def steps_for(self, card: SizedCard) -> int:
        """Offline RL gradient steps of a run on ``card``'s domain: the card's choice for this
        profile (``Domain.profile_sizes[...]["train_steps"]``), else the profile's ``train_steps``."""
        chosen = card.profile_sizes.get(self.name, {}).get("train_steps")
        return self.train_steps if chosen is None else int(chosen)

    def checkpoint_every_for(self, card: SizedCard) -> int:
        """Steps between checkpoints of a run on ``card``'s domain: the profile's interval, stretched
        with the card's step count so a run has the profile's number of checkpoints (the score is the
        mean of the last five of them, wherever the steps come from)."""
        steps = self.steps_for(card)
        if steps == self.train_steps:
            return self.checkpoint_every
        return max(1, steps * self.checkpoint_every // self.train_steps)


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            name="tiny",
            real=Scale(None, 200),
            imaginary=Scale(None, 40),
            upper_bound=Scale(None, 100),
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
            real=Scale(10, 1_000),
            imaginary=Scale(10, 200),
            upper_bound=Scale(None, 2_000),
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
            real=Scale(1, 0),
            imaginary=Scale(1, 0),
            upper_bound=Scale(1, 0),
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
