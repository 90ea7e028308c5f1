"""Instruction banks of MetaWorld-v0.

Every task owns a small lexicon: ``acts`` — plain imperative phrases ("push the puck to the
goal") — and, for train tasks, rephrase material: ``rephrase_acts`` (imperatives worded
differently, never used in the train bank), ``result`` (an infinitive clause, "the puck to end
up on the target") and ``state`` (a finite clause, "the puck is sitting on the target").

* train bank (the real data): every act in each of :data:`TRAIN_FRAMES` (80 phrasings);
* rephrase bank (held out): :data:`REPHRASE_FRAMES` — conversational, indirect and emotional
  wordings built from the rephrase material only, so no rephrase string can be a train string;
* easy / hard banks: the novel tasks' own acts in :data:`TRAIN_FRAMES` (their acts name what is
  new — the wall, the lock, the order — so no string coincides with a train task's).

The tests check all three disjointness properties.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

TRAIN_FRAMES: tuple[str, ...] = (
    "{act}",
    "{act} with the gripper",
    "use the robot arm to {act}",
    "please {act}",
    "your task is to {act}",
    "{act} using the sawyer arm",
    "the goal is to {act}",
    "robot, {act}",
    "move the arm and {act}",
    "{act}, then stop",
)
"""Plain frames of the train, easy and hard banks."""

REPHRASE_FRAMES: tuple[str, ...] = (
    "hey, could you {act}?",
    "I'd really appreciate it if you could {act}",
    "ugh, please just {act} already!",
    "so, um, any chance you could {act} for me?",
    "what I need right now is for {result}",
    "it would honestly make my day if {state}",
    "would it be possible for {result}? that would be lovely",
    "oh wow, I'd be so happy if {state}",
    "I'm getting really stressed, I just want {result}",
    "you know what would be great? for {result}",
)
"""Held-out frames of the rephrase level (``{act}`` comes from ``rephrase_acts``)."""

LEXICON: Mapping[str, Mapping[str, tuple[str, ...] | str]] = MappingProxyType({
    # ------------------------------------------------------------------ train
    "reach": {
        "acts": ("reach the goal", "move the gripper to the goal", "reach the target position",
                 "bring the hand to the target", "go to the goal position", "touch the target point",
                 "move the end effector to the goal", "put the gripper on the target spot"),
        "rephrase_acts": ("stretch your hand out to that marked point", "get your fingertips over to the marker",
                          "wave your hand over to where the marker floats"),
        "result": "your hand to end up at the marked point",
        "state": "your fingertips were resting right on the marker",
    },
    "push": {
        "acts": ("push the puck to the goal", "slide the puck to the target", "push the block to the goal position",
                 "shove the puck onto the target", "slide the disc to the goal",
                 "move the puck to the goal by pushing it",
                 "push the puck across the table to the target", "nudge the puck until it reaches the goal"),
        "rephrase_acts": ("scoot that little disc over to the marked spot without lifting it",
                          "get the puck gliding over to its mark", "drag that flat puck along to where it belongs"),
        "result": "the puck to glide over to its marked spot",
        "state": "that little disc slid all the way to its mark",
    },
    "pick_place": {
        "acts": ("pick up the puck and place it at the goal", "pick and place the puck at the target",
                 "grasp the puck and put it on the goal", "lift the puck and move it to the target position",
                 "pick the block up and set it at the goal", "grab the puck and place it at the target",
                 "carry the puck to the goal", "take the puck and put it down at the target"),
        "rephrase_acts": ("lift that puck into the air and drop it off at the floating marker",
                          "scoop up the disc and deliver it to its spot",
                          "hoist the puck over to the marker and let it sit there"),
        "result": "the puck to be carried over and left at the marker",
        "state": "the puck got lifted and delivered to the marker",
    },
    "button_press": {
        "acts": ("press the button", "push the button", "press the button on the box", "push the red button in",
                 "press down the button", "hit the button", "push in the button on the front of the box",
                 "press the button all the way"),
        "rephrase_acts": ("give that button on the box a good firm poke", "jab the button on that box",
                          "squish the box's button inward"),
        "result": "that button on the box to get pushed in",
        "state": "somebody finally poked the button on that box",
    },
    "door_unlock": {
        "acts": ("unlock the door", "turn the lock to unlock the door", "unlock the safe door",
                 "open the lock on the door", "rotate the lock to the unlocked position", "release the door lock",
                 "flip the lock open", "undo the lock on the door"),
        "rephrase_acts": ("twist that latch so the safe isn't locked anymore", "free up the latch on the safe",
                          "swing the little bolt so the safe door is no longer secured"),
        "result": "the safe's latch to be released",
        "state": "the safe weren't locked anymore",
    },
    "door_open": {
        "acts": ("open the door", "pull the door open", "open the safe door", "swing the door open",
                 "pull the door handle to open it", "open the door all the way", "pull on the handle and open the door",
                 "open the cabinet door"),
        "rephrase_acts": ("yank that safe's hatch wide", "get the hatch of the safe swung out toward you",
                          "tug the handle until the hatch is wide"),
        "result": "the safe's hatch to be swung wide",
        "state": "the hatch of that safe were hanging wide",
    },
    "window_open": {
        "acts": ("open the window", "slide the window open", "push the window open", "open the sliding window",
                 "slide the window to the right", "open the window by sliding it", "move the window pane to open it",
                 "slide the window sash open"),
        "rephrase_acts": ("let some fresh air in through that pane", "shift that glass pane so there's a gap",
                          "crack that pane so the breeze comes through"),
        "result": "a gap to appear where that glass pane was",
        "state": "a breeze came in through that pane",
    },
    "faucet_open": {
        "acts": ("open the faucet", "turn on the faucet", "turn the faucet handle to open it", "open the tap",
                 "turn the tap on", "rotate the faucet handle open", "twist the faucet open",
                 "turn the faucet knob to the open side"),
        "rephrase_acts": ("get the water running from that tap", "crank that spigot so water flows",
                          "twist the spigot so the water comes out"),
        "result": "the water to start running from that spigot",
        "state": "water were pouring out of that spigot",
    },
    "coffee_push": {
        "acts": ("push the mug under the coffee machine", "slide the mug to the coffee machine",
                 "push the cup under the machine", "move the mug beneath the coffee machine",
                 "slide the cup under the coffee maker", "put the mug under the machine by pushing it",
                 "push the mug to the spot under the coffee machine", "shove the mug below the coffee spout"),
        "rephrase_acts": ("scoot my cup over so it sits right under the spout",
                          "get my cup lined up beneath where the coffee comes out",
                          "park my cup under the brewer"),
        "result": "my cup to sit right beneath the brewer's spout",
        "state": "my cup were parked under the spout",
    },
    "coffee_button": {
        "acts": ("press the coffee machine button", "push the button on the coffee machine",
                 "press the coffee button", "start the coffee machine", "hit the button on the coffee maker",
                 "push the coffee maker's button", "press the start button of the coffee machine",
                 "turn on the coffee machine with its button"),
        "rephrase_acts": ("get the brewer going, I need caffeine", "poke the brewer's switch so it starts",
                          "fire up that brewer"),
        "result": "the brewer to start brewing",
        "state": "the brewer were already gurgling away",
    },
    # ------------------------------------------------------------------ easy
    "reach_wall": {
        "acts": ("reach the goal behind the wall", "move the gripper over the wall to the goal",
                 "reach the target on the other side of the wall", "go around the wall to the goal position",
                 "reach over the wall to the target", "bring the hand past the wall to the goal",
                 "reach the goal without hitting the wall", "move the end effector past the wall to the target"),
    },
    "push_wall": {
        "acts": ("push the puck around the wall to the goal", "slide the puck past the wall to the target",
                 "push the puck to the goal behind the wall", "push the block around the wall onto the goal",
                 "move the puck past the wall to the goal by pushing it",
                 "slide the disc around the wall to the target", "push the puck to the target avoiding the wall",
                 "nudge the puck past the wall until it reaches the goal"),
    },
    "pick_place_wall": {
        "acts": ("pick up the puck and place it over the wall at the goal",
                 "lift the puck over the wall and put it at the target",
                 "pick and place the puck behind the wall", "carry the puck over the wall to the goal",
                 "grasp the puck and set it down at the goal behind the wall",
                 "lift the block over the wall onto the target", "take the puck past the wall and place it at the goal",
                 "pick the puck up and move it over the wall to the target position"),
    },
    "button_press_wall": {
        "acts": ("press the button behind the wall", "push the button past the wall",
                 "press the button on the box behind the wall", "reach around the wall and press the button",
                 "hit the button behind the wall", "push in the button that is behind the wall",
                 "press the button without hitting the wall", "get past the wall and push the button"),
    },
    "door_lock": {
        "acts": ("lock the door", "turn the lock to lock the door", "lock the safe door", "close the lock on the door",
                 "rotate the lock to the locked position", "engage the door lock", "flip the lock shut",
                 "push the lock down to lock the door"),
    },
    "door_close": {
        "acts": ("close the door", "push the door shut", "close the safe door", "swing the door closed",
                 "shut the door", "push the open door closed", "close the cabinet door", "shut the safe door"),
    },
    "window_close": {
        "acts": ("close the window", "slide the window shut", "push the window closed", "close the sliding window",
                 "slide the window to the left", "shut the window by sliding it", "move the window pane to close it",
                 "slide the window sash closed"),
    },
    "faucet_close": {
        "acts": ("close the faucet", "turn off the faucet", "turn the faucet handle to close it", "close the tap",
                 "turn the tap off", "rotate the faucet handle closed", "twist the faucet shut",
                 "turn the faucet knob to the closed side"),
    },
    # ------------------------------------------------------------------ hard
    "make_coffee": {
        "acts": ("make coffee", "push the mug under the coffee machine and then press the button",
                 "make a cup of coffee: place the mug under the machine, then start it",
                 "first slide the mug under the coffee machine, then push its button",
                 "put the cup under the coffee maker and then press the coffee button",
                 "brew coffee into the mug", "move the mug beneath the spout, then turn on the coffee machine",
                 "get the mug under the machine and then hit the coffee button"),
    },
    "locked_door_open": {
        "acts": ("unlock the door and then open it", "open the locked door",
                 "first turn the lock, then pull the door open", "unlock the safe and open its door",
                 "release the lock and then swing the door open",
                 "open the door, which is locked, by unlocking it first",
                 "undo the lock, then open the door", "unlock and open the door"),
    },
    "hammer": {
        "acts": ("hammer the nail", "pick up the hammer and drive the nail in", "use the hammer to hit the nail",
                 "grab the hammer and hammer in the nail", "drive the nail into the block with the hammer",
                 "hit the nail with the hammer", "take the hammer and knock the nail in",
                 "pound the nail in with the hammer"),
    },
    "soccer": {
        "acts": ("kick the ball into the goal", "push the soccer ball into the net", "score a goal with the ball",
                 "move the soccer ball into the goal", "shoot the ball into the goal", "get the ball into the net",
                 "push the ball into the soccer goal", "roll the soccer ball into the goal"),
    },
})
"""Per-task lexicon (see the module docstring)."""


def train_bank(task: str) -> tuple[str, ...]:
    """The plain bank of ``task`` (the real-data bank for train tasks; the level's bank otherwise)."""
    return tuple(frame.format(act=act) for act in LEXICON[task]["acts"] for frame in TRAIN_FRAMES)


def rephrase_bank(task: str) -> tuple[str, ...]:
    """The held-out rephrase bank of a train task."""
    entry = LEXICON[task]
    result = str(entry["result"])
    out: list[str] = []
    for frame in REPHRASE_FRAMES:
        fill = {"result": result, "state": entry["state"]}
        if "{act}" in frame:
            out.extend(frame.format(act=act, **fill) for act in entry["rephrase_acts"])
        else:
            out.append(frame.format(**fill))
    return tuple(out)
