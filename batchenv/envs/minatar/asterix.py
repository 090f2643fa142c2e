"""BatchAsterix: MinAtar's Asterix (``minatar/environments/asterix.py``, MinAtar 1.0.15),
batched."""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np

from batchenv import perenv
from batchenv.envs.minatar._base import (
    DOWN,
    GRID,
    LAST,
    LEFT,
    RIGHT,
    UP,
    Coordinate,
    MinAtarEnv,
    MinAtarState,
    paint_table_row,
    sticky_action_env,
)
from batchenv.state import Field, Range

__all__ = ["BatchAsterix", "AsterixState"]

RAMP_INTERVAL = 100  # asterix.py: ramp_interval (a ramp every 102 steps: 100 -> -1, then ramp)
INIT_SPAWN_SPEED = 10  # asterix.py: init_spawn_speed, steps between spawns at the start
INIT_MOVE_INTERVAL = 5  # asterix.py: init_move_interval, steps between entity moves
SLOTS = 8  # one entity slot per lane; slot i is row i+1
_CHANNELS = 4
_PLAYER, _ENEMY, _TRAIL, _GOLD = range(_CHANNELS)
_START = 5  # the player's start cell (5, 5)
RIGHT_PROB = 0.5  # a spawn enters on the left edge moving right if rand() < 1/2
GOLD_PROB = 1 / 3  # and is gold if rand() < 1/3 (else an enemy)


def _lane_images() -> np.ndarray:
    """The image of a lane (a board row, ``(10, 4)``) for each entity code: 0 an empty
    lane, ``1 + x + 10 * right + 20 * gold`` an entity in column x (channel 1 ``enemy``
    or 3 ``gold``) with its trail (channel 2) in the cell behind it, if that is on the
    board (MinAtar's ``state()``)."""
    images = np.zeros((1 + 4 * GRID, GRID, _CHANNELS), dtype=bool)
    for gold in (0, 1):
        for right in (0, 1):
            for x in range(GRID):
                image = images[1 + x + GRID * right + 2 * GRID * gold]
                image[x, _GOLD if gold else _ENEMY] = True
                back = x - 1 if right else x + 1
                if 0 <= back <= GRID - 1:
                    image[back, _TRAIL] = True
    return images


#: :func:`_lane_images` as uint64 words, ``(41, 5)``: the observation copies a lane's image
#: from here (``paint_table_row``) instead of drawing its cells
_LANE_WORDS = np.ascontiguousarray(_lane_images().reshape(1 + 4 * GRID, -1)).view(np.uint64)
_EMPTY_LANE = np.uint64(0)  # the code of an empty lane (and of rows 0 and 9)
# lane_codes: the 8 slots of a field as the bytes of one word (slot k in byte k)
_BYTES = np.uint64(0x0101010101010101)  # 1 in every byte
_BYTE = np.uint64(0xFF)
_BYTE_SHIFT = np.arange(0, 8 * SLOTS, 8, dtype=np.uint64)  # slot k's byte: >> 8k
_TEN, _TWENTY = np.uint64(GRID), np.uint64(2 * GRID)
assert SLOTS == 8  # (a field's slots are one word)


class AsterixState(MinAtarState):
    """One game per row (``BatchAsterix.state_dtype`` is made from these annotations)."""

    player_x: Coordinate  # column 0-9
    player_y: Annotated[Field[np.int8], Range(1, SLOTS)]  # row 1-8 (collide reads slot
    #                                                       player_y - 1: its lane's)
    # steps between spawns (10 down to 1 by ramping), and until the next one (a spawn
    # restarts it at spawn_speed, then it counts down to 0)
    spawn_speed: Annotated[Field[np.int8], Range(1, INIT_SPAWN_SPEED)]
    spawn_timer: Annotated[Field[np.int8], Range(0, INIT_SPAWN_SPEED)]
    # steps between entity moves (5 down to 1), and until the next one (as the spawn's)
    move_speed: Annotated[Field[np.int8], Range(1, INIT_MOVE_INTERVAL)]
    move_timer: Annotated[Field[np.int8], Range(0, INIT_MOVE_INTERVAL)]
    ramp_timer: Annotated[Field[np.int8], Range(-1, RAMP_INTERVAL)]  # counts 100 down to
    #                                                  -1, then the game speeds up
    ramp_index: Field[np.int8]  # ramps so far (MinAtar's difficulty_ramp()): a count the
    #                             rules read for its parity only, so any value is safe
    alive: Annotated[Field[np.bool_], (SLOTS,)]  # slot i (lane i+1) holds an entity
    # its column: 0-9 while it lives (check_state; observe_env looks its lane's image up
    # by it), -1 or 10 in a slot whose entity left the board there
    ent_x: Annotated[Field[np.int8], (SLOTS,), Range(-1, GRID)]
    ent_right: Annotated[Field[np.bool_], (SLOTS,)]  # it moves right (MinAtar's lr)
    ent_gold: Annotated[Field[np.bool_], (SLOTS,)]  # gold (else an enemy)


class BatchAsterix(MinAtarEnv[AsterixState]):
    """## Description

    MinAtar's Asterix for thousands of games at once, step for step the rules of
    ``minatar/environments/asterix.py`` (MinAtar 1.0.15; Young & Tian, 2019). The player
    moves freely in rows 1-8. Enemies and gold enter from either side, one lane (row) each,
    and cross the board; touching gold scores, touching an enemy ends the game. Every 102
    steps the game speeds up: entities spawn more often, and (every other time) move
    faster. Tested step by step against the ``minatar`` package
    (``tests/test_minatar_parity.py``).

    The entities live in 8 slots per env: slot i is lane i+1, with an ``alive`` mask,
    position, direction and kind. Each step applies, in MinAtar's order: sticky actions,
    :func:`spawn_entity` (when the spawn timer is 0, into a random free lane),
    :func:`move_player`, :func:`collide`, :func:`move_entities` (when the move timer is 0)
    and :func:`collide` again, the timers, :func:`ramp_difficulty`. The observation copies
    each lane's image from a table of the 41 lane images (a lane's code:
    :func:`lane_codes`) and paints the player on.

    ## Action Space

    ``Discrete(6)`` (MinAtar's ``n, l, u, r, d, f``; ``f`` does nothing), or with
    ``minimal_action_set=True`` (``-v1``) ``Discrete(5)``: ``n, l, u, r, d``.

    ## Observation Space

    ``Box(0, 1, (10, 10, 4), bool)``, MinAtar's channels in its order: 0 ``player``,
    1 ``enemy``, 2 ``trail`` (the cell behind each entity: its direction), 3 ``gold``.

    ## Rewards

    +1 for each gold picked up.

    ## Starting State

    The player at column 5, row 5; no entities; the first spawn after 10 steps, entities
    moving every 5 steps. No random draw.

    ## Episode End

    Terminated when the player and an enemy share a cell. No time limit by default.

    ## Arguments

    ``BatchAsterix(num_envs, *, difficulty_ramping=True, sticky_action_prob=0.1,
    minimal_action_set=False, render_scale=8, **BatchEnv options)``. With
    ``difficulty_ramping=False`` spawn and move speeds stay at their start values.
    ``kernels="auto"`` (default): the rules compiled by numba when it is installed, else
    run as a Python loop (with a warning); ``"numba"`` or ``"python"`` to choose, and
    ``num_threads=`` for the compiled loop (identical results: docs/minatar.md).

    ## Random Words

    Each step draws 1 word per env, the sticky-action draw (``Environment.act``'s
    ``rand()``, word 0); a spawn step draws ``_spawn_entity``'s ``rand()`` (side, word 1)
    and ``rand()`` (gold, word 2), and if a lane is free ``randint(len(slot_options))``
    (the lane among the free ones, word 3). None per reset.

    ## Quirks of the reference, reproduced

    * A spawn draws its side and kind even when every lane is taken (and then spawns
      nothing).
    * Gold and enemies are both checked twice a step (after the player moves, and after
      they move), so the player can pick gold up and be hit in the same step (reward and
      termination together).
    * The ramp counter counts down from 100 to -1 before ramping, so ramps come every 102
      steps (the first at step 102); the move speed drops on odd ramps only.
    * ``last_action`` carries over from one episode to the next (see BatchBreakout).

    ## Version History

    * v0 / v1: as MinAtar 1.0.15's ``MinAtar/Asterix-v0`` / ``-v1``. Its rules are
      written once, as per-env kernels: ``kernels="numpy"`` (a second copy of the rules as
      numpy kernels) is gone; the results are the same.
    """

    game = "asterix"
    channels = ("player", "enemy", "trail", "gold")
    minimal_actions = (0, 1, 2, 3, 4)
    step_words = 1
    reset_words = 0
    event_words = "and 2 on a spawn step, 1 more if a lane is free"
    ansi_chars = "@X-$"
    state_type = AsterixState

    def check_state(self, states: np.ndarray) -> dict[str, np.ndarray]:
        """Live entities on the board (columns 0-9)."""
        x = states["ent_x"]
        return {"a live entity outside columns 0-9": states["alive"] & ((x < 0) | (x > LAST))}

    # ------------------------------------------------------------ kernels (row i)
    @staticmethod
    def reset_env(p: Any, s: Any, i: int) -> None:
        s.player_x[i] = s.player_y[i] = _START
        for k in range(SLOTS):  # every slot cleared
            s.alive[i, k] = s.ent_right[i, k] = s.ent_gold[i, k] = False
            s.ent_x[i, k] = 0
        s.spawn_speed[i] = s.spawn_timer[i] = INIT_SPAWN_SPEED
        s.move_speed[i] = s.move_timer[i] = INIT_MOVE_INTERVAL
        s.ramp_timer[i] = RAMP_INTERVAL
        s.ramp_index[i] = 0

    @staticmethod
    def step_env(p: Any, s: Any, i: int, action: int) -> tuple[float, bool]:
        a = sticky_action_env(p, s, i, action)
        if s.spawn_timer[i] == 0:
            spawn_entity(s, i)
            s.spawn_timer[i] = s.spawn_speed[i]
        move_player(s, i, a)
        gold, enemy = collide(s, i)
        if s.move_timer[i] == 0:
            move_entities(s, i)
            s.move_timer[i] = s.move_speed[i]
            gold2, enemy2 = collide(s, i)
            gold |= gold2
            enemy |= enemy2
        s.spawn_timer[i] -= 1
        s.move_timer[i] -= 1
        if p.difficulty_ramping:
            ramp_difficulty(s, i)
        return (1.0 if gold else 0.0), enemy

    @staticmethod
    def observe_env(p: Any, s: Any, i: int, obs: np.ndarray) -> None:
        # every board row from the table of lane images: rows 0 and 9 hold no lane, the
        # image of code 0 (a clear of a row by another helper would be a memset call: its
        # width is not a constant)
        paint_table_row(obs, 0, _LANE_WORDS, _EMPTY_LANE)
        codes = lane_codes(s, i)  # lane k's code in byte k
        for k in range(SLOTS):
            paint_table_row(obs, k + 1, _LANE_WORDS, (codes >> _BYTE_SHIFT[k]) & _BYTE)
        paint_table_row(obs, GRID - 1, _LANE_WORDS, _EMPTY_LANE)
        obs[s.player_y[i], s.player_x[i], _PLAYER] = True


# ---------------------------------------------------------------- rules (row i)
@perenv.rule
def spawn_entity(s: Any, i: int) -> None:
    """A spawn in row ``i``, whose spawn timer is 0: on the left edge moving right if
    ``rand() < 1/2`` (word 1) else on the right edge, gold if ``rand() < 1/3`` (word 2),
    both drawn even when every lane is taken (MinAtar draws them, then spawns nothing);
    then, if a lane is free, in the ``randint(free lanes)``-th free lane (word 3)."""
    right = perenv.random(s, i) < RIGHT_PROB
    gold = perenv.random(s, i) < GOLD_PROB
    free = 0
    for k in range(SLOTS):
        free += 1 - np.int64(s.alive[i, k])
    if free == 0:  # every lane taken: nothing spawns, and no lane word is drawn
        return
    j = perenv.integers(s, i, 0, free)
    for k in range(SLOTS):  # the j-th free slot
        if not s.alive[i, k]:
            if j == 0:
                s.ent_x[i, k] = 0 if right else LAST
                s.ent_right[i, k] = right
                s.ent_gold[i, k] = gold
                s.alive[i, k] = True
                return
            j -= 1


@perenv.rule
def move_player(s: Any, i: int, a: int) -> None:
    """``l``/``r`` move the player one column (0-9), ``u``/``d`` one row (1-8). (Without
    branches: the action is a coin toss to the branch predictor.)"""
    x = s.player_x[i] + np.int64(a == RIGHT) - np.int64(a == LEFT)
    s.player_x[i] = min(max(x, 0), LAST)
    y = s.player_y[i] + np.int64(a == DOWN) - np.int64(a == UP)
    s.player_y[i] = min(max(y, 1), SLOTS)


@perenv.rule
def collide(s: Any, i: int) -> tuple[bool, bool]:
    """Whether the entity of the player's lane is in the player's cell and is gold (picked
    up: its slot freed), or an enemy. (Bitwise, without branches, as the rules below:
    whether a slot is alive, or met, is a coin toss to the branch predictor from one env
    to the next.)"""
    k = s.player_y[i] - 1  # the player's lane's slot
    alive = s.alive[i, k]
    met = alive & (s.ent_x[i, k] == s.player_x[i])
    gold = met & s.ent_gold[i, k]
    s.alive[i, k] = alive ^ gold  # (gold is met: alive)
    return gold, met ^ gold


@perenv.rule
def move_entities(s: Any, i: int) -> None:
    """Row ``i``'s move timer is 0: each live entity one cell its way, gone past an edge
    (its column stays where it went: -1 or 10); a dead slot's column moves by 0."""
    for k in range(SLOTS):
        alive = s.alive[i, k]
        x = s.ent_x[i, k] + (2 * np.int64(s.ent_right[i, k]) - 1) * np.int64(alive)
        s.ent_x[i, k] = x
        s.alive[i, k] = alive & (x >= 0) & (x <= LAST)


@perenv.rule
def ramp_difficulty(s: Any, i: int) -> None:
    """While spawns or moves can still speed up, the ramp timer counts down to -1; then
    spawns come one step sooner (down to every step) and, on odd ramps, moves too, and the
    timer restarts at 100."""
    if s.spawn_speed[i] > 1 or s.move_speed[i] > 1:
        if s.ramp_timer[i] < 0:
            if s.move_speed[i] > 1 and s.ramp_index[i] % 2 == 1:
                s.move_speed[i] -= 1
            if s.spawn_speed[i] > 1:
                s.spawn_speed[i] -= 1
            s.ramp_index[i] += 1
            s.ramp_timer[i] = RAMP_INTERVAL
        else:
            s.ramp_timer[i] -= 1


@perenv.rule
def lane_codes(s: Any, i: int) -> np.uint64:
    """Each lane's image in :func:`_lane_images` (0 for an empty lane, else ``1 + x + 10 *
    right + 20 * gold``), lane k's in byte k of one word, computed on the 8 slots at once
    (each field's slots read as one word, as Freeway's cars: a live slot's column is 0-9,
    so a code is at most 40, a row of the table, and no byte carries into the next; a dead
    slot's column, which may be -1, is cleared before the sum)."""
    present = perenv.words(s.alive[i])[0] * _BYTE  # 0xFF in the byte of a live slot
    x = perenv.words(s.ent_x[i])[0] & present
    right = perenv.words(s.ent_right[i])[0]
    gold = perenv.words(s.ent_gold[i])[0]
    return (_BYTES + x + right * _TEN + gold * _TWENTY) & present
