"""One conformance suite for every registered domain (the domain contract, checked the same way).

Each test runs once per env id in :data:`imaginebench.envs.registry.ENV_IDS`; a domain is
skipped only when its optional extra is not installed.  What a domain must satisfy:

- gymnasium's ``check_env`` passes without warnings (the unbounded-space warnings that
  gymnasium's own MuJoCo envs get are allowed only where the state has no known bounds), and
  the same reset seed and actions give the same episode;
- the expert solves the train tasks from fixed seeds;
- ``outcome_batch`` / ``is_legal_batch`` give exactly the per-row answers on real, cross-task,
  perturbed and non-finite rows;
- ``set_state`` puts the simulator into a state it reads back;
- collected real data goes through storage to ``get_dataset`` unchanged, and shipped reference
  data loads (SHA-256 checked) in an empty data home;
- the simulator re-simulates real transitions within the domain's tolerance, real states are
  legal, and the pure success rule agrees with the simulator's;
- ``render_state`` draws a state; train and rephrase instruction banks are disjoint;
- the pure success module imports no simulator.

The suite also runs on ``Lamps-v0`` (:mod:`tests.conformance.toy_domain`), a sixth domain written
in one folder and added with one public call, ``imaginebench.register_domain``: proof that nothing
outside a domain's folder has to change for a new domain (``tests/test_plugin_domain.py`` takes it
through every stage).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import imaginebench
from imaginebench.data.dataset import EpisodeDataset
from imaginebench.envs import registry
from imaginebench.envs.registry import ENV_IDS, env_spec, load_domain
from tests.expert_episodes import expert_episodes, group
from tests.gl import run_drawing_check

UNBOUNDED_WARNINGS = ("A Box observation space minimum value is -infinity",
                      "A Box observation space maximum value is infinity")
"""The only warnings gymnasium's checker may give: its own MuJoCo envs get them too."""

SIMULATORS = ("mujoco", "minigrid", "metaworld", "libero", "robosuite")

TRAIN_EPISODES = 12
"""Expert episodes per domain, tasks round-robin (a domain with fewer tasks repeats them)."""


TOY = registry.EnvSpec("Lamps-v0", "tests.conformance.toy_domain.env:LampsEnv",
                       "tests.conformance.toy_domain.domain:LampsDomain", "lamps", ())
"""The sixth domain, as the public plug-in call registers it."""


@pytest.fixture(autouse=True)
def toy_registered():
    imaginebench.register_domain(TOY.env_id, env_entry=TOY.env_entry, domain_entry=TOY.domain_entry, extra="lamps")
    yield
    imaginebench.unregister_domain(TOY.env_id)


def installed(env_id: str) -> bool:
    if env_id == TOY.env_id:
        return True
    spec = env_spec(env_id)
    try:
        for dep in spec.requires:
            importlib.import_module(dep)
    except ImportError:
        return False
    return True


def env_ids():
    """Every registered domain, then the toy one; a domain's tests run in one worker (its group)
    so its expert episodes are collected once."""
    return [pytest.param(e, marks=[pytest.mark.skipif(not installed(e), reason=f"extra {env_spec(e).extra!r} "
                                                      "not installed"), group(e)]) for e in ENV_IDS] + \
        [pytest.param(TOY.env_id, marks=group(TOY.env_id))]


def expert_data(env_id: str) -> EpisodeDataset:
    """Real train-level rollouts, one per task round-robin from fixed seeds (built once per worker)."""
    return expert_episodes(env_id, "train", TRAIN_EPISODES, seed=7)


@pytest.mark.parametrize("env_id", env_ids())
def test_gymnasium_checker_and_determinism(env_id):
    env = imaginebench.make(env_id, level="hard", encode_instruction=False)
    sim = env.unwrapped
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(sim, skip_render_check=True)
    messages = [str(w.message) for w in caught]
    bounded = np.all(np.isfinite(env.observation_space.low)) and np.all(np.isfinite(env.observation_space.high))
    allowed = () if bounded else UNBOUNDED_WARNINGS
    assert [m for m in messages if not any(a in m for a in allowed)] == []
    # the same seed and actions give the same episode bit for bit, after another episode ran
    rng = np.random.default_rng(0)
    actions = [env.action_space.sample() for _ in range(5)]
    runs = []
    for _ in range(2):
        obs, _ = sim.reset(seed=11)
        states = [obs]
        for a in actions:
            states.append(sim.step(a)[0])
        runs.append(np.stack(states))
        sim.reset(seed=int(rng.integers(1000)))
        sim.step(env.action_space.sample())
    np.testing.assert_array_equal(runs[0], runs[1])
    env.close()


@pytest.mark.parametrize("env_id", env_ids())
def test_expert_solves_the_train_tasks(env_id):
    data = expert_data(env_id)
    assert len(data) == TRAIN_EPISODES
    # every domain's expert is calibrated at >= 90% on the train level (notes); 12 fixed seeds
    assert data.episode_success().mean() >= 10 / 12, data.episode_success()


def rows_of(domain, data: EpisodeDataset, rng: np.random.Generator):
    """Real transitions, each with its progress record, plus cross-task rows."""
    rows = []
    for ep in data:
        task = domain.task(ep.task)
        states = np.asarray(ep.states, np.float64)
        progress = domain.initial_progress(task, states[0])
        for t in range(len(ep)):
            rows.append((task, states[t], ep.actions[t], states[t + 1], progress))
            progress = domain.outcome(task, states[t], ep.actions[t], states[t + 1], progress).progress
    tasks = [r[0] for r in rows]
    crossed = [(tasks[int(j)],) + r[1:] for r, j in zip(rows, rng.integers(len(rows), size=len(rows)))]
    return rows + crossed


def perturbed(states: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Real states moved a little and a lot, and rows with a NaN or an inf."""
    scale = np.std(states, axis=0) + 1e-3
    small = states + rng.normal(size=states.shape) * 0.05 * scale
    large = states + rng.normal(size=states.shape) * 3.0 * scale
    bad = states[: min(8, len(states))].copy()
    bad[::2, 0] = np.nan
    bad[1::2, -1] = np.inf
    return np.concatenate([states, small, large, bad])


@pytest.mark.parametrize("env_id", env_ids())
def test_batch_functions_equal_the_per_row_functions(env_id):
    domain = load_domain(env_id)
    rng = np.random.default_rng(3)
    rows = rows_of(domain, expert_data(env_id), rng)
    rows = [rows[i] for i in rng.permutation(len(rows))[:600]]
    tasks = [r[0] for r in rows]
    states, next_states = np.stack([r[1] for r in rows]), np.stack([r[3] for r in rows])
    actions = np.asarray([r[2] for r in rows])
    progress = [r[4] for r in rows]
    batch = domain.outcome_batch(tasks, states, actions, next_states, progress)
    for i, (task, s, a, s2, p) in enumerate(rows):
        one = domain.outcome(task, s, a, s2, p)
        assert bool(batch.success[i]) == bool(one.success), (task.name, i)
        assert batch.reward[i] == pytest.approx(one.reward, rel=1e-9, abs=1e-9), (task.name, i)
        np.testing.assert_allclose(batch.progress[i], one.progress, rtol=1e-9, atol=1e-12)
    assert batch.success.any()  # the real episodes' last steps succeed
    probe = perturbed(next_states, rng)
    legal = domain.is_legal_batch(probe)
    assert legal.dtype == bool and legal.shape == (len(probe),)
    assert legal.tolist() == [bool(domain.is_legal(s)) for s in probe]
    assert legal.tolist() == [not domain.legality_errors(s) for s in probe]  # is_legal follows from the errors
    assert legal[: len(next_states)].all()  # real states are legal
    assert not legal[-min(8, len(next_states)):].any()  # non-finite states are not


@pytest.mark.parametrize("env_id", env_ids())
def test_set_state_reads_back_the_state(env_id):
    env = imaginebench.make(env_id, level="train", encode_instruction=False)
    sim = env.unwrapped
    for seed in range(3):
        sim.reset(seed=seed)
        for _ in range(4 + 3 * seed):
            *_, terminated, truncated, _ = sim.step(sim.expert_action())
            if terminated or truncated:
                break
        state = sim.state.copy()
        sim.reset(seed=seed + 100, options={"task": sim.task.name})
        sim.set_state(state)
        np.testing.assert_allclose(sim.state, state, rtol=0, atol=1e-6)
    env.close()


@pytest.mark.parametrize("env_id", env_ids())
def test_collected_data_reaches_get_dataset_unchanged(env_id, data_home):
    from imaginebench.data.hub import dataset_path
    from imaginebench.data.storage import save_dataset

    data = expert_data(env_id)
    save_dataset(data, dataset_path(env_id, "real", "train", "tiny"))
    real, imaginary = imaginebench.get_dataset(env_id, "train", profile="tiny", progress=False)
    assert imaginary is None
    for name in EpisodeDataset.ARRAYS:
        np.testing.assert_array_equal(getattr(real, name), getattr(data, name))
    assert list(real.tasks) == list(data.tasks) and list(real.instructions) == list(data.instructions)


@pytest.mark.parametrize("env_id", env_ids())
def test_shipped_reference_data_loads_in_an_empty_home(env_id, data_home):
    from imaginebench.data.hub import load_imaginary, reference_available

    levels = [lv for lv in ("rephrase", "easy", "hard") if reference_available(env_id, lv, "small")]
    if not levels:
        pytest.skip(f"no reference imaginary data shipped for {env_id}")
    domain = load_domain(env_id)
    for level in levels:
        ds = load_imaginary(env_id, level, "small")
        assert ds is not None and ds.metadata.get("reference") is True
        assert len(ds) > 0 and set(ds.tasks) <= {t.name for t in domain.tasks(level)}
    assert not data_home.exists() or not any(data_home.rglob("*.npz"))  # nothing copied into the home


@pytest.mark.parametrize("env_id", env_ids())
def test_real_transitions_resimulate_within_tolerance(env_id):
    from imaginebench.imagination.quality import check_rollouts

    data = expert_data(env_id)
    checks = check_rollouts(env_id, "train", data)
    report = checks.report
    assert report.transition_correctness == 1.0, report.mean_transition_error
    assert report.legality == 1.0
    # the pure success rule on the stored states says what the simulator said
    np.testing.assert_array_equal(checks.success, data.episode_success())
    np.testing.assert_array_equal(checks.replayed, data.episode_success())


@pytest.mark.parametrize("env_id", env_ids())
def test_render_state_draws_a_state(env_id):
    spec = env_spec(env_id)
    run_drawing_check(textwrap.dedent(f"""
        import numpy as np, imaginebench
        from imaginebench.envs import registry
        registry.ENV_SPECS.setdefault({env_id!r}, registry.EnvSpec(*{(spec.env_id, spec.env_entry, spec.domain_entry,
                                                                     spec.extra, spec.requires)!r}))
        env = imaginebench.make({env_id!r}, level="train", encode_instruction=False).unwrapped
        env.reset(seed=0)
        try:
            image = env.render_state(env.state)
        except RuntimeError as exc:  # no OpenGL context for MuJoCo here
            print("NO-GL", exc); raise SystemExit(0)
        assert image.ndim == 3 and image.shape[2] == 3 and image.dtype == np.uint8, image.shape
        assert image.std() > 1.0, "a blank picture"
        env.close()
        print("OK")
    """))


@pytest.mark.parametrize("env_id", env_ids())
def test_train_and_rephrase_banks_are_disjoint(env_id):
    domain = load_domain(env_id)
    train, rephrase = set(domain.instruction_bank("train")), set(domain.instruction_bank("rephrase"))
    assert train and rephrase
    assert not train & rephrase, sorted(train & rephrase)[:5]
    for level in ("easy", "hard"):
        assert not set(domain.instruction_bank(level)) & train, level


@pytest.mark.parametrize("env_id", env_ids())
def test_pure_functions_import_no_simulator(env_id):
    package = env_spec(env_id).domain_entry.split(":")[0].rsplit(".", 1)[0]
    script = textwrap.dedent(f"""
        import importlib, importlib.abc, sys
        class Blocker(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name.split(".")[0] in {SIMULATORS!r}:
                    raise ImportError("simulator import: " + name)
        sys.meta_path.insert(0, Blocker())
        import importlib.util
        for module in ("success", "domain", "tasks", "instructions"):
            if importlib.util.find_spec({package!r} + "." + module) is not None:
                importlib.import_module({package!r} + "." + module)
        module, name = {env_spec(env_id).domain_entry!r}.split(":")
        domain = getattr(importlib.import_module(module), name)()
        assert domain.tasks("hard")
        print("OK")
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-1500:]
