"""Property tests (hypothesis) of the on-disk dataset format (``data/storage.py``).

Random datasets (any number of episodes, lengths including 0, discrete or continuous actions,
several dtypes, C- or Fortran-ordered arrays, unicode task and instruction texts, nested JSON
metadata) must:

* come back from ``save_dataset`` -> ``load_dataset`` bit for bit (arrays, dtypes, shapes, string
  tables, metadata with its JSON types and key order);
* give byte-identical files when saved twice, or saved again after loading;
* pass the load-time content checks (``check_contents``), also when every episode has length 0,
  unless they hold no episode at all;
* be refused, once a NaN or an infinity is written into states, rewards or continuous actions,
  with a one-line ``DatasetError`` that names the file, the check and the first bad episode —
  while ``verify=False`` still returns exactly what was stored.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from imaginebench.data import DatasetError, Episode, EpisodeDataset, load_dataset, save_dataset
from imaginebench.data.storage import check_contents
from imaginebench.domains.base import LEVELS

PROPERTY = settings(database=None, deadline=None, max_examples=60,
                    suppress_health_check=[HealthCheck.too_slow])
"""No example database in the repository, no per-example deadline."""

CHECKED_KEYS = ("domain", "level", "source", "state_dim", "action_dim", "discrete_actions")
"""Metadata keys the content checks read; random extra metadata uses other keys."""

JSON_SCALARS = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)
EXTRA_METADATA = st.fixed_dictionaries({}, optional={
    "seed": st.integers(0, 2**63), "temperature": st.floats(allow_nan=False, allow_infinity=False),
    "generator": st.text(max_size=12), "profile": st.sampled_from(["tiny", "small", "paper"]),
}).flatmap(lambda fixed: st.dictionaries(st.text(max_size=10).filter(lambda k: k not in CHECKED_KEYS),
                                         JSON_VALUES, max_size=3).map(lambda extra: {**fixed, **extra}))
"""Typed scalars a real file carries (a float among them), then arbitrary nested JSON."""


@dataclasses.dataclass(frozen=True)
class Shape:
    """What a random dataset looks like: widths, action kind and dtypes."""

    state_dim: int
    discrete: bool
    action_dim: int
    state_dtype: str
    action_dtype: str
    reward_dtype: str


SHAPES = st.builds(
    lambda state_dim, discrete, action_dim, state_dtype, int_dtype, float_dtype, reward_dtype: Shape(
        state_dim, discrete, action_dim, state_dtype, int_dtype if discrete else float_dtype, reward_dtype),
    state_dim=st.integers(1, 5), discrete=st.booleans(), action_dim=st.integers(1, 6),
    state_dtype=st.sampled_from(["float32", "float64"]), int_dtype=st.sampled_from(["int64", "int32"]),
    float_dtype=st.sampled_from(["float32", "float64"]), reward_dtype=st.sampled_from(["float32", "float64"]),
)


def finite(dtype: str, low: float | None = None, high: float | None = None) -> st.SearchStrategy[float]:
    width = 32 if dtype == "float32" else 64
    return st.floats(low, high, allow_nan=False, allow_infinity=False, width=width)


@st.composite
def episodes(draw: st.DrawFn, shape: Shape, texts: list[str]) -> Episode:
    """One valid episode: finite values, actions in range, a flag only on the last step (never both)."""
    t = draw(st.integers(0, 6))
    states = np.array(draw(st.lists(st.lists(finite(shape.state_dtype), min_size=shape.state_dim,
                                             max_size=shape.state_dim), min_size=t + 1, max_size=t + 1)),
                      dtype=shape.state_dtype).reshape(t + 1, shape.state_dim)
    if shape.discrete:
        actions = np.array(draw(st.lists(st.integers(0, shape.action_dim - 1), min_size=t, max_size=t)),
                           dtype=shape.action_dtype)
    else:
        actions = np.array(draw(st.lists(st.lists(finite(shape.action_dtype, -1.0, 1.0), min_size=shape.action_dim,
                                                  max_size=shape.action_dim), min_size=t, max_size=t)),
                           dtype=shape.action_dtype).reshape(t, shape.action_dim)
    rewards = np.array(draw(st.lists(finite(shape.reward_dtype), min_size=t, max_size=t)), dtype=shape.reward_dtype)
    ending = draw(st.sampled_from(["terminal", "truncation", "open"]))
    terminals, truncations = np.zeros(t, bool), np.zeros(t, bool)
    if t and ending == "terminal":
        terminals[-1] = True
    elif t and ending == "truncation":
        truncations[-1] = True
    successes = np.array(draw(st.lists(st.booleans(), min_size=t, max_size=t)), dtype=bool)
    return Episode(task=draw(st.sampled_from(texts)), instruction=draw(st.sampled_from(texts)), states=states,
                   actions=actions, rewards=rewards, terminals=terminals, truncations=truncations,
                   successes=successes)


@st.composite
def datasets(draw: st.DrawFn, min_episodes: int = 1) -> EpisodeDataset:
    """A valid random dataset (at least one episode: empty ones are refused) whose metadata
    (sometimes) states its widths and action kind."""
    shape = draw(SHAPES)
    texts = draw(st.lists(st.text(max_size=20), min_size=1, max_size=4))
    eps = draw(st.lists(episodes(shape, texts), min_size=min_episodes, max_size=6))
    metadata: dict[str, Any] = {
        "domain": draw(st.sampled_from(["CLEVR-v0", "BabyAI-v0", "Test-v0"])),
        "level": draw(st.sampled_from(LEVELS)),
        "source": draw(st.sampled_from(["real", "imaginary"])),
    }
    if draw(st.booleans()):
        metadata.update(state_dim=shape.state_dim, action_dim=shape.action_dim, discrete_actions=shape.discrete)
    metadata.update(draw(EXTRA_METADATA))
    with np.errstate(over="ignore"):  # from_episodes packs to float32; the drawn arrays go back below
        ds = EpisodeDataset.from_episodes(eps, metadata=metadata)
    states = np.concatenate([ep.states for ep in eps])
    if draw(st.booleans()):
        states = np.asfortranarray(states)
    return dataclasses.replace(ds, states=states, actions=np.concatenate([ep.actions for ep in eps]),
                               rewards=np.concatenate([ep.rewards for ep in eps]))


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON documents, types and key order included (``1 == 1.0 == True`` in Python)."""
    return json.dumps(a) == json.dumps(b)


def assert_identical(back: EpisodeDataset, ds: EpisodeDataset) -> None:
    for name in EpisodeDataset.ARRAYS:
        stored, loaded = getattr(ds, name), getattr(back, name)
        assert loaded.dtype == stored.dtype and loaded.shape == stored.shape, name
        assert np.ascontiguousarray(loaded).tobytes() == np.ascontiguousarray(stored).tobytes(), name
    assert back.tasks == ds.tasks and back.instructions == ds.instructions
    assert same_json(dict(back.metadata), dict(ds.metadata))


ONE_EMPTY_EPISODE = EpisodeDataset.from_episodes(
    [Episode(task="t", instruction="i", states=np.zeros((1, 1), np.float32), actions=np.zeros(0, np.int64),
             rewards=np.zeros(0, np.float32), terminals=np.zeros(0, bool), truncations=np.zeros(0, bool),
             successes=np.zeros(0, bool))],
    metadata={"domain": "Test-v0", "level": "train", "source": "real"})
"""One episode of length 0 (a start state, no step): the smallest dataset hypothesis found that made
the load-time checks crash with numpy's bare "cannot reshape array of size 0" (fixed since)."""


@PROPERTY
@example(ds=ONE_EMPTY_EPISODE)
@given(ds=datasets())
def test_save_then_load_gives_back_the_same_dataset(ds):
    """Every array bit for bit with its dtype and shape, the string tables, the metadata as JSON,
    and so each episode's task and instruction."""
    with tempfile.TemporaryDirectory() as folder:
        back = load_dataset(save_dataset(ds, Path(folder) / "data.npz"))
    assert_identical(back, ds)
    assert [ep.instruction for ep in back] == [ep.instruction for ep in ds]
    assert back.episode_tasks() == ds.episode_tasks()


@PROPERTY
@given(ds=datasets())
def test_saving_is_deterministic_and_idempotent(ds):
    """Two saves of one dataset are the same bytes, and so is saving what was loaded back."""
    with tempfile.TemporaryDirectory() as folder:
        first = save_dataset(ds, Path(folder) / "first.npz").read_bytes()
        second = save_dataset(ds, Path(folder) / "second.npz").read_bytes()
        again = save_dataset(load_dataset(Path(folder) / "first.npz"), Path(folder) / "again.npz").read_bytes()
        replaced = save_dataset(ds, Path(folder) / "first.npz", overwrite=True).read_bytes()
    assert first == second == again == replaced


@PROPERTY
@example(ds=ONE_EMPTY_EPISODE)
@given(ds=datasets())
def test_every_valid_dataset_passes_the_content_checks(ds):
    """Also datasets whose episodes all have length 0 (allowed by ``Episode``)."""
    check_contents(ds, "in-memory.npz")
    with tempfile.TemporaryDirectory() as folder:
        load_dataset(save_dataset(ds, Path(folder) / "data.npz"))  # verify=True: checksums and contents


def episode_of_state_row(lengths: np.ndarray, row: int) -> int:
    """The episode owning row ``row`` of the concatenated states (episode ``i`` has ``T_i + 1``)."""
    end = 0
    for i, t in enumerate(lengths.tolist()):
        end += t + 1
        if row < end:
            return i
    raise AssertionError(f"state row {row} beyond the dataset")


def episode_of_step(lengths: np.ndarray, step: int) -> int:
    """The episode owning flat transition ``step`` (episode ``i`` has ``T_i``)."""
    end = 0
    for i, t in enumerate(lengths.tolist()):
        end += t
        if step < end:
            return i
    raise AssertionError(f"step {step} beyond the dataset")


CHECK_MESSAGES = {
    "states": "a state holds NaN or inf",
    "rewards": "a reward is NaN or inf",
    "actions": "an action holds NaN or inf",
}


@settings(PROPERTY, max_examples=100)
@given(ds=st.one_of(datasets(min_episodes=3), datasets()), column=st.sampled_from(sorted(CHECK_MESSAGES)),
       data=st.data(), bad=st.sampled_from([np.nan, np.inf, -np.inf]))
def test_a_non_finite_value_is_refused_naming_the_file_and_the_first_bad_episode(ds, column, data, bad):
    """Writing NaN/inf at random places of one column gives one line: the file, the check, the first
    episode holding a bad value and the command that rebuilds the file."""
    array = getattr(ds, column).copy()
    assume(array.size and np.issubdtype(array.dtype, np.floating))
    rows = data.draw(st.lists(st.integers(0, len(array) - 1), min_size=1, max_size=3), label="rows")
    for row in rows:
        index = (row,) if array.ndim == 1 else (row, data.draw(st.integers(0, array.shape[1] - 1), label="column"))
        array[index] = bad
    damaged = dataclasses.replace(ds, **{column: array})
    locate = episode_of_state_row if column == "states" else episode_of_step
    first_bad = min(locate(ds.lengths, row) for row in rows)
    with tempfile.TemporaryDirectory() as folder:
        path = save_dataset(damaged, Path(folder) / "real-train.npz")
        try:
            load_dataset(path)
        except DatasetError as error:
            message = str(error)
        else:
            raise AssertionError(f"a {bad} in {column} was accepted")
        unchecked = load_dataset(path, verify=False)
    assert "\n" not in message and str(path) in message and CHECK_MESSAGES[column] in message
    assert f"(first at episode {first_bad})" in message
    profile = f" --profile {ds.metadata['profile']}" if ds.metadata.get("profile") else ""
    assert f"--env {ds.metadata['domain']} --level {ds.metadata['level']}{profile} --overwrite" in message
    assert_identical(unchecked, damaged)  # the file holds exactly what was written; only the check refuses


@PROPERTY
@given(shape=SHAPES, metadata=EXTRA_METADATA, level=st.sampled_from(LEVELS))
def test_a_dataset_without_episodes_is_refused_in_one_line(shape, metadata, level):
    """Nothing to train on: loading names the file and the rebuild command; the file itself is intact."""
    empty = EpisodeDataset.from_episodes([], metadata={"domain": "Test-v0", "level": level, "source": "real",
                                                       **metadata},
                                         state_dim=shape.state_dim,
                                         action_shape=() if shape.discrete else (shape.action_dim,))
    with tempfile.TemporaryDirectory() as folder:
        path = save_dataset(empty, Path(folder) / "empty.npz")
        try:
            load_dataset(path)
        except DatasetError as error:
            message = str(error)
        else:
            raise AssertionError("an empty dataset was accepted")
        unchecked = load_dataset(path, verify=False)
    assert "\n" not in message and str(path) in message and "holds no episodes" in message
    profile = f" --profile {metadata['profile']}" if metadata.get("profile") else ""
    assert f"imaginebench data collect --env Test-v0 --level {level}{profile} --overwrite" in message
    assert_identical(unchecked, empty)

