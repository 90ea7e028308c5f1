"""Profiles size every stage; a domain card may choose its own sizes for a profile (one place)."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from imaginebench.config import PROFILES, get_profile
from imaginebench.domains.clevr.domain import ClevrDomain
from imaginebench.envs.registry import ENV_SPECS, domain_class
from imaginebench.training.spec import RunSpec


def test_card_sizes_take_the_place_of_the_scaled_paper_sizes(monkeypatch):
    small = get_profile("small")
    scaled = small.episodes(ClevrDomain, "real", "train")
    assert scaled == small.real.of(ClevrDomain.paper_episodes["real"])
    assert RunSpec("CLEVR-v0", "bc", profile="small").steps == small.train_steps
    monkeypatch.setattr(ClevrDomain, "profile_sizes", MappingProxyType(
        {"small": {"real": 1234, "upper_bound": 77, "easy": 55, "train_steps": 4321}}))
    assert small.episodes(ClevrDomain, "real", "train") == 1234
    assert small.episodes(ClevrDomain, "real", "easy") == 77  # the Real upper bound of a novel level
    assert small.episodes(ClevrDomain, "imaginary", "easy") == 55
    assert small.episodes(ClevrDomain, "imaginary", "hard") == small.imaginary.of(ClevrDomain.paper_episodes["hard"])
    assert RunSpec("CLEVR-v0", "bc", profile="small").steps == 4321
    # as many checkpoints as the profile's own runs have (the score is the mean of the last five)
    assert RunSpec("CLEVR-v0", "bc", profile="small").every == 4321 * small.checkpoint_every // small.train_steps
    assert RunSpec("CLEVR-v0", "bc", profile="small", checkpoint_every=7).every == 7
    assert RunSpec("CLEVR-v0", "bc", profile="small", train_steps=10).steps == 10  # --steps still wins
    # another profile is untouched by the small entry
    tiny = get_profile("tiny")
    assert tiny.episodes(ClevrDomain, "real", "train") == tiny.real.floor
    assert RunSpec("CLEVR-v0", "bc", profile="tiny").steps == tiny.train_steps


def test_a_profiles_explicit_size_comes_before_the_card(monkeypatch):
    monkeypatch.setattr(ClevrDomain, "profile_sizes", MappingProxyType({"small": {"real": 1234}}))
    monkeypatch.setitem(PROFILES["small"].real_episodes, "CLEVR-v0", 99)
    assert get_profile("small").episodes(ClevrDomain, "real", "train") == 99


@pytest.mark.parametrize("env_id", sorted(ENV_SPECS))
def test_every_card_size_names_a_known_profile_and_key(env_id):
    sizes = domain_class(env_id).profile_sizes
    for profile, entries in sizes.items():
        assert profile in PROFILES, f"{env_id}: profile_sizes names unknown profile {profile!r}"
        assert set(entries) <= {"real", "upper_bound", "rephrase", "easy", "hard", "train_steps"}, entries
        assert all(int(n) > 0 for n in entries.values())
        prof = get_profile(profile)
        if "real" in entries:
            assert prof.episodes(domain_class(env_id), "real", "train") == entries["real"]
        if "train_steps" in entries:
            assert RunSpec(env_id, "bc", profile=profile).steps == entries["train_steps"]


def test_a_profile_sizes_the_card_it_is_given_and_looks_nothing_up():
    """config is the base layer: it reads the card passed in (any object with the card's fields),
    so a plug-in domain is sized without the registry knowing it."""

    class Card:
        env_id = "Unregistered-v0"
        paper_episodes = MappingProxyType({"real": 1000})
        profile_sizes = MappingProxyType({"small": {"train_steps": 321}})

    small = get_profile("small")
    assert small.episodes(Card, "real", "train") == small.real.of(1000)
    assert small.steps_for(Card) == 321
    assert get_profile("tiny").steps_for(Card) == get_profile("tiny").train_steps
