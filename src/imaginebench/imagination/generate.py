"""Imagining rollouts with the fine-tuned rollout model (SPEC §6).

For each rollout: a real initial state (an env reset of one of the level's tasks, tasks
balanced round-robin) and an instruction from that level's bank go into the prompt
"Generate a rollout for the following goal: [GOAL]. Rollout:" followed by the state.  The
model then alternates: action head -> action (argmax, or sampled at ``temperature``) ->
action embedding -> state head -> next state -> state embedding -> ...  Every state and
action comes from the language model; the simulator is only used for the initial state.
A rollout stops when the domain's pure success test holds on the generated state or at the
task's horizon; rewards, terminals and successes come from ``domain.outcome``.

Rollouts are generated in batches with a KV cache (left-padded prompts, explicit position
ids); finished rollouts are dropped from the batch and from the cache.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from imaginebench.data.dataset import Episode, EpisodeDataset
from imaginebench.domains.base import Domain, Task
from imaginebench.imagination.formats import ROLLOUT_PROMPT, SequenceBuilder, collate

logger = logging.getLogger("imaginebench.imagination")

IMAGINARY_LEVELS: tuple[str, ...] = ("rephrase", "easy", "hard")


@dataclass(frozen=True)
class GenerateConfig:
    """Sampling settings of imagination.

    Attributes:
        temperature: discrete actions are sampled from softmax(logits / temperature);
            0 means argmax.  (Continuous actions are the head's output, clipped to [-1, 1].)
        batch_size: rollouts generated together.
        seed: seed of the initial states (env resets) and of action sampling.
        use_cache: reuse keys/values between steps (``False`` recomputes the whole sequence;
            only for checking).
        max_steps: optional cap below the task horizon.
        bf16: bfloat16 autocast.
    """

    temperature: float = 1.0
    batch_size: int = 64
    seed: int = 1
    use_cache: bool = True
    max_steps: int | None = None
    bf16: bool = False

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0 (0 = argmax), got {self.temperature}.")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}.")


@dataclass(frozen=True)
class Start:
    """Where an imagined rollout begins: a task, an instruction and a real initial state."""

    task: Task
    instruction: str
    state: np.ndarray


def initial_starts(env_id: str, level: str, n: int, seed: int = 1) -> list[Start]:
    """``n`` real initial states of ``level``: env resets, task ``i % n_tasks`` for rollout ``i``."""
    from imaginebench.data.collect import episode_seed
    from imaginebench.envs.registry import make

    env = make(env_id, level=level, encode_instruction=False)
    try:
        base = env.unwrapped
        names = base.tasks
        starts = []
        for i in range(n):
            _, info = env.reset(seed=episode_seed(seed, i), options={"task": names[i % len(names)]})
            starts.append(Start(base.domain.task(info["task"], level=level), info["instruction"],
                                np.asarray(info["state"], np.float32)))
        return starts
    finally:
        env.close()


class _Rows:
    """Per-rollout bookkeeping while a batch is generated."""

    def __init__(self, domain: Domain, start: Start, horizon: int) -> None:
        self.domain, self.start, self.horizon = domain, start, horizon
        self.states = [np.asarray(start.state, np.float32)]
        self.actions: list[Any] = []
        self.rewards: list[float] = []
        self.successes: list[bool] = []
        self.progress = domain.initial_progress(start.task, start.state)

    def add(self, action: Any, state: np.ndarray) -> bool:
        """Record one imagined step; return whether the rollout is finished."""
        out = self.domain.outcome(self.start.task, self.states[-1], action, state, self.progress)
        self.progress = out.progress
        self.actions.append(action)
        self.states.append(np.asarray(state, np.float32))
        self.rewards.append(float(out.reward))
        self.successes.append(bool(out.success))
        return bool(out.success) or len(self.actions) >= self.horizon

    def episode(self) -> Episode:
        t = len(self.actions)
        succ = np.asarray(self.successes, bool)
        terminals = succ.copy()
        truncations = np.zeros(t, bool)
        if t and not succ[-1]:
            truncations[-1] = True
        return Episode(task=self.start.task.name, instruction=self.start.instruction,
                       states=np.stack(self.states), actions=np.asarray(self.actions),
                       rewards=np.asarray(self.rewards, np.float32), terminals=terminals,
                       truncations=truncations, successes=succ)


def _choose_actions(model: Any, hidden: torch.Tensor, temperature: float, gen: torch.Generator) -> torch.Tensor:
    out = model.predict_actions(hidden)
    if not model.discrete:
        return out.clamp(-1.0, 1.0)
    if temperature == 0:
        return out.argmax(-1)
    probs = torch.softmax(out / temperature, dim=-1)
    return torch.multinomial(probs.cpu(), 1, generator=gen).squeeze(-1).to(out.device)


def _round_states(model: Any, states: torch.Tensor) -> torch.Tensor:
    integer = torch.as_tensor(model.normaliser.integer, device=states.device)
    if integer.numel() and bool(integer.any()):
        states = torch.where(integer, states.round(), states)
    return states


@torch.no_grad()
def imagine_batch(model: Any, domain: Domain, starts: Sequence[Start], cfg: GenerateConfig,
                  gen: torch.Generator, builder: SequenceBuilder | None = None) -> list[Episode]:
    """Imagine one rollout per start, all in one batch."""
    from transformers import DynamicCache

    builder = builder or SequenceBuilder(model.tokenizer, model.state_dim, model.discrete, model.action_dim)
    rows = []
    for s in starts:
        horizon = domain.task_horizon(s.task)
        if cfg.max_steps is not None:
            horizon = min(horizon, cfg.max_steps)
        rows.append(_Rows(domain, s, horizon))
    batch = collate([builder.rollout_prompt(s.instruction, s.state) for s in starts], left_pad=True)
    t = model.tensors(batch)
    autocast = torch.autocast(device_type=model.device.type, dtype=torch.bfloat16, enabled=cfg.bf16)
    with autocast:
        emb = model.embed(t["kinds"], t["tokens"], t["states"], t["actions"])
    mask = t["mask"].long()
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    last_pos = positions[:, -1]
    active = list(range(len(rows)))
    current = torch.as_tensor(np.stack([s.state for s in starts]), device=model.device, dtype=torch.float32)

    if cfg.use_cache:
        cache = DynamicCache(config=model.decoder.config)
        with autocast:
            hidden = model.decode(emb, mask, positions, cache, use_cache=True).last_hidden_state[:, -1]
    else:
        seq = emb
        with autocast:
            hidden = model.decode(seq, mask, positions).last_hidden_state[:, -1]

    def feed(new: torch.Tensor) -> torch.Tensor:
        """Append one position per active row and return the new last hidden states."""
        nonlocal mask, last_pos, positions, seq
        mask = torch.cat([mask, mask.new_ones(len(mask), 1)], dim=1)
        last_pos = last_pos + 1
        with autocast:
            if cfg.use_cache:
                out = model.decode(new.unsqueeze(1), mask, last_pos.unsqueeze(1), cache, use_cache=True)
            else:
                seq = torch.cat([seq, new.unsqueeze(1).to(seq.dtype)], dim=1)
                positions = torch.cat([positions, last_pos.unsqueeze(1)], dim=1)
                out = model.decode(seq, mask, positions)
        return out.last_hidden_state[:, -1]

    while active:
        actions = _choose_actions(model, hidden, cfg.temperature, gen)
        with autocast:
            hidden = feed(model.embed_actions(actions))
        nxt = _round_states(model, model.denormalise(model.predict_states(hidden, current)))
        a_np, s_np = actions.cpu().numpy(), nxt.float().cpu().numpy()
        keep = []
        for j, r in enumerate(active):
            action = int(a_np[j]) if model.discrete else a_np[j].astype(np.float32)
            if not rows[r].add(action, s_np[j]):
                keep.append(j)
        if not keep:
            break
        if len(keep) < len(active):
            idx = torch.as_tensor(keep, device=model.device)
            if cfg.use_cache:
                cache.batch_select_indices(idx)
            else:
                seq, positions = seq[idx], positions[idx]
            mask, last_pos, nxt = mask[idx], last_pos[idx], nxt[idx]
            active = [active[j] for j in keep]
        current = nxt
        with autocast:
            hidden = feed(model.embed_states(nxt))
    return [r.episode() for r in rows]


def imagine(model: Any, domain: Domain, starts: Sequence[Start], cfg: GenerateConfig | None = None,
            progress: bool = True, desc: str = "imagine") -> tuple[list[Episode], dict[str, float]]:
    """Imagine one rollout per start (in batches); returns the episodes and throughput numbers."""
    cfg = cfg or GenerateConfig()
    gen = torch.Generator().manual_seed(cfg.seed)
    builder = SequenceBuilder(model.tokenizer, model.state_dim, model.discrete, model.action_dim)
    episodes: list[Episode] = []
    model.eval()
    t0 = time.perf_counter()
    bar = tqdm(total=len(starts), desc=desc, unit="rollout", disable=not progress)
    for i in range(0, len(starts), cfg.batch_size):
        chunk = starts[i:i + cfg.batch_size]
        episodes += imagine_batch(model, domain, chunk, cfg, gen, builder)
        bar.update(len(chunk))
    bar.close()
    seconds = time.perf_counter() - t0
    steps = sum(len(ep) for ep in episodes)
    return episodes, {"seconds": seconds, "imagined_steps": steps,
                      "steps_per_second": steps / seconds if seconds > 0 else math.inf,
                      "rollouts_per_second": len(episodes) / seconds if seconds > 0 else math.inf}


@dataclass
class GenerateResult:
    """One level's imagination run."""

    level: str
    path: Path
    episodes: int
    generated: int
    dropped: int
    throughput: dict[str, float]
    quality: dict[str, Any]


def generate_level(
    env_id: str,
    level: str,
    model: Any,
    checkpoint_meta: dict[str, Any],
    checkpoint_dir: Path | str,
    profile: str | None = None,
    episodes: int | None = None,
    cfg: GenerateConfig | None = None,
    filter_invalid: bool = False,
    overwrite: bool = False,
    progress: bool = True,
) -> GenerateResult:
    """Imagine ``level``'s rollouts, score them, optionally filter, and save the dataset.

    The dataset goes to ``dataset_path(env_id, "imaginary", level, profile)`` and its quality
    report (before filtering, plus what filtering dropped) beside it as ``.quality.json``.
    """
    from imaginebench import __version__
    from imaginebench.config import get_profile
    from imaginebench.data.hub import dataset_path
    from imaginebench.data.storage import save_dataset
    from imaginebench.domains.base import check_level, choice_error
    from imaginebench.envs.registry import load_domain
    from imaginebench.imagination.quality import check_rollouts, filter_episodes, quality_path, write_quality

    cfg = cfg or GenerateConfig()
    check_level(level)
    if level not in IMAGINARY_LEVELS:
        raise choice_error("imaginary level", level, IMAGINARY_LEVELS)
    prof = get_profile(profile)
    path = dataset_path(env_id, "imaginary", level, prof.name)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} already exists; pass --overwrite to replace it.")
    if checkpoint_meta.get("env_id") not in (None, env_id):
        raise ValueError(f"The checkpoint at {checkpoint_dir} was trained on {checkpoint_meta['env_id']}, "
                         f"not {env_id}.")
    domain = load_domain(env_id)
    if model.state_dim != domain.state_dim or model.action_dim != domain.action_dim:
        raise ValueError(f"The checkpoint's state/action sizes ({model.state_dim}, {model.action_dim}) do not "
                         f"match {env_id} ({domain.state_dim}, {domain.action_dim}).")
    n = episodes if episodes is not None else prof.episodes(env_id, "imaginary", level)
    if n <= 0:
        raise ValueError(f"episodes must be positive, got {n}.")
    starts = initial_starts(env_id, level, n, seed=cfg.seed)
    eps, throughput = imagine(model, domain, starts, cfg, progress=progress, desc=f"imagine {env_id}/{level}")
    checks = check_rollouts(env_id, level, eps, progress=progress)
    kept = filter_episodes(eps, checks) if filter_invalid else eps
    dropped = len(eps) - len(kept)
    if not kept:
        raise ValueError(f"Filtering dropped all {len(eps)} imagined {level} rollouts; nothing to save. "
                         "Train the rollout model longer or generate without --filter.")
    metadata = {
        "domain": env_id, "level": level, "source": "imaginary", "generator": "rollout-lm",
        "profile": prof.name, "seed": cfg.seed, "episodes": len(kept), "generated": len(eps),
        "state_dim": domain.state_dim, "discrete_actions": domain.discrete_actions, "action_dim": domain.action_dim,
        "backbone": model.backbone_name, "backbone_source": model.backbone_source,
        "model": model.config.to_dict(), "checkpoint": str(checkpoint_dir),
        "checkpoint_step": checkpoint_meta.get("step"), "prompt": ROLLOUT_PROMPT,
        "sampling": asdict(cfg), "filtered": bool(filter_invalid), "dropped": dropped,
        "package_version": __version__,
    }
    action_shape = () if domain.discrete_actions else (domain.action_dim,)
    dataset = EpisodeDataset.from_episodes(kept, metadata=metadata, state_dim=domain.state_dim,
                                           action_shape=action_shape)
    save_dataset(dataset, path, overwrite=overwrite)
    report = checks.report.to_dict()
    report.update({"filtered": bool(filter_invalid), "dropped": dropped, "kept": len(kept),
                   "throughput": throughput, "dataset": str(path), "checkpoint": str(checkpoint_dir),
                   "sampling": asdict(cfg), "backbone": model.backbone_name})
    write_quality(quality_path(path), report)
    return GenerateResult(level=level, path=path, episodes=len(kept), generated=len(eps), dropped=dropped,
                          throughput=throughput, quality=report)
