"""The env's own checks: a NaN, wrongly typed or wrongly shaped action or reset option is a
one-line ``ValueError`` from the env, never a traceback from deep inside the simulator."""

from __future__ import annotations

import numpy as np
import pytest

import imaginebench

BAD_DISCRETE = [float("nan"), 1.5, "3", None, [1, 2], {"a": 1}, True, np.array([np.inf]), object(), [[1], [2, 3]]]
BAD_CONTINUOUS = [[float("nan")] * 6, "forward", None, {"a": 1}, np.zeros(5), np.zeros((2, 6)), [object()] * 6,
                  [[1], [2, 3]]]


def _one_line_value_error(call) -> str:
    with pytest.raises(ValueError) as info:
        call()
    message = str(info.value)
    assert message and "\n" not in message.strip(), message
    return message


@pytest.mark.parametrize("action", BAD_DISCRETE, ids=[repr(a)[:20] for a in BAD_DISCRETE])
def test_discrete_bad_actions(action):
    env = imaginebench.make("CLEVR-v0", level="train", encode_instruction=False)
    env.reset(seed=0)
    state = env.unwrapped.state.copy()
    _one_line_value_error(lambda: env.step(action))
    assert np.array_equal(env.unwrapped.state, state)  # nothing moved
    env.step(0)  # and the env still works
    env.close()


@pytest.mark.parametrize("action", BAD_CONTINUOUS, ids=[repr(a)[:20] for a in BAD_CONTINUOUS])
def test_continuous_bad_actions(action):
    pytest.importorskip("mujoco")
    env = imaginebench.make("HalfCheetah-v0", level="train", encode_instruction=False)
    env.reset(seed=0)
    _one_line_value_error(lambda: env.step(action))
    env.step(np.zeros(6))
    env.close()


@pytest.mark.parametrize("options, needle", [
    (["task"], "must be a dict"),
    ({"task": 3}, "'task' must be a string"),
    ({"instruction": 3}, "'instruction' must be a string"),
    ({"state": "abc"}, "'state' must be"),
    ({"state": [0.0, 1.0]}, "must have shape"),
    ({"colour": "red"}, "Unknown reset option"),
])
def test_bad_reset_options(options, needle):
    env = imaginebench.make("CLEVR-v0", level="train", encode_instruction=False)
    assert needle in _one_line_value_error(lambda: env.reset(seed=0, options=options))
    env.close()


def test_nan_start_state_and_bad_seed():
    env = imaginebench.make("CLEVR-v0", level="train", encode_instruction=False)
    env.reset(seed=0)
    state = env.unwrapped.state.copy()
    state[0] = np.nan
    assert "NaN" in _one_line_value_error(lambda: env.reset(seed=0, options={"state": state}))
    for seed in (-1, 1.5, "0"):
        assert "seed" in _one_line_value_error(lambda: env.reset(seed=seed))
    env.close()
