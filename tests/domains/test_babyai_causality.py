"""BabyAI's one-cause-per-step rules: every simulator step passes them, the imagined faults found in
sessions 55-56 do not, and the honest filter applies them."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("minigrid")

import imaginebench
from imaginebench.data.collect import episode_seed, rollout
from imaginebench.data.dataset import Episode
from imaginebench.domains.babyai import layout as L
from imaginebench.domains.babyai.causality import uncaused_steps, unpowered
from imaginebench.domains.babyai.grid import BabyAIWorld
from imaginebench.imagination.filters import honest_ok

from .test_babyai import BLUE, DOMAIN, GREEN, RED, YELLOW, state


def _episode(task: str, states: list[np.ndarray], actions: list[int]) -> Episode:
    n = len(actions)
    return Episode(states=np.asarray(states, np.float32), actions=np.asarray(actions, np.int64),
                   rewards=np.zeros(n, np.float32), terminals=np.zeros(n, bool), truncations=np.zeros(n, bool),
                   successes=np.zeros(n, bool), task=task, instruction="")


def test_every_step_of_a_random_policy_in_the_simulator_has_its_cause():
    env = imaginebench.make("BabyAI-v0", level="train", encode_instruction=False).unwrapped
    rng = np.random.default_rng(0)
    steps = 0
    for i in range(150):  # random actions reach what the expert never does: walls, blocked drops, locked doors
        task = env.tasks[(7 * i) % len(env.tasks)]
        world = BabyAIWorld.from_state(rollout(env, task, episode_seed(3, i)).states[0])
        states, actions = [world.to_state()], []
        for _ in range(60):
            a = int(rng.integers(L.NUM_ACTIONS))
            world.step(a)
            states.append(world.to_state())
            actions.append(a)
        states = np.asarray(states)
        assert not uncaused_steps(states).any() and not unpowered(states, actions), i
        steps += len(actions)
    assert steps == 9_000


def test_the_imagined_faults_are_uncaused():
    s = state(agent=(2, 3))  # the ball lies at (2, 2), one cell west
    far_pick = state(agent=(2, 3), ball=(RED, 2, 3), carried="ball")
    assert uncaused_steps(np.stack([s, far_pick])).tolist() == [True]
    on = state(agent=(2, 2))
    assert uncaused_steps(np.stack([on, state(agent=(2, 2), carried="ball")])).tolist() == [False]
    # a toggle that also puts the ball under the agent into its hand: two changes in one step
    door = state(ball=(RED, 1, 3), door=(YELLOW, 0, 3, L.DOOR_CLOSED), agent=(1, 3))
    both = state(ball=(RED, 1, 3), door=(YELLOW, 0, 3, L.DOOR_OPEN), agent=(1, 3), carried="ball")
    assert uncaused_steps(np.stack([door, both])).tolist() == [True]
    # the door opened from across the room; opened from beside it
    assert uncaused_steps(np.stack([state(agent=(4, 4)), state(agent=(4, 4), door=(YELLOW, 0, 3, L.DOOR_OPEN))]))[0]
    assert not uncaused_steps(np.stack([state(agent=(1, 3)), state(agent=(1, 3), door=(YELLOW, 0, 3, L.DOOR_OPEN))]))[0]
    # a locked door opens only with its own key in hand, and nothing locks a door
    locked = state(key=(BLUE, 1, 3), door=(BLUE, 0, 3, L.DOOR_LOCKED), agent=(1, 3), carried="key")
    opened = state(key=(BLUE, 1, 3), door=(BLUE, 0, 3, L.DOOR_OPEN), agent=(1, 3), carried="key")
    assert uncaused_steps(np.stack([locked, opened])).tolist() == [False]
    assert uncaused_steps(np.stack([opened, locked])).tolist() == [True]
    no_key = state(door=(BLUE, 0, 3, L.DOOR_LOCKED), agent=(1, 3))
    assert uncaused_steps(np.stack([no_key, state(door=(BLUE, 0, 3, L.DOOR_OPEN), agent=(1, 3))]))[0]
    # a floor object that moves, a two-cell move, a colour that changes, a carried ball turned into a box
    assert uncaused_steps(np.stack([s, state(agent=(2, 3), box=(GREEN, 5, 5))]))[0]
    assert uncaused_steps(np.stack([s, state(agent=(2, 5))]))[0]
    assert uncaused_steps(np.stack([s, state(agent=(2, 3), ball=(BLUE, 2, 2))]))[0]
    ball = state(agent=(4, 4), ball=(RED, 4, 4), box=(GREEN, 5, 5), carried="ball")
    assert uncaused_steps(np.stack([ball, state(agent=(4, 4), ball=(RED, 3, 3), box=(GREEN, 4, 4), carried="box")]))[0]
    assert uncaused_steps(np.stack([s, s * np.nan]))[0]


def test_each_change_must_be_its_actions_own():
    s = state(agent=(2, 2))
    east, picked = state(agent=(2, 3)), state(agent=(2, 2), carried="ball")
    assert not unpowered(np.stack([s, east]), [L.EAST])
    assert unpowered(np.stack([s, east]), [L.WEST])
    assert not unpowered(np.stack([s, picked]), [L.PICKUP])
    assert unpowered(np.stack([s, picked]), [L.TOGGLE])
    assert unpowered(np.stack([picked, s]), [L.PICKUP])  # a drop under pick-up
    assert not unpowered(np.stack([s, s]), [L.WEST])  # nothing changed: any action (a wall, a blocked drop)
    with pytest.raises(ValueError, match="expected 1 actions"):
        unpowered(np.stack([s, east]), [L.EAST, L.EAST])


def test_the_honest_filter_rejects_a_pick_up_from_the_next_cell():
    task = "pick_up_red_ball"
    assert task in {t.name for t in DOMAIN.tasks("train")} | {t.name for t in DOMAIN.tasks("rephrase")}
    start = state(agent=(2, 3))
    real = _episode(task, [start, state(agent=(2, 2)), state(agent=(2, 2), carried="ball")], [L.WEST, L.PICKUP])
    assert honest_ok(DOMAIN, real)
    imagined = _episode(task, [start, state(agent=(2, 3), ball=(RED, 2, 3), carried="ball")], [L.PICKUP])
    assert DOMAIN.is_legal_batch(np.asarray(imagined.states, np.float64)).all()  # every state legal ...
    assert not honest_ok(DOMAIN, imagined)  # ... yet the step has no cause
    wrong_action = _episode(task, real.states, [L.WEST, L.TOGGLE])
    assert not honest_ok(DOMAIN, wrong_action)
