"""S copies of one d3rlpy algorithm trained together, with stacked parameters.

The benchmark trains small MLPs (2×256) at batch 256: one seed at a time leaves most of a CPU's
matrix throughput, and nearly all of a GPU's, unused.  :class:`StackedTrainer` takes S d3rlpy
algorithms of the same config — built one by one, each after ``torch.manual_seed(seed)``, so
every seed starts from exactly the weights a lone run gets — and stacks each parameter into one
``(S, ...)`` tensor.  One update then runs every layer as a batched matmul
(``torch.baddbmm``) over S independent batches::

    params["policy._encoder.mlp.0.weight"]   (S, 394, 256)      one leaf tensor per d3rlpy parameter
    batch.observations                       (S, B, 394)        seed s's batch in row s
    loss = sum_s loss_s                      gradients of seed s land in row s only

Linear weights are stacked transposed, ``(S, in, out)``, so ``x @ W`` needs no transpose and
autograd's weight gradient already has the parameter's layout (with d3rlpy's ``(out, in)`` layout
every weight gradient was copied into place, ~9% of a TD3+BC step on the CPU).

Adam is elementwise, so one Adam over stacked tensors is S independent Adams; the loss is a
sum of per-seed losses, so each seed's gradient is its own.  Randomness inside an update (the
TD3 target noise) comes from one ``torch.Generator`` per seed, so a seed's numbers never depend
on which other seeds train beside it.

The d3rlpy algorithms stay the models of record: :meth:`StackedTrainer.write_back` copies the
parameters *and* the Adam moments back into each, so checkpoints, evaluation, ``model.d3`` and
resumption are those of a lone run; :meth:`StackedTrainer.__init__` reads them the same way, so a
run resumes from its checkpoint whether it trained alone or stacked.

Each algorithm subclass writes its update as a function of the stacked tensors; tests check it
against d3rlpy's own ``update`` on the same batch.  Losses stay tensors (one value per seed) and
are read only at checkpoints, so a step has no host synchronisation.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from imaginebench.algos._d3rlpy import load as _load_d3rlpy

_load_d3rlpy()

from d3rlpy.optimizers import OptimizerWrapper  # noqa: E402

Params = dict[str, torch.Tensor]

_ACTIVATIONS = {nn.ReLU: torch.relu, nn.Tanh: torch.tanh, nn.GELU: F.gelu}


class StackedBatch:
    """S mini-batches, seed s in row s (observations already standardised).

    Attributes:
        observations, next_observations: ``(S, B, D)``; ``next_observations`` is gathered on
            first use (behaviour cloning never reads it).
        actions: ``(S, B, A)`` continuous, or ``(S, B)`` int64 action ids.
        rewards, terminals: ``(S, B, 1)``.
        next_actions: the dataset's next actions, like ``actions`` (gathered on first use; only
            ReBRAC's critic target reads them).
        returns: ``gamma -> (S, B, 1)`` Monte-Carlo returns-to-go of the rows (Cal-QL's floor).
    """

    def __init__(self, observations: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor,
                 terminals: torch.Tensor, next_observations: torch.Tensor | Callable[[], torch.Tensor],
                 next_actions: torch.Tensor | Callable[[], torch.Tensor] | None = None,
                 returns: Callable[[float], torch.Tensor] | None = None) -> None:
        self.observations = observations
        self.actions = actions
        self.rewards = rewards
        self.terminals = terminals
        self._next = next_observations
        self._next_actions = next_actions
        self._returns = returns

    @property
    def next_observations(self) -> torch.Tensor:
        if callable(self._next):
            self._next = self._next()
        return self._next

    def returns_to_go(self, gamma: float) -> torch.Tensor:
        if self._returns is None:
            raise ValueError("This stacked batch was built without returns-to-go.")
        return self._returns(gamma)

    @property
    def next_actions(self) -> torch.Tensor:
        if self._next_actions is None:
            raise ValueError("This stacked batch was built without next actions.")
        if callable(self._next_actions):
            self._next_actions = self._next_actions()
        return self._next_actions


def linear(params: Params, name: str, x: torch.Tensor) -> torch.Tensor:
    """``x @ W.T + b`` for every seed at once: ``x (S, B, in)`` -> ``(S, B, out)`` (the stacked
    weight is stored transposed, ``(S, in, out)``)."""
    return torch.baddbmm(params[name + ".bias"].unsqueeze(1), x, params[name + ".weight"])


class StackedTrainer:
    """Trains S copies of one d3rlpy algorithm in lockstep (see the module docstring).

    Subclasses set :attr:`algo_class` (the d3rlpy class they reproduce) and implement
    :meth:`update`.

    Args:
        algos: built d3rlpy algorithms of one config, one per seed (parameters and optimiser
            state are read from them).
        generators: one CPU ``torch.Generator`` per seed for randomness inside updates.
    """

    algo_class: ClassVar[str] = ""
    """Name of the d3rlpy algorithm class whose update this trainer reproduces."""
    skip_modules: ClassVar[tuple[str, ...]] = ()
    """Module fields left out of stacking (no optimiser of the update steps them; each seed's own
    module is used, e.g. COMBO's fitted dynamics and its model buffer)."""
    graphable_update: ClassVar[bool] = True
    """Whether the update can be a CUDA-graph replay (no host-side work inside the step);
    :attr:`graphable` also asks that no learning-rate schedule runs."""

    def __init__(self, algos: Sequence[Any], generators: Sequence[torch.Generator] | None = None) -> None:
        if not algos:
            raise ValueError("StackedTrainer needs at least one algorithm.")
        names = {type(a).__name__ for a in algos}
        if names != {self.algo_class}:
            raise ValueError(f"{type(self).__name__} trains {self.algo_class}, got {sorted(names)}.")
        self.algos = list(algos)
        self.n = len(self.algos)
        self.config = self.algos[0].config
        self.impls = [a.impl for a in self.algos]
        self.device = torch.device(self.impls[0].device)
        self.generators = list(generators) if generators is not None else [
            torch.Generator().manual_seed(i) for i in range(self.n)]
        if len(self.generators) != self.n:
            raise ValueError(f"{self.n} algorithms but {len(self.generators)} generators.")
        self.scaler = self.config.observation_scaler

        # stack every module parameter; remember which d3rlpy tensor each row came from
        self.params: Params = {}
        self._sources: dict[str, list[torch.Tensor]] = {}
        mods = [impl.modules for impl in self.impls]
        by_id: dict[int, str] = {}
        self._optim_fields: list[str] = []
        for f in dataclasses.fields(mods[0]):
            first = getattr(mods[0], f.name)
            if f.name in self.skip_modules:
                continue
            if isinstance(first, OptimizerWrapper):
                self._optim_fields.append(f.name)
                continue
            if not isinstance(first, nn.Module):
                continue
            for pname, _ in first.named_parameters(remove_duplicate=False):
                name = f"{f.name}.{pname}"
                per_seed = [dict(getattr(m, f.name).named_parameters(remove_duplicate=False))[pname] for m in mods]
                if id(per_seed[0]) in by_id:
                    # a module shared by two fields (DiscreteBCQ's imitator reads the Q encoder):
                    # one stacked tensor under both names
                    self.params[name] = self.params[by_id[id(per_seed[0])]]
                    continue
                self._sources[name] = per_seed
                by_id[id(per_seed[0])] = name
                self.params[name] = torch.stack([self._layout(name, p.detach()) for p in per_seed]).contiguous()
        # one Adam per d3rlpy optimiser, over the stacked rows of its parameters
        self.optimizers: dict[str, torch.optim.Optimizer] = {}
        self.schedulers: dict[str, Any] = {}
        self._grouped: dict[str, list[str]] = {}
        for field in self._optim_fields:
            wrappers = [getattr(m, field) for m in mods]
            if any(w._clip_grad_norm for w in wrappers):
                raise ValueError(f"{field}: gradient clipping mixes seeds; it is not supported by stacked training.")
            schedules = [w._lr_scheduler for w in wrappers]
            optim = wrappers[0].optim
            if type(optim) is not torch.optim.Adam or len(optim.param_groups) != 1:
                raise ValueError(f"{field}: stacked training supports one-group Adam, got {type(optim).__name__}.")
            members = [by_id[id(p)] for p in optim.param_groups[0]["params"]]
            group = {k: v for k, v in optim.param_groups[0].items() if k not in ("params", "initial_lr")}
            for name in members:
                self.params[name].requires_grad_(True)
            if self.device.type == "cuda":
                group["capturable"] = True  # the step count lives on the GPU, so a CUDA graph can replay it
            stacked = torch.optim.Adam([self.params[n] for n in members], **group)
            self._load_moments(stacked, members, [w.optim for w in wrappers])
            self.optimizers[field] = stacked
            self._grouped[field] = members
            if any(schedules):
                self.schedulers[field] = self._stack_schedule(field, stacked, schedules)
        self.grad_step = int(self.algos[0].grad_step)
        if any(int(a.grad_step) != self.grad_step for a in self.algos):
            raise ValueError("Stacked seeds must be at the same gradient step; resume them separately.")
        self.last_loss: dict[str, torch.Tensor] = {}
        self._joined: dict[tuple[int, int], tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
        self._graphs: dict[Any, tuple[Any, dict[str, torch.Tensor]]] = {}
        self._static_idx: torch.Tensor | None = None
        self._static_noise: list[torch.Tensor] = []
        self._static_kinds: list[str] = []
        self._capturing = False
        self._noise_calls = 0
        self._noise_count: dict[Any, int] = {}

    @staticmethod
    def _layout(name: str, tensor: torch.Tensor) -> torch.Tensor:
        """A linear weight transposed between d3rlpy's ``(out, in)`` and the stacked ``(in, out)``
        (the map is its own inverse); any other tensor as it is."""
        return tensor.t() if name.endswith(".weight") and tensor.dim() == 2 else tensor

    @property
    def graphable(self) -> bool:  # type: ignore[override]
        """Whether a step can be a CUDA-graph replay: a learning-rate schedule changes a host-side
        number every step, which a captured graph would freeze."""
        return type(self).graphable_update and not self.schedulers

    # ------------------------------------------------------------------ optimiser state
    @staticmethod
    def _stack_schedule(field: str, stacked: torch.optim.Optimizer, schedules: list) -> Any:
        """One cosine schedule for the stacked optimiser, at the seeds' common point (every seed's
        schedule is the same function of its optimiser's step count, which stacking keeps equal)."""
        from torch.optim.lr_scheduler import CosineAnnealingLR

        if not all(isinstance(sch, CosineAnnealingLR) for sch in schedules):
            kinds = sorted({type(sch).__name__ for sch in schedules})
            raise ValueError(f"{field}: stacked training supports cosine learning-rate schedules only, got {kinds}.")
        states = [{k: v for k, v in sch.state_dict().items() if k != "_get_lr_called_within_step"}
                  for sch in schedules]
        if any(st != states[0] for st in states[1:]):
            raise ValueError(f"{field}: the seeds' learning-rate schedules differ; resume them separately.")
        first = schedules[0]
        for group in stacked.param_groups:  # the rate it started from (the group's "lr" is where it is now)
            group["initial_lr"] = first.base_lrs[0]
        now = stacked.param_groups[0]["lr"]
        schedule = CosineAnnealingLR(stacked, T_max=first.T_max, eta_min=first.eta_min)
        schedule.load_state_dict(first.state_dict())
        for group in stacked.param_groups:
            group["lr"] = now
        return schedule

    def _load_moments(self, stacked: torch.optim.Optimizer, members: list[str], optims: list) -> None:
        states = [[o.state.get(self._sources[n][s]) for n in members] for s, o in enumerate(optims)]
        have = [all(st for st in row) for row in states]
        if not any(have):
            return
        if not all(have):
            raise ValueError("Some seeds have optimiser state and others do not; resume them separately.")
        for j, name in enumerate(members):
            rows = [states[s][j] for s in range(self.n)]
            keys = [k for k in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if k in rows[0]]
            state = {k: torch.stack([self._layout(name, r[k]) for r in rows]).contiguous() for k in keys}
            state["step"] = rows[0]["step"].clone()
            stacked.state[self.params[name]] = state

    def write_back(self) -> None:
        """Copy every seed's parameters and Adam state into its d3rlpy algorithm (and grad step)."""
        with torch.no_grad():
            for name, per_seed in self._sources.items():
                for s, p in enumerate(per_seed):
                    p.copy_(self._layout(name, self.params[name][s]))
        for field, stacked in self.optimizers.items():
            for s, impl in enumerate(self.impls):
                optim = getattr(impl.modules, field).optim
                for name in self._grouped[field]:
                    state = stacked.state.get(self.params[name])
                    if not state:
                        continue
                    own = {k: (v.clone() if k == "step" else self._layout(name, v[s]).contiguous())
                           for k, v in state.items()}
                    optim.state[self._sources[name][s]] = own
                schedule = self.schedulers.get(field)
                if schedule is not None:
                    wrapper = getattr(impl.modules, field)
                    wrapper._lr_scheduler.load_state_dict(schedule.state_dict())
                    optim.param_groups[0]["lr"] = stacked.param_groups[0]["lr"]
        for algo in self.algos:
            algo.set_grad_step(self.grad_step)

    def write_back_module(self, module: str, seed: int) -> None:
        """Copy seed ``seed``'s stacked parameters of ``module`` (e.g. ``policy``) into its d3rlpy
        algorithm, for host-side work that runs the d3rlpy module (COMBO's model rollouts)."""
        with torch.no_grad():
            for name in self._module_names(module):
                if name in self._sources:
                    self._sources[name][seed].copy_(self._layout(name, self.params[name][seed]))

    # ------------------------------------------------------------------ steps
    def source_rows(self, batch_size: int) -> int:
        """Rows of each seed's batch drawn from the data source (COMBO: the rest from its model)."""
        return batch_size

    def step(self, batch: StackedBatch) -> None:
        """One gradient step of every seed (``grad_step`` as d3rlpy counts it)."""
        self._noise_calls = 0
        self._joined.clear()
        self.last_loss = self.update(batch, self.grad_step)
        self._joined.clear()
        self.grad_step += 1

    # ------------------------------------------------------------------ CUDA graphs
    WARMUP_STEPS: ClassVar[int] = 3
    """Eager steps before the first capture (torch needs a few to settle its allocator)."""

    def phase(self, grad_step: int) -> Any:
        """What decides an update's branches at ``grad_step`` (one CUDA graph per phase)."""
        return None

    def graph_step(self, sampler: Any, batch_size: int) -> None:
        """One step of every seed as a CUDA graph replay: the batch gather, the update, the Adam
        steps and the target updates in one launch; only the ``(S, B)`` indices and any noise are
        copied in.  The same arithmetic as :meth:`step` (tested against it)."""
        indices = sampler.indices(batch_size)
        if self.grad_step < self.WARMUP_STEPS:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self.step(sampler.batch(indices))
            torch.cuda.current_stream().wait_stream(side)
            return
        if self._static_idx is None:
            self._static_idx = torch.zeros(indices.shape, dtype=torch.int64, device=self.device)
        phase = self.phase(self.grad_step)
        if phase not in self._graphs:
            graph = torch.cuda.CUDAGraph()
            self._capturing, self._noise_calls = True, 0
            for optim in self.optimizers.values():
                optim.zero_grad(set_to_none=True)
            self._joined.clear()
            with torch.cuda.graph(graph):
                out = self.update(sampler.batch(self._static_idx), self.grad_step)
            self._joined.clear()
            self._capturing = False
            self._graphs[phase] = (graph, out)
        graph, out = self._graphs[phase]
        self._static_idx.copy_(sampler.upload(torch.from_numpy(indices)))
        count = self._noise_count.get(phase, 0)
        for buffer, kind in zip(self._static_noise[:count], self._static_kinds[:count]):
            buffer.copy_(self._draw(buffer.shape[1:], kind), non_blocking=True)
        graph.replay()
        self.last_loss = out
        self.grad_step += 1

    def losses(self) -> list[dict[str, float]]:
        """The last step's losses, one dict per seed (reads the device: call at checkpoints)."""
        values = {k: v.detach().float().cpu().tolist() for k, v in self.last_loss.items()}
        return [{k: v[s] for k, v in values.items()} for s in range(self.n)]

    def update(self, batch: StackedBatch, grad_step: int) -> dict[str, torch.Tensor]:
        """One update of every seed; returns per-seed losses ``{name: (S,)}``."""
        raise NotImplementedError

    # ------------------------------------------------------------------ helpers for updates
    def minimise(self, field: str, loss: torch.Tensor) -> None:
        """Clear the grads of optimiser ``field``'s parameters, backprop ``loss.sum()``, step.

        Grads are set to ``None`` rather than zeroed (autograd then writes them instead of adding
        into zeros); every update here reaches all parameters of the optimiser it steps, so Adam
        skips none and the step equals d3rlpy's ``zero_grad()`` then ``step()``.
        """
        optim = self.optimizers[field]
        optim.zero_grad(set_to_none=True)
        loss.sum().backward()
        optim.step()
        schedule = self.schedulers.get(field)
        if schedule is not None:  # as d3rlpy's OptimizerWrapper.step: one schedule step per optimiser step
            schedule.step()

    def encode(self, prefix: str, x: torch.Tensor, action: torch.Tensor | None = None,
               params: Params | None = None) -> torch.Tensor:
        """The instruction encoder at ``prefix`` (e.g. ``policy._encoder``) on ``x (S, B, D)`` (⊕ action).

        ``params`` replaces :attr:`params` (e.g. detached copies, so no gradient reaches them).
        """
        state_dim, layers = self._plan(prefix)
        p = self.params if params is None else params
        if state_dim is not None:
            x = torch.cat([x[..., :state_dim], linear(p, prefix + ".trunk.project", x[..., state_dim:])], dim=-1)
        if action is not None:
            x = self._join(x, action)
        for kind, name in layers:
            x = linear(p, name, x) if kind == "linear" else kind(x)
        return x

    def encode_repeated(self, prefix: str, x: torch.Tensor, n: int, action: torch.Tensor,
                        params: Params | None = None) -> torch.Tensor:
        """:meth:`encode` of every row of ``x (S, B, D)`` repeated ``n`` times in a row (row
        ``b·n + j`` is observation ``b``) with ``action (S, B·n, A)``: the first layer's
        observation part runs once per observation and is repeated, then the action part is added
        (``W·[x, a] + b = W_x·x + (W_a·a + b)``) — the same maths as encoding the repeated rows,
        without ``n`` copies of the observation through the widest matmul."""
        state_dim, layers = self._plan(prefix)
        p = self.params if params is None else params
        if state_dim is not None:
            x = torch.cat([x[..., :state_dim], linear(p, prefix + ".trunk.project", x[..., state_dim:])], dim=-1)
        kind, name = layers[0]
        if kind != "linear":
            return self.encode(prefix, x.repeat_interleave(n, dim=1), action, params)
        weight, width = p[name + ".weight"], x.shape[-1]
        h = torch.bmm(x, weight[:, :width]).repeat_interleave(n, dim=1)
        h = h + torch.baddbmm(p[name + ".bias"].unsqueeze(1), action, weight[:, width:])
        for kind, name in layers[1:]:
            h = linear(p, name, h) if kind == "linear" else kind(h)
        return h

    def _join(self, x: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """``x ⊕ action``, made once per update for each pair (both critics read the same one)."""
        key = (id(x), id(action))
        hit = self._joined.get(key)
        if hit is None:
            hit = self._joined[key] = (x, action, torch.cat([x, action], dim=-1))  # holds x, action: ids stay theirs
        return hit[2]

    def _plan(self, prefix: str) -> tuple[int | None, list[tuple[Any, str]]]:
        """(state width if the encoder projects the embedding, else None; its layers in order)."""
        cache = self.__dict__.setdefault("_plans", {})
        if prefix not in cache:
            module: Any = self.impls[0].modules
            for part in prefix.split("."):
                module = module[int(part)] if part.isdigit() else getattr(module, part)
            trunk = getattr(module, "trunk", None)
            if trunk is None or not hasattr(module, "mlp"):
                raise ValueError(f"Stacked training needs the package's instruction encoder at {prefix}, "
                                 f"got {type(module).__name__}.")
            layers: list[tuple[Any, str]] = []
            for i, layer in enumerate(module.mlp):
                if isinstance(layer, nn.Linear):
                    layers.append(("linear", f"{prefix}.mlp.{i}"))
                elif type(layer) in _ACTIVATIONS:
                    layers.append((_ACTIVATIONS[type(layer)], ""))
                else:
                    raise ValueError(f"Stacked training cannot run layer {type(layer).__name__} of {prefix}.")
            cache[prefix] = (trunk.state_dim if trunk.project is not None else None, layers)
        return cache[prefix]

    def soft_update(self, target: str, online: str, tau: float) -> None:
        """``target ← (1 − τ)·target + τ·online`` for every parameter of module ``online``."""
        with torch.no_grad():
            for name in self._module_names(online):
                t = self.params[target + name[len(online):]]
                t.mul_(1.0 - tau).add_(tau * self.params[name])

    def hard_update(self, target: str, online: str) -> None:
        with torch.no_grad():
            for name in self._module_names(online):
                self.params[target + name[len(online):]].copy_(self.params[name])

    @property
    def n_critics(self) -> int:
        """Q-functions in the ensemble (``q_funcs``) of the algorithm."""
        return len(self.impls[0].modules.q_funcs)

    def _module_names(self, module: str) -> list[str]:
        return [n for n in self.params if n.startswith(module + ".")]

    def detached(self, module: str) -> Params:
        """The parameters of ``module`` detached from autograd (read by a loss that must not train them)."""
        return {n: self.params[n].detach() for n in self._module_names(module)}

    def _draw(self, shape: Sequence[int], kind: str = "normal") -> torch.Tensor:
        if kind == "normal":
            return torch.stack([torch.randn(tuple(shape), generator=g) for g in self.generators])
        # uniform on [-1, 1), drawn as d3rlpy draws it (``zeros(shape).uniform_(-1, 1)``)
        return torch.stack([torch.empty(tuple(shape)).uniform_(-1.0, 1.0, generator=g) for g in self.generators])

    def randn(self, shape: Sequence[int]) -> torch.Tensor:
        """``(S, *shape)`` standard normal draws, row s from seed s's (CPU) generator.

        Drawn on the CPU and copied, so a seed's noise is the same on every device and equals
        what d3rlpy draws from the global generator in a lone CPU run.  Under CUDA-graph capture
        it returns a static buffer that :meth:`graph_step` refills before each replay.
        """
        return self._noise(shape, "normal")

    def rand_symmetric(self, shape: Sequence[int]) -> torch.Tensor:
        """``(S, *shape)`` uniform draws on [-1, 1), row s from seed s's generator (as :meth:`randn`)."""
        return self._noise(shape, "uniform")

    def _noise(self, shape: Sequence[int], kind: str) -> torch.Tensor:
        i = self._noise_calls
        self._noise_calls += 1
        if self._capturing:
            if i >= len(self._static_noise):
                raise RuntimeError("A CUDA graph needs noise buffers sized during the eager warm-up steps; "
                                   "this update drew noise it never drew eagerly.")
            self._noise_count[self.phase(self.grad_step)] = self._noise_calls
            return self._static_noise[i]
        if self.device.type == "cuda" and i == len(self._static_noise):
            # sized here, outside any capture: memory allocated during capture belongs to the graph
            self._static_noise.append(torch.empty((self.n, *shape), device=self.device))
            self._static_kinds.append(kind)
        return self._draw(shape, kind).to(self.device, non_blocking=True)


def huber(diff: torch.Tensor, beta: float = 1.0) -> torch.Tensor:
    """d3rlpy's ``compute_huber_loss`` of ``target − value``."""
    return torch.where(diff.detach().abs() < beta, 0.5 * diff ** 2, beta * (diff.abs() - 0.5 * beta))
