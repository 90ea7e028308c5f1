"""Best-of-N imagination: budgets, quotas, and the honest filter's independence from the simulator."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("mujoco")

from imaginebench.domains.env_base import InstructionEnv  # noqa: E402
from imaginebench.envs.registry import load_domain  # noqa: E402
from imaginebench.imagination import best_of_n as bon  # noqa: E402
from imaginebench.imagination.best_of_n import best_of_n, task_quotas  # noqa: E402
from imaginebench.imagination.decoding import GenerateConfig, StartSampler  # noqa: E402
from imaginebench.imagination.filters import honest_ok  # noqa: E402

from .conftest import make_model  # noqa: E402

ENV = "CLEVR-v0"


def _run(monkeypatch, verdict, quotas_n=4, budget=3.0, level="hard"):
    monkeypatch.setattr(bon, "honest_ok", lambda domain, ep: verdict(ep))
    domain = load_domain(ENV)
    sampler = StartSampler(ENV, level, seed=5)
    try:
        quotas = task_quotas(sampler.task_names[:2], quotas_n)
        cfg = GenerateConfig(batch_size=8, budget=budget, max_steps=None)
        horizons = {t: 3 for t in quotas}
        return quotas, best_of_n(make_model(), domain, sampler, quotas, cfg, horizons, progress=False)
    finally:
        sampler.close()


def test_best_of_n_stops_at_its_budget(monkeypatch):
    quotas, out = _run(monkeypatch, lambda ep: False, budget=3.0)
    for task, q in quotas.items():
        assert out.per_task[task]["candidates"] == math.ceil(3.0 * q)
        assert out.per_task[task]["kept"] == 0
    assert out.kept == [] and len(out.candidates) == out.generated == sum(math.ceil(3.0 * q) for q in quotas.values())
    # The unfiltered data is each task's first `quota` candidates.
    assert len(out.unfiltered) == sum(quotas.values())


def test_best_of_n_stops_at_the_quota(monkeypatch):
    quotas, out = _run(monkeypatch, lambda ep: True, budget=10.0)
    for task, q in quotas.items():
        assert out.per_task[task]["kept"] == q
        assert out.per_task[task]["candidates"] <= 2 * q  # first round asks for need / 0.5
    assert len(out.kept) == sum(quotas.values())


def test_best_of_n_keeps_only_passing_rollouts(monkeypatch):
    seen = {"n": 0}

    def every_third(ep):
        seen["n"] += 1
        return seen["n"] % 3 == 0

    quotas, out = _run(monkeypatch, every_third, budget=20.0)
    assert len(out.kept) == sum(quotas.values())
    assert all(v["candidates"] > v["kept"] for v in out.per_task.values())


def test_honest_filter_never_calls_the_simulator(monkeypatch, data_home):
    """Generation with the default filter reads the simulator only for initial states (resets)."""
    def boom(*args, **kwargs):
        raise AssertionError("the honest filter called the simulator")

    from imaginebench.domains.clevr.env import ClevrEnv

    monkeypatch.setattr(ClevrEnv, "_simulate", boom)
    monkeypatch.setattr(ClevrEnv, "set_state", boom)
    monkeypatch.setattr(InstructionEnv, "step", boom)
    domain = load_domain(ENV)
    sampler = StartSampler(ENV, "easy", seed=2)
    try:
        quotas = task_quotas(sampler.task_names[:3], 3)
        out = best_of_n(make_model(), domain, sampler, quotas, GenerateConfig(batch_size=8, budget=2.0),
                        {t: 4 for t in quotas}, progress=False)
    finally:
        sampler.close()
    assert out.generated >= 3


def test_honest_ok_uses_the_domains_pure_functions(data_home):
    import imaginebench
    from imaginebench.data.collect import rollout

    env = imaginebench.make(ENV, level="train", encode_instruction=False)
    domain = env.unwrapped.domain
    ep = rollout(env, env.unwrapped.tasks[0], seed=3)
    assert ep.successes[-1] and honest_ok(domain, ep)
    # Stop one step short of the goal: not kept.
    from dataclasses import replace

    short = replace(ep, states=ep.states[:-1], actions=ep.actions[:-1], rewards=ep.rewards[:-1],
                    terminals=ep.terminals[:-1], truncations=ep.truncations[:-1], successes=ep.successes[:-1])
    if len(short):
        assert not honest_ok(domain, short)
    # An illegal imagined state (two balls on one spot): not kept.
    bad = ep.states.copy()
    bad[1, :2] = bad[1, 2:4]
    assert not honest_ok(domain, replace(ep, states=bad))
    # Non-finite states: not kept.
    nan = ep.states.copy()
    nan[-1, 0] = np.nan
    assert not honest_ok(domain, replace(ep, states=nan))
    env.close()


class _Killed(Exception):
    pass


def test_a_level_killed_mid_way_resumes_to_the_same_dataset(tmp_path, monkeypatch):
    """Rounds are saved as they finish; a run killed after its second round continues from the
    saved rounds (sampler position, sampling generator) and ends with the uninterrupted result."""
    seen = {"n": 0}

    def every_third(ep):
        seen["n"] += 1
        return seen["n"] % 3 == 0

    domain = load_domain(ENV)
    model = make_model()
    cfg = GenerateConfig(batch_size=8, budget=20.0, temperature=1.0)

    def run(store, kill_after=None):
        seen["n"] = 0
        monkeypatch.setattr(bon, "honest_ok", lambda d, ep: every_third(ep))
        sampler = StartSampler(ENV, "hard", seed=5)
        try:
            quotas = task_quotas(sampler.task_names[:2], 4)
            if kill_after is not None:
                original = store.append

                def append(*a, **k):
                    original(*a, **k)
                    if len(store.rounds) == kill_after:
                        raise _Killed
                monkeypatch.setattr(store, "append", append)
            return best_of_n(model, domain, sampler, quotas, cfg, {t: 3 for t in quotas}, progress=False,
                             store=store)
        finally:
            sampler.close()

    settings = {"level": "hard", "seed": 5}
    whole = run(bon.RoundStore(tmp_path / "whole.partial", settings))
    assert len(json_rounds(tmp_path / "whole.partial")) >= 2  # so a kill after round 1 is mid-way
    store = bon.RoundStore(tmp_path / "x.partial", settings)
    with pytest.raises(_Killed):
        run(store, kill_after=1)
    assert (tmp_path / "x.partial" / "state.json").exists()
    # the keep test is stateful here (every third call): a resumed run replays the saved flags and
    # goes on counting from where the killed one stopped
    resumed_store = bon.RoundStore(tmp_path / "x.partial", settings)
    calls_before = sum(r["candidates"] for r in json_rounds(tmp_path / "x.partial"))
    seen["n"] = calls_before
    monkeypatch.setattr(bon, "honest_ok", lambda d, ep: every_third(ep))
    sampler = StartSampler(ENV, "hard", seed=5)
    try:
        quotas = task_quotas(sampler.task_names[:2], 4)
        resumed = best_of_n(model, domain, sampler, quotas, cfg, {t: 3 for t in quotas}, progress=False,
                            store=resumed_store)
    finally:
        sampler.close()
    assert resumed.per_task == whole.per_task
    assert (whole.resumed_rounds, resumed.resumed_rounds) == (0, 1)  # what the CLI tells the user
    assert len(resumed.candidates) == len(whole.candidates)
    for a, b in zip(resumed.kept + resumed.candidates, whole.kept + whole.candidates):
        assert a.task == b.task and a.instruction == b.instruction
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_allclose(a.states, b.states, atol=1e-6)
    with pytest.raises(Exception, match="other settings"):
        bon.RoundStore(tmp_path / "x.partial", {"level": "easy", "seed": 5}).load()


def json_rounds(folder):
    import json

    return json.loads((folder / "state.json").read_text())["rounds"]


def test_ground_keeps_what_it_returns_and_drops_none(monkeypatch):
    """Keep mode ``grounded``: an honest-kept candidate is stored as the grounding function returns
    it (e.g. relabelled actions) and dropped when it returns ``None``."""
    from dataclasses import replace

    monkeypatch.setattr(bon, "honest_ok", lambda domain, ep: True)
    calls = {"n": 0}

    def ground(ep):
        calls["n"] += 1
        return None if calls["n"] % 2 else replace(ep, instruction="grounded: " + ep.instruction)

    domain = load_domain(ENV)
    sampler = StartSampler(ENV, "hard", seed=5)
    try:
        quotas = task_quotas(sampler.task_names[:2], 4)
        out = best_of_n(make_model(), domain, sampler, quotas, GenerateConfig(batch_size=8, budget=4.0),
                        {t: 3 for t in quotas}, progress=False, ground=ground)
    finally:
        sampler.close()
    assert out.kept and all(ep.instruction.startswith("grounded: ") for ep in out.kept)
    assert not any(ep.instruction.startswith("grounded: ") for ep in out.unfiltered)
    assert sum(v["passed"] for v in out.per_task.values()) == calls["n"] // 2
