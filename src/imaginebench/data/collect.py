"""Collecting rollouts from an environment with the expert (or a random policy)."""

from __future__ import annotations

import ast
import hashlib
import inspect
import shutil
from pathlib import Path
from typing import Any, Iterator

import numpy as np
from tqdm.auto import tqdm

from imaginebench import limits
from imaginebench.data.dataset import Episode, EpisodeDataset
from imaginebench.data.storage import DatasetError, load_dataset, save_dataset
from imaginebench.envs.registry import load_domain, make
from imaginebench.errors import UsageError, choice_error
from imaginebench.processes import worker_pool

POLICIES = ("expert", "random")
_CHUNK = 50


def episode_seed(seed: int, index: int) -> int:
    """The reset seed of episode ``index`` of a collection run with ``seed``."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


def rollout(env: Any, task: str, seed: int, policy: str = "expert", initial_state: Any = None,
            instruction: str | None = None) -> Episode:
    """Run one episode of ``task`` on a raw (un-embedded) env and record it.

    ``initial_state`` (a state vector) starts the episode there instead of at a sampled start;
    ``instruction`` fixes the instruction string instead of drawing one from the level's bank.
    """
    options: dict[str, Any] = {"task": task}
    if initial_state is not None:
        options["state"] = initial_state
    if instruction is not None:
        options["instruction"] = instruction
    _, info = env.reset(seed=seed, options=options)
    env.action_space.seed(seed)
    states = [info["state"]]
    actions, rewards, terms, truncs, succ = [], [], [], [], []
    done = False
    while not done:
        action = env.expert_action() if policy == "expert" else env.action_space.sample()
        _, reward, terminated, truncated, info = env.step(action)
        states.append(info["state"])
        actions.append(action)
        rewards.append(reward)
        terms.append(terminated)
        truncs.append(truncated)
        succ.append(info["is_success"])
        done = terminated or truncated
    return Episode(task=task, instruction=info["instruction"], states=np.asarray(states, dtype=np.float32),
                   actions=np.asarray(actions), rewards=np.asarray(rewards, dtype=np.float32),
                   terminals=np.asarray(terms, dtype=bool), truncations=np.asarray(truncs, dtype=bool),
                   successes=np.asarray(succ, dtype=bool))


def _collect_range(args: tuple[str, str, int, int, int, str]) -> list[Episode]:
    env_id, level, start, stop, seed, policy = args
    env = make(env_id, level=level, encode_instruction=False)
    tasks = env.unwrapped.tasks
    try:
        return [rollout(env, tasks[i % len(tasks)], episode_seed(seed, i), policy) for i in range(start, stop)]
    finally:
        env.close()


def _chunks(n: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, _CHUNK):
        yield start, min(n, start + _CHUNK)


def code_digest(domain: Any) -> str:
    """SHA-256 (16 hex digits) of the code an episode depends on: the domain's folder (tasks,
    success rules, expert, env) and this module, so chunks kept from older code are not reused.
    Read as code (:func:`_code_only`): an edited docstring, comment or layout keeps the chunks."""
    h = hashlib.sha256()
    folder = Path(inspect.getfile(type(domain))).parent
    for path in sorted(folder.glob("*.py")) + [Path(__file__)]:
        h.update(path.name.encode())
        h.update(_code_only(path))
    return h.hexdigest()[:16]


def _code_only(path: Path) -> bytes:
    """``path``'s syntax tree without docstrings and other bare strings (no-ops), comments or
    layout; the file's bytes where it does not parse."""
    source = path.read_bytes()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [n for n in body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
                                            and isinstance(n.value.value, str))]
            node.body = kept or [ast.Pass()]
    return ast.dump(tree).encode()


def chunk_folder(root: Path, domain: Any, level: str, seed: int, policy: str) -> Path:
    """Where a collection keeps its finished chunks until the dataset is written: one folder per
    (domain, level, policy, seed, code); a chunk covers the same episode indices whatever the total."""
    return Path(root) / domain.env_id / f"{level}-{policy}-seed{seed}-{code_digest(domain)}"


def _chunk_path(folder: Path, start: int, stop: int) -> Path:
    return folder / f"chunk-{start:07d}-{stop:07d}.npz"


def _kept_chunk(path: Path, identity: dict[str, Any]) -> list[Episode] | None:
    """The episodes of a kept chunk, or ``None`` where it is missing, damaged or from another
    collection (a cache is checked on read and recomputed, never trusted)."""
    if not path.exists():
        return None
    try:
        ds = load_dataset(path)
    except (DatasetError, OSError, ValueError, KeyError):
        return None
    meta = ds.metadata
    if any(meta.get(k) != v for k, v in identity.items()) or len(ds) != identity["stop"] - identity["start"]:
        return None
    return list(ds)


def collect(env_id: str, level: str, episodes: int, seed: int = 0, policy: str = "expert",
            workers: int = 1, progress: bool = True, metadata: dict[str, Any] | None = None,
            ray_address: str | None = None, keep_chunks: Path | None = None) -> EpisodeDataset:
    """Collect ``episodes`` rollouts at ``level``, tasks balanced round-robin.

    Episode ``i`` runs task ``tasks[i % n_tasks]`` from reset seed ``episode_seed(seed, i)``,
    so the result does not depend on ``workers`` or on where the chunks run.  With
    ``ray_address`` the chunks of 50 episodes run as Ray tasks (``"local"``: a local instance
    with ``workers`` CPUs; else a cluster address such as ``"auto"``).  With ``keep_chunks`` (a
    folder, see :func:`chunk_folder`) every finished chunk is saved there and a rerun takes the
    valid ones over instead of collecting them again, so an interrupted collection loses at most
    the chunks in flight; the caller removes the folder once the dataset is written.
    """
    if policy not in POLICIES:
        raise choice_error("policy", policy, POLICIES)
    if episodes <= 0:
        raise UsageError(f"episodes must be positive, got {episodes}.")

    cluster = ray_address is not None and ray_address != "local"
    workers = limits.workers("--workers", workers, cluster=cluster)
    if cluster:
        limits.cluster_answers(ray_address)
    domain = load_domain(env_id)
    action_shape = () if domain.discrete_actions else (domain.action_dim,)
    all_jobs = [(domain.env_id, level, a, b, seed, policy) for a, b in _chunks(episodes)]
    done: dict[tuple[int, int], list[Episode]] = {}
    digest = code_digest(domain) if keep_chunks is not None else ""

    def identity(job: tuple) -> dict[str, Any]:
        return {"domain": domain.env_id, "level": level, "generator": policy, "seed": seed, "start": job[2],
                "stop": job[3], "code": digest}

    if keep_chunks is not None:
        for job in all_jobs:
            kept = _kept_chunk(_chunk_path(keep_chunks, job[2], job[3]), identity(job))
            if kept is not None:
                done[job[2], job[3]] = kept
    jobs = [job for job in all_jobs if (job[2], job[3]) not in done]
    bar = tqdm(total=episodes, initial=sum(len(e) for e in done.values()), desc=f"collect {domain.env_id}/{level}",
               unit="ep", disable=not progress)

    def finished(job: tuple, eps: list[Episode]) -> None:
        done[job[2], job[3]] = eps
        if keep_chunks is not None:
            part = EpisodeDataset.from_episodes(eps, metadata={**identity(job), "source": "real"},
                                                state_dim=domain.state_dim, action_shape=action_shape)
            save_dataset(part, _chunk_path(keep_chunks, job[2], job[3]), overwrite=True)
        bar.update(job[3] - job[2])

    try:
        if ray_address is not None and jobs:
            from imaginebench.raycluster import ray_session

            local = ray_address == "local"
            with ray_session(None if local else ray_address, max(1, workers) if local else None) as ray:
                task = ray.remote(max_retries=1)(_collect_range)
                refs = [task.remote(job) for job in jobs]
                for job, ref in zip(jobs, refs):  # in order: the dataset does not depend on scheduling
                    finished(job, ray.get(ref))
        elif workers <= 1:
            for job in jobs:
                finished(job, _collect_range(job))
        elif jobs:
            with worker_pool(min(workers, len(jobs))) as pool:
                for job, eps in zip(jobs, pool.map(_collect_range, jobs)):
                    finished(job, eps)
    finally:
        bar.close()
    result = [ep for job in all_jobs for ep in done[job[2], job[3]]]
    meta = {
        "domain": domain.env_id, "level": level, "source": "real", "generator": f"{policy}",
        "seed": seed, "episodes": episodes, "state_dim": domain.state_dim,
        "discrete_actions": domain.discrete_actions, "action_dim": domain.action_dim,
        **(metadata or {}),
    }
    return EpisodeDataset.from_episodes(result, metadata=meta, state_dim=domain.state_dim, action_shape=action_shape)


def drop_chunks(folder: Path) -> None:
    """Remove a collection's kept chunks (its dataset is written)."""
    shutil.rmtree(folder, ignore_errors=True)
