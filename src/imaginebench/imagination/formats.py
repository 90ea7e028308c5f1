"""Prompt formats of the four fine-tuning tasks (KALM) and the generation prompt.

A training example is a :class:`Sequence`: a row of positions, each a text token, a state
placeholder or an action placeholder.  Placeholders carry their numeric value; the model
replaces them with the state/action embeddings.  A position marked ``target`` is predicted
from the hidden state of the position *before* it: by the token head (text), the state head
or the action head.  Generation uses the same rule, so training and generation line up::

    rollout      "Generate a rollout for the following goal: <goal>. Rollout:" S0 A0 S1 A1 ... ST
                                                         targets:                A0 S1 A1 ... ST
    dynamics     "Predict the next state. State:" S " Action:" A " Next state:" S'      target S'
    consequence  "Predict the final state for the following goal: <goal>. Initial state:" S0
                 " Final state:" ST                                                    target ST
    explanation  "Explain the goal of the following rollout. Rollout:" S0 A0 ... ST " Goal:"
                 " <instruction>" <eos>                            targets: instruction tokens, eos

**End labels** (rollout task only): every state position S_t of a rollout example carries
``ends`` = 1 if the real episode ended there by termination (success), else 0; every other
position has -1 (no label).  The end logit of S_t is read from the hidden state *at* S_t (the
one that also predicts A_t): "having seen S_t, does the rollout end here?".  An episode cut
into a window by ``max_steps`` labels only its true last state, and only when the episode was
terminal; a time-limit truncation's last state is labelled 0.

``<goal>`` is the instruction without trailing spaces and full stops.  Text is tokenised per
piece (cached), so the generation prompt is token-for-token the training prompt.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any
from typing import Sequence as Seq

import numpy as np

from imaginebench.errors import choice_error

TEXT, STATE, ACTION = 0, 1, 2
"""Position kinds."""

TASKS: tuple[str, ...] = ("rollout", "dynamics", "consequence", "explanation")
"""The four fine-tuning tasks of docs/benchmark.md §6, in order."""

ROLLOUT_PROMPT = "Generate a rollout for the following goal: {goal}. Rollout:"
"""The generation prompt (docs/benchmark.md §6); ``{goal}`` is the instruction."""
DYNAMICS_PROMPT = ("Predict the next state. State:", " Action:", " Next state:")
CONSEQUENCE_PROMPT = ("Predict the final state for the following goal: {goal}. Initial state:", " Final state:")
EXPLANATION_PROMPT = ("Explain the goal of the following rollout. Rollout:", " Goal:")


def goal_text(instruction: str) -> str:
    """The instruction as it is put into ``[GOAL]``: without trailing spaces and full stops."""
    return instruction.strip().rstrip(".").rstrip()


@dataclass
class Sequence:
    """One example: parallel per-position arrays (length ``L``).

    Attributes:
        task: which of :data:`TASKS` it is.
        kinds: ``(L,)`` int8, :data:`TEXT`, :data:`STATE` or :data:`ACTION`.
        tokens: ``(L,)`` token ids (0 where not text).
        states: ``(L, D)`` raw (unnormalised) state values (0 where not a state).
        actions: ``(L,)`` int64 or ``(L, A)`` float32 action values (0 where not an action).
        targets: ``(L,)`` bool, positions predicted from the position before.
        anchors: ``(L,)`` int, for state positions the index of the latest earlier state
            position (the reference of residual state prediction), else -1.
        ends: ``(L,)`` int8 end-of-rollout labels: 1 (the episode ends at this state),
            0 (it goes on) or -1 (no label); ``None`` means all -1.
    """

    task: str
    kinds: np.ndarray
    tokens: np.ndarray
    states: np.ndarray
    actions: np.ndarray
    targets: np.ndarray
    anchors: np.ndarray
    ends: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.ends is None:
            self.ends = np.full(len(self.kinds), -1, np.int8)

    def __len__(self) -> int:
        return len(self.kinds)


class SequenceBuilder:
    """Builds :class:`Sequence` rows for one tokenizer and one state/action layout."""

    def __init__(self, tokenizer: Any, state_dim: int, discrete_actions: bool, action_dim: int) -> None:
        self.tokenizer = tokenizer
        self.state_dim = int(state_dim)
        self.discrete = bool(discrete_actions)
        self.action_dim = int(action_dim)
        self.eos = int(tokenizer.eos_token_id)
        self._encode = functools.lru_cache(maxsize=65536)(self._encode_uncached)

    def _encode_uncached(self, text: str) -> tuple[int, ...]:
        return tuple(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    # ------------------------------------------------------------------ assembly
    def _assemble(self, task: str, parts: list[tuple[int, Any, bool]],
                  state_ends: Seq[int] | None = None) -> Sequence:
        """``parts``: (kind, value, target) with text values being strings (one entry per piece).

        ``state_ends``: one end label per state part, in order (default: no labels).
        """
        kinds: list[int] = []
        tokens: list[int] = []
        targets: list[bool] = []
        state_rows: list[tuple[int, np.ndarray]] = []
        action_rows: list[tuple[int, Any]] = []
        for kind, value, target in parts:
            if kind == TEXT:
                ids = self._encode(value) if isinstance(value, str) else tuple(value)
                kinds += [TEXT] * len(ids)
                tokens += list(ids)
                targets += [target] * len(ids)
            else:
                (state_rows if kind == STATE else action_rows).append((len(kinds), value))
                kinds.append(kind)
                tokens.append(0)
                targets.append(target)
        n = len(kinds)
        states = np.zeros((n, self.state_dim), dtype=np.float32)
        anchors = np.full(n, -1, dtype=np.int64)
        ends = np.full(n, -1, dtype=np.int8)
        if state_ends is not None and len(state_ends) != len(state_rows):
            raise ValueError(f"{len(state_ends)} end labels for {len(state_rows)} states.")
        previous = -1
        for i, (pos, value) in enumerate(state_rows):
            states[pos] = value
            anchors[pos] = previous
            previous = pos
            if state_ends is not None:
                ends[pos] = state_ends[i]
        if self.discrete:
            actions = np.zeros(n, dtype=np.int64)
        else:
            actions = np.zeros((n, self.action_dim), dtype=np.float32)
        for pos, value in action_rows:
            actions[pos] = value
        return Sequence(task=task, kinds=np.asarray(kinds, np.int8), tokens=np.asarray(tokens, np.int64),
                        states=states, actions=actions, targets=np.asarray(targets, bool), anchors=anchors,
                        ends=ends)

    def _interleave(self, states: np.ndarray, actions: np.ndarray, targets: bool) -> list[tuple[int, Any, bool]]:
        parts: list[tuple[int, Any, bool]] = [(STATE, states[0], False)]
        for t in range(len(actions)):
            parts += [(ACTION, actions[t], targets), (STATE, states[t + 1], targets)]
        return parts

    # ------------------------------------------------------------------ the four tasks
    def rollout_prompt(self, instruction: str, state0: np.ndarray) -> Sequence:
        """The generation prompt followed by the initial state placeholder."""
        return self._assemble("rollout", [(TEXT, ROLLOUT_PROMPT.format(goal=goal_text(instruction)), False),
                                          (STATE, state0, False)])

    def rollout(self, instruction: str, states: np.ndarray, actions: np.ndarray, ends_here: bool = True) -> Sequence:
        """A rollout example; ``ends_here``: its last state is where the episode terminated.

        End labels: 0 on every state but the last, which gets ``ends_here``.
        """
        ends = [0] * len(actions) + [int(bool(ends_here))]
        return self._assemble("rollout", [(TEXT, ROLLOUT_PROMPT.format(goal=goal_text(instruction)), False),
                                          *self._interleave(states, actions, True)], state_ends=ends)

    def dynamics(self, state: np.ndarray, action: Any, next_state: np.ndarray) -> Sequence:
        p = DYNAMICS_PROMPT
        return self._assemble("dynamics", [(TEXT, p[0], False), (STATE, state, False), (TEXT, p[1], False),
                                           (ACTION, action, False), (TEXT, p[2], False), (STATE, next_state, True)])

    def consequence(self, instruction: str, state0: np.ndarray, final: np.ndarray) -> Sequence:
        p = CONSEQUENCE_PROMPT
        return self._assemble("consequence", [(TEXT, p[0].format(goal=goal_text(instruction)), False),
                                              (STATE, state0, False), (TEXT, p[1], False), (STATE, final, True)])

    def explanation(self, instruction: str, states: np.ndarray, actions: np.ndarray) -> Sequence:
        p = EXPLANATION_PROMPT
        answer = self._encode(" " + instruction.strip()) + (self.eos,)
        return self._assemble("explanation", [(TEXT, p[0], False), *self._interleave(states, actions, False),
                                              (TEXT, p[1], False), (TEXT, answer, True)])

    def example(self, task: str, instruction: str, states: np.ndarray, actions: np.ndarray,
                rng: np.random.Generator, max_steps: int | None = None, terminal: bool = True,
                start_share: float = 0.0) -> Sequence:
        """An example of ``task`` from one episode (``states``: T+1 rows, ``actions``: T rows).

        Episodes longer than ``max_steps`` are cut to a window of that many steps
        (rollout/explanation): with probability ``start_share`` the one at the episode's start,
        else one at a uniformly random offset.  Why: generation always starts at an initial
        state, where only the instruction says which way to go; uniformly placed windows of long
        episodes almost never show that moment (mid-episode the state history already says it),
        and a model fine-tuned on them ignores the instruction (notes/halfcheetah_imagination.md).
        Dynamics uses one random transition of the episode.
        ``terminal``: the episode ended by termination (success), not by a time limit; only
        then is its last state labelled as the end of the rollout (rollout task).
        """
        t = len(actions)
        if t == 0:
            raise ValueError("Cannot build an example from an episode without actions.")
        if task == "dynamics":
            k = int(rng.integers(t))
            return self.dynamics(states[k], actions[k], states[k + 1])
        if task == "consequence":
            return self.consequence(instruction, states[0], states[-1])
        ends_here = bool(terminal)
        if max_steps is not None and t > max_steps:
            at_start = start_share > 0 and rng.random() < start_share  # no extra draw when 0: same stream as before
            k = 0 if at_start else int(rng.integers(t - max_steps + 1))
            states, actions = states[k:k + max_steps + 1], actions[k:k + max_steps]
            ends_here = ends_here and k + max_steps == t
        if task == "rollout":
            return self.rollout(instruction, states, actions, ends_here=ends_here)
        if task == "explanation":
            return self.explanation(instruction, states, actions)

        raise choice_error("fine-tuning task", task, TASKS)


@dataclass
class Batch:
    """Right-padded numpy arrays of a list of :class:`Sequence` (``B`` rows, ``L`` columns).

    ``ends`` holds the end-of-rollout labels (-1 where none, also on padding); ``None``: none.
    """

    kinds: np.ndarray
    tokens: np.ndarray
    states: np.ndarray
    actions: np.ndarray
    targets: np.ndarray
    anchors: np.ndarray
    mask: np.ndarray
    tasks: tuple[str, ...]
    ends: np.ndarray | None = None


def collate(seqs: Seq[Sequence], left_pad: bool = False) -> Batch:
    """Pad ``seqs`` to one length (right by default; left for generation prompts)."""
    if not seqs:
        raise ValueError("Cannot collate an empty list of sequences.")
    b, length = len(seqs), max(len(s) for s in seqs)
    first = seqs[0]
    kinds = np.zeros((b, length), np.int8)
    tokens = np.zeros((b, length), np.int64)
    states = np.zeros((b, length, first.states.shape[1]), np.float32)
    actions = np.zeros((b, length, *first.actions.shape[1:]), first.actions.dtype)
    targets = np.zeros((b, length), bool)
    anchors = np.full((b, length), -1, np.int64)
    mask = np.zeros((b, length), bool)
    ends = np.full((b, length), -1, np.int8)
    for i, s in enumerate(seqs):
        n = len(s)
        off = length - n if left_pad else 0
        sl = slice(off, off + n)
        kinds[i, sl], tokens[i, sl], states[i, sl] = s.kinds, s.tokens, s.states
        actions[i, sl], targets[i, sl], mask[i, sl] = s.actions, s.targets, True
        anchors[i, sl] = np.where(s.anchors >= 0, s.anchors + off, -1)
        ends[i, sl] = s.ends
    return Batch(kinds=kinds, tokens=tokens, states=states, actions=actions, targets=targets,
                 anchors=anchors, mask=mask, tasks=tuple(s.task for s in seqs), ends=ends)
