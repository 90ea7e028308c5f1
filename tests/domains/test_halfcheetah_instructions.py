"""HalfCheetah-v0 instruction banks: sizes, disjointness, direction/gait/speed/place wording, API."""

from __future__ import annotations

import re

import pytest

from imaginebench.domains.halfcheetah import instructions as I

TRAIN = ("run_forward", "run_backward", "jump_forward", "jump_backward")
EASY = ("run_forward_faster", "run_backward_faster")
HARD = ("run_forward_then_backward", "run_backward_then_forward", "jump_in_place")
ALL = TRAIN + EASY + HARD

FORWARD = re.compile(r"\b(forwards?|ahead|onwards?|frontwards?)\b")
BACKWARD = re.compile(r"\b(backwards?|back|backing|reverse|reversing|rearwards?|behind)\b")
PLACE = re.compile(r"\b(in place|on the spot|on the same spot|in one spot|in one place|without moving|"
                   r"without travell?ing|without going anywhere|stay put|staying put|stationary)\b")
JUMP = re.compile(r"\b(jump\w*|leap\w*|hop|hops|hopping|hopped|bound|bounds|bounding|bounded|spring|springs|springing|"
                  r"springy|bounc\w*|pronk\w*)\b")
RUN = re.compile(r"\b(run|runs|running|ran|sprint\w*|dash\w*|jog\w*|gallop\w*|trot\w*|race|races|racing)\b")
SPEED = re.compile(r"\b(faster|fast|quick|quicker|quickly|sprint\w*|top speed|full speed|speed|hurry|rapidly|"
                   r"flat out|full tilt|dash\w*|race|races|racing|swiftly)\b")

FORWARD_TASKS = ("run_forward", "jump_forward", "run_forward_faster")
BACKWARD_TASKS = ("run_backward", "jump_backward", "run_backward_faster")
THEN_TASKS = {"run_forward_then_backward": (FORWARD, BACKWARD), "run_backward_then_forward": (BACKWARD, FORWARD)}
JUMP_TASKS = ("jump_forward", "jump_backward", "jump_in_place")
RUN_TASKS = ("run_forward", "run_backward", "run_forward_faster", "run_backward_faster",
             "run_forward_then_backward", "run_backward_then_forward")
FASTER_TASKS = ("run_forward_faster", "run_backward_faster")


def every_bank() -> list[tuple[str, str, tuple[str, ...]]]:
    """(task, bank kind, phrasings) for every bank of every task."""
    out = [(task, "train", I.train_bank(task)) for task in ALL]
    out += [(task, "rephrase", I.rephrase_bank(task)) for task in TRAIN]
    return out


def every_phrasing() -> list[tuple[str, str]]:
    return [(task, s) for task, _, bank in every_bank() for s in bank]


# ---------------------------------------------------------------- API
def test_task_lists_and_lexicon():
    assert I.TRAIN_TASKS == TRAIN and I.EASY_TASKS == EASY and I.HARD_TASKS == HARD
    assert set(I.LEXICON) == set(ALL)
    for task in TRAIN:
        assert set(I.LEXICON[task]) == {"acts", "rephrase_acts", "result", "state"}
    for task in EASY + HARD:
        assert set(I.LEXICON[task]) == {"acts"}
    with pytest.raises(TypeError):
        I.LEXICON["run_forward"] = {"acts": ("x",)}  # type: ignore[index]
    with pytest.raises(TypeError):
        I.LEXICON["run_forward"]["acts"] = ("x",)  # type: ignore[index]


def test_bank_functions():
    for task in ALL:
        assert I.bank(task) == I.train_bank(task)
        assert isinstance(I.train_bank(task), tuple)
        assert all(isinstance(s, str) for s in I.train_bank(task))
    for task in TRAIN:
        assert isinstance(I.rephrase_bank(task), tuple)
    for task in EASY + HARD:
        with pytest.raises(ValueError, match="run_forward, run_backward, jump_forward, jump_backward"):
            I.rephrase_bank(task)


@pytest.mark.parametrize("fn", [I.train_bank, I.rephrase_bank, I.bank])
def test_unknown_task(fn):
    with pytest.raises(ValueError, match="run_forwrd") as err:
        fn("run_forwrd")
    assert "Did you mean 'run_forward'" in str(err.value)
    if fn is not I.rephrase_bank:
        for task in ALL:
            assert task in str(err.value)


# ---------------------------------------------------------------- sizes and disjointness
def test_bank_sizes():
    for task in TRAIN:
        assert len(I.train_bank(task)) >= 20 and len(I.rephrase_bank(task)) >= 20
        assert len(I.train_bank(task)) == len(I.LEXICON[task]["acts"]) * len(I.TRAIN_FRAMES)
    for task in EASY + HARD:
        assert len(I.train_bank(task)) >= 20


def test_no_duplicates_within_a_bank():
    for task, kind, bank in every_bank():
        assert len(set(bank)) == len(bank), (task, kind)


def test_banks_disjoint():
    train = {s for task in TRAIN for s in I.train_bank(task)}
    rephrase = {s for task in TRAIN for s in I.rephrase_bank(task)}
    novel = {s for task in EASY + HARD for s in I.train_bank(task)}
    assert not train & rephrase
    assert not train & novel
    assert not rephrase & novel
    # no phrasing is shared by two tasks
    assert len(train | rephrase | novel) == sum(len(bank) for _, _, bank in every_bank())
    for task in TRAIN:
        acts = {a for t in ALL for a in I.LEXICON[t]["acts"]}
        assert not acts & set(I.LEXICON[task]["rephrase_acts"])


def test_natural_short_lower_case():
    for task, s in every_phrasing():
        assert 2 <= len(s.split()) <= 15, (task, s)
        assert re.sub(r"\bI\b", "i", s) == s.lower(), (task, s)
        assert "{" not in s and "}" not in s and "  " not in s and s == s.strip(), (task, s)


# ---------------------------------------------------------------- wording
def test_frames_are_neutral():
    for frame in I.TRAIN_FRAMES + I.REPHRASE_FRAMES:
        for pattern in (FORWARD, BACKWARD, PLACE, JUMP, RUN, SPEED):
            assert not pattern.search(frame), (frame, pattern.pattern)


def test_direction_words_never_swapped():
    for task, s in every_phrasing():
        if task in FORWARD_TASKS:
            assert FORWARD.search(s) and not BACKWARD.search(s), (task, s)
        elif task in BACKWARD_TASKS:
            assert BACKWARD.search(s) and not FORWARD.search(s), (task, s)
        elif task in THEN_TASKS:
            first, second = THEN_TASKS[task]
            firsts = [m.start() for m in first.finditer(s)]
            seconds = [m.start() for m in second.finditer(s)]
            assert firsts and seconds and max(firsts) < min(seconds), (task, s)
        else:
            assert task == "jump_in_place"
            assert not FORWARD.search(s) and not BACKWARD.search(s), (task, s)
            assert PLACE.search(s), (task, s)
        if task != "jump_in_place":
            assert not PLACE.search(s), (task, s)


def test_whole_word_matching():
    assert BACKWARD.search("hop backwards") and BACKWARD.search("run in reverse")
    assert not BACKWARD.search("give me feedback") and not FORWARD.search("the aheadline")
    assert JUMP.search("keep leaping") and not JUMP.search("the hopper is fine")
    assert RUN.search("keep running") and not RUN.search("alright runner")


def test_gait_and_speed_words():
    for task, s in every_phrasing():
        if task in JUMP_TASKS:
            assert JUMP.search(s), (task, s)
        if task in RUN_TASKS:
            assert RUN.search(s) and not JUMP.search(s), (task, s)
        if task == "jump_in_place":
            assert not RUN.search(s), (task, s)
        if task in FASTER_TASKS:
            assert SPEED.search(s), (task, s)
        else:
            assert not SPEED.search(s), (task, s)
            assert not re.search(r"\b(faster|top speed)\b", s), (task, s)


def test_jump_direction_banks_mirror_each_other():
    """The known bug: jump-forward and jump-backward phrasings swapped.  Pin a few by hand."""
    assert "jump forward" in I.train_bank("jump_forward")
    assert "jump backward" in I.train_bank("jump_backward")
    assert not any("backward" in s for s in I.train_bank("jump_forward") + I.rephrase_bank("jump_forward"))
    assert not any("forward" in s for s in I.train_bank("jump_backward") + I.rephrase_bank("jump_backward"))
