"""BatchAsterix: MinAtar's Asterix (``minatar/environments/asterix.py``, MinAtar 1.0.15),
batched."""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np

from batchenv import perenv
from batchenv.entities import free_count, nth_free, spawn
from batchenv.envs.minatar._base import (
    DOWN,
    GRID,
    LEFT,
    RIGHT,
    UP,
    MinAtarEnv,
    MinAtarState,
    paint_table_row,
    rand_below,
    randint,
    sticky_action_env,
)
from batchenv.envs.minatar._rows import RowCanvas, per_slot, slot_word
from batchenv.random import BatchRandom
from batchenv.state import Field

__all__ = ["BatchAsterix", "AsterixState"]

RAMP_INTERVAL = 100  # asterix.py: ramp_interval (a ramp every 102 steps: 100 -> -1, then ramp)
INIT_SPAWN_SPEED = 10  # asterix.py: init_spawn_speed, steps between spawns at the start
INIT_MOVE_INTERVAL = 5  # asterix.py: init_move_interval, steps between entity moves
SLOTS = 8  # one entity slot per lane; slot i is row i+1
LANES = tuple(range(1, SLOTS + 1))
_CHANNELS = 4
_PLAYER, _ENEMY, _TRAIL, _GOLD = range(_CHANNELS)
_LAST = GRID - 1  # the last row and column of the board
_START = 5  # the player's start cell (5, 5)
RIGHT_PROB = 0.5  # a spawn enters on the left edge moving right if rand() < 1/2
GOLD_PROB = 1 / 3  # and is gold if rand() < 1/3 (else an enemy)
_EDGE_X = np.array([GRID - 1, 0], dtype=np.int8)  # spawn column: right edge, or left if lr
_ZERO, _ONE, _NINE = (np.array(v, dtype=np.int8) for v in (0, 1, GRID - 1))
_TOP, _BOTTOM = np.array(1, dtype=np.int8), np.array(SLOTS, dtype=np.int8)  # player rows
#: The lane of a board row as a byte mask over the 8 slots (see ``slot_word``): row r
#: (1-8) sets byte r - 1 to 1.
_LANE_BYTE = np.array([0, *(1 << (8 * i) for i in range(SLOTS)), 0], dtype=np.uint64)
_ALL_LANES = np.array(sum(1 << (8 * i) for i in range(SLOTS)), dtype=np.uint64)


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


#: :func:`_lane_images` as uint64 words, ``(41, 5)``: the per-env observation copies a
#: lane's image from here (``paint_table_row``) instead of drawing its cells
_LANE_WORDS = np.ascontiguousarray(_lane_images().reshape(1 + 4 * GRID, -1)).view(np.uint64)
_EMPTY_LANE = np.uint64(0)  # the code of an empty lane (and of rows 0 and 9)
# lane_codes_env: the 8 slots of a field as the bytes of one word (slot k in byte k)
_BYTES = np.uint64(0x0101010101010101)  # 1 in every byte
_BYTE = np.uint64(0xFF)
_BYTE_SHIFT = np.arange(0, 8 * SLOTS, 8, dtype=np.uint64)  # slot k's byte: >> 8k
_TEN, _TWENTY = np.uint64(GRID), np.uint64(2 * GRID)
assert SLOTS == 8  # (a field's slots are one word)


class AsterixState(MinAtarState):
    """One game per row (``BatchAsterix.state_dtype`` is made from these annotations)."""

    player_x: Field[np.int8]  # column 0-9
    player_y: Field[np.int8]  # row 1-8
    spawn_speed: Field[np.int8]  # steps between spawns (10 down to 1 by ramping)
    spawn_timer: Field[np.int8]  # steps until the next spawn
    move_speed: Field[np.int8]  # steps between entity moves (5 down to 1)
    move_timer: Field[np.int8]  # steps until entities move
    ramp_timer: Field[np.int8]  # counts 100 down to -1, then the game speeds up
    ramp_index: Field[np.int8]  # ramps so far (MinAtar's difficulty_ramp())
    alive: Annotated[Field[np.bool_], (SLOTS,)]  # slot i (lane i+1) holds an entity
    ent_x: Annotated[Field[np.int8], (SLOTS,)]  # its column
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

    The entities live in 8 slots per env (``batchenv.entities``): slot i is lane i+1, with
    an ``alive`` mask, position, direction and kind. Each step applies, in MinAtar's
    order: sticky actions, :func:`spawn_entity` (when the spawn timer is 0, into a random
    free lane), :func:`move_player`, :func:`collide`, :func:`move_entities` (when the move
    timer is 0) and :func:`collide` again, the timers, :func:`ramp_difficulty`. The
    observation keeps the lanes drawn between steps (``_rows.RowCanvas``, one code per
    lane: :func:`lane_codes`) and paints the player on.

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
    ``kernels="auto"`` (default): the per-env kernels compiled when numba is installed,
    else the numpy kernels; ``"numpy"``, ``"numba"`` or ``"python"`` (the per-env kernels
    as a Python loop) to choose, and ``num_threads=`` for the compiled loop (identical
    results: docs/minatar.md).

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

    * v0 / v1: as MinAtar 1.0.15's ``MinAtar/Asterix-v0`` / ``-v1``.
    """

    game = "asterix"
    channels = ("player", "enemy", "trail", "gold")
    minimal_actions = (0, 1, 2, 3, 4)
    step_words = 1
    reset_words = 0
    event_words = "and 2 on a spawn step, 1 more if a lane is free"
    ansi_chars = "@X-$"
    state_type = AsterixState

    def __init__(self, num_envs: int | None = None, **kwargs: Any) -> None:
        super().__init__(num_envs, **kwargs)
        if self.kernels == "numpy":  # (observe_env draws every lane itself)
            self._lanes = RowCanvas(self.num_envs, LANES, _lane_images(),
                                    (GRID, GRID, _CHANNELS))

    def check_state(self, states: np.ndarray) -> dict[str, np.ndarray]:
        """Live entities on the board (columns 0-9)."""
        x = states["ent_x"]
        return {"a live entity outside columns 0-9": states["alive"] & ((x < 0) | (x > 9))}

    def reset_envs(self, s: AsterixState, rng: BatchRandom) -> None:
        self.reset_rows(s, slice(None), rng)

    def reset_rows(self, s: AsterixState, rows: np.ndarray | slice, rng: BatchRandom
                   ) -> None:
        s.player_x[rows] = _START
        s.player_y[rows] = _START
        s.alive[rows] = False
        # (the rules never read a dead slot's other fields, but a reset clears them: a
        # NEXT_STEP reset follows a discarded step, which moved the entities here and not
        # in the per-env kernels, and the state after a reset must not depend on that)
        s.ent_x[rows] = 0
        s.ent_right[rows] = False
        s.ent_gold[rows] = False
        s.spawn_speed[rows] = INIT_SPAWN_SPEED
        s.spawn_timer[rows] = INIT_SPAWN_SPEED
        s.move_speed[rows] = INIT_MOVE_INTERVAL
        s.move_timer[rows] = INIT_MOVE_INTERVAL
        s.ramp_timer[rows] = RAMP_INTERVAL
        s.ramp_index[rows] = 0

    def step_envs(self, s: AsterixState, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        a = self.game_actions(s, action, self.step_draws(s, rng)[0])
        due = s.spawn_timer == 0
        if due.any():
            rows, (side, kind, choice) = self.event_draws(s, rng, due, 3)
            lane_free = slot_word(s.alive[rows]) != _ALL_LANES
            self.return_draws(s, rows[~lane_free], 1)  # no lane to choose: no third draw
            spawn_entity(s, rows[lane_free], side[lane_free], kind[lane_free],
                         choice[lane_free])
            np.copyto(s.spawn_timer, s.spawn_speed, where=due)
        move_player(s, a)
        lane = _LANE_BYTE.take(s.player_y)  # the player's lane, as a slot byte
        player_x = per_slot(s.player_x)
        reward = self.reward_buffer
        terminated = self.terminated_buffer
        gold, enemy = collide(s, lane, player_x)
        if move_entities(s):
            # (where nothing moved this finds nothing new: gold met before is gone, an
            # enemy met before ends the episode anyway; and a lane's one slot gives at
            # most one gold a step)
            gold2, enemy2 = collide(s, lane, player_x)
            gold |= gold2
            enemy |= enemy2
        np.copyto(reward, gold)
        np.copyto(terminated, enemy)
        s.spawn_timer -= _ONE
        s.move_timer -= _ONE
        if self.difficulty_ramping:
            ramp_difficulty(s)
        return reward, terminated

    def observe(self, s: AsterixState, out: np.ndarray) -> None:
        self._lanes.draw(out, lane_codes(s))  # the entities, redrawn where they changed
        grid = self.grid(len(s))
        out.reshape(-1)[grid.cells(s.player_y, s.player_x, 0)] = True

    # ------------------------------------------------------------ per-env kernels
    # The same rules for one env, row i (batchenv.perenv: compiled by numba into one loop
    # over the batch), decision for decision and draw for draw as the numpy kernels above.

    @staticmethod
    def reset_env(p: Any, s: Any, i: int) -> None:
        s.player_x[i] = s.player_y[i] = _START
        for k in range(SLOTS):  # every slot field cleared, as reset_rows does
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
            spawn_entity_env(s, i)
            s.spawn_timer[i] = s.spawn_speed[i]
        move_player_env(s, i, a)
        gold, enemy = collide_env(s, i)
        if s.move_timer[i] == 0:
            move_entities_env(s, i)
            s.move_timer[i] = s.move_speed[i]
            gold2, enemy2 = collide_env(s, i)
            gold |= gold2
            enemy |= enemy2
        s.spawn_timer[i] -= 1
        s.move_timer[i] -= 1
        if p.difficulty_ramping:
            ramp_difficulty_env(s, i)
        return (1.0 if gold else 0.0), enemy

    @staticmethod
    def observe_env(p: Any, s: Any, i: int, obs: np.ndarray) -> None:
        # every board row from the table of lane images (observe's RowCanvas, redrawn each
        # time): rows 0 and 9 hold no lane, the image of code 0 (a clear of a row by
        # another helper would be a memset call: its width is not a constant)
        paint_table_row(obs, 0, _LANE_WORDS, _EMPTY_LANE)
        codes = lane_codes_env(s, i)  # lane k's code in byte k
        for k in range(SLOTS):
            paint_table_row(obs, k + 1, _LANE_WORDS, (codes >> _BYTE_SHIFT[k]) & _BYTE)
        paint_table_row(obs, GRID - 1, _LANE_WORDS, _EMPTY_LANE)
        obs[s.player_y[i], s.player_x[i], _PLAYER] = True


def lane_codes(s: AsterixState) -> np.ndarray:
    """Each lane's entity as a code of :func:`_lane_images`: 0 for an empty lane, else
    ``1 + x + 10 * right + 20 * gold``."""
    code = s.ent_x + _ONE
    code += s.ent_right.view(np.int8) * np.int8(GRID)
    code += s.ent_gold.view(np.int8) * np.int8(2 * GRID)
    code *= s.alive.view(np.int8)
    return code


def spawn_entity(s: AsterixState, rows: np.ndarray, side: np.ndarray, kind: np.ndarray,
                 choice: np.ndarray) -> None:
    """A spawn in each env of ``rows`` (its spawn timer is 0 and a lane is free): on the
    left edge moving right if ``rand() < 1/2`` (``side`` words) else on the right edge,
    gold if ``rand() < 1/3`` (``kind``), in the ``randint(free lanes)``-th free lane
    (``choice``). (MinAtar draws side and kind even when every lane is taken, and then
    spawns nothing.)"""
    right = rand_below(side, RIGHT_PROB)
    gold = rand_below(kind, GOLD_PROB)
    alive = s.alive[rows]
    slot = nth_free(alive, randint(choice, 0, free_count(alive)))
    spawn(s.alive, rows, slot, {
        "ent_x": (s.ent_x, _EDGE_X[right.view(np.int8)]),
        "ent_right": (s.ent_right, right),
        "ent_gold": (s.ent_gold, gold),
    })


def move_player(s: AsterixState, action: np.ndarray) -> None:
    """``l``/``r`` move one column (0-9), ``u``/``d`` one row (1-8)."""
    s.player_x += (action == RIGHT).view(np.int8)
    s.player_x -= (action == LEFT).view(np.int8)
    np.maximum(s.player_x, _ZERO, out=s.player_x)
    np.minimum(s.player_x, _NINE, out=s.player_x)
    s.player_y += (action == DOWN).view(np.int8)
    s.player_y -= (action == UP).view(np.int8)
    np.maximum(s.player_y, _TOP, out=s.player_y)
    np.minimum(s.player_y, _BOTTOM, out=s.player_y)


def collide(s: AsterixState, lane: np.ndarray, player_x: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """The entity in the player's lane (``lane``: its slot byte), if it is in the
    player's cell (``player_x``: the column, per slot): gold is picked up (its slot freed)
    and returned in the first mask, an enemy in the second."""
    here = s.ent_x == player_x
    here &= s.alive
    met = slot_word(here) & lane
    gold = met & slot_word(s.ent_gold)
    alive = slot_word(s.alive)
    alive ^= gold  # (a view: frees the slots of the gold picked up)
    return gold != 0, (met ^ gold) != 0


def move_entities(s: AsterixState) -> bool:
    """Where the move timer is 0: every entity moves one cell its way and leaves the board
    past an edge; the timer restarts at the move speed. Returns whether any env moved."""
    moving = s.move_timer == 0
    if not moving.any():
        return False
    step = s.ent_right.view(np.int8) * np.int8(2)  # +1 right, -1 left
    step -= _ONE
    step *= s.alive.view(np.int8)
    step *= per_slot(moving).view(np.int8)
    s.ent_x += step
    inside = s.ent_x >= _ZERO
    inside &= s.ent_x <= _NINE
    s.alive &= inside
    np.copyto(s.move_timer, s.move_speed, where=moving)
    return True


def ramp_difficulty(s: AsterixState) -> None:
    """While spawns or moves can still speed up: the ramp timer counts down to -1; then the
    spawn interval drops by one (to 1 at least), the move interval too on odd ramps, and
    the timer restarts at 100."""
    active = (s.spawn_speed > _ONE) | (s.move_speed > _ONE)
    ramp = s.ramp_timer < _ZERO
    ramp &= active
    s.ramp_timer -= active & ~ramp
    if ramp.any():
        rows = ramp.nonzero()[0]
        move = s.move_speed[rows]
        move -= (move > 1) & (s.ramp_index[rows] % 2 == 1)
        s.move_speed[rows] = move
        spawn_speed = s.spawn_speed[rows]
        spawn_speed -= spawn_speed > 1
        s.spawn_speed[rows] = spawn_speed
        s.ramp_index[rows] += 1
        s.ramp_timer[rows] = RAMP_INTERVAL


# ---------------------------------------------------------------- per-env rules (row i)
@perenv.rule
def spawn_entity_env(s: Any, i: int) -> None:
    """:func:`spawn_entity` for row ``i``, whose spawn timer is 0: side and kind drawn
    (words 1 and 2) even when every lane is taken; then, if a lane is free, the
    ``randint(free lanes)``-th free lane (word 3) gets the entity."""
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
                s.ent_x[i, k] = 0 if right else _LAST
                s.ent_right[i, k] = right
                s.ent_gold[i, k] = gold
                s.alive[i, k] = True
                return
            j -= 1


@perenv.rule
def move_player_env(s: Any, i: int, a: int) -> None:
    """:func:`move_player` for row ``i``: ``l``/``r`` one column (0-9), ``u``/``d`` one
    row (1-8). (Without branches: the action is a coin toss to the branch predictor.)"""
    x = s.player_x[i] + np.int64(a == RIGHT) - np.int64(a == LEFT)
    s.player_x[i] = min(max(x, 0), _LAST)
    y = s.player_y[i] + np.int64(a == DOWN) - np.int64(a == UP)
    s.player_y[i] = min(max(y, 1), SLOTS)


@perenv.rule
def collide_env(s: Any, i: int) -> tuple[bool, bool]:
    """:func:`collide` for row ``i``: whether the entity of the player's lane is in the
    player's cell and is gold (picked up: its slot freed), or an enemy. (Bitwise, without
    branches, as the rules below: whether a slot is alive, or met, is a coin toss to the
    branch predictor from one env to the next.)"""
    k = s.player_y[i] - 1  # the player's lane's slot
    alive = s.alive[i, k]
    met = alive & (s.ent_x[i, k] == s.player_x[i])
    gold = met & s.ent_gold[i, k]
    s.alive[i, k] = alive ^ gold  # (gold is met: alive)
    return gold, met ^ gold


@perenv.rule
def move_entities_env(s: Any, i: int) -> None:
    """:func:`move_entities` for row ``i``, whose move timer is 0: each live entity one
    cell its way, gone past an edge (its column stays where it went: -1 or 10); a dead
    slot's column moves by 0."""
    for k in range(SLOTS):
        alive = s.alive[i, k]
        x = s.ent_x[i, k] + (2 * np.int64(s.ent_right[i, k]) - 1) * np.int64(alive)
        s.ent_x[i, k] = x
        s.alive[i, k] = alive & (x >= 0) & (x <= _LAST)


@perenv.rule
def ramp_difficulty_env(s: Any, i: int) -> None:
    """:func:`ramp_difficulty` for row ``i``: while spawns or moves can speed up, the
    timer counts down to -1; then spawns (and moves, on odd ramps) come one step sooner,
    and the timer restarts."""
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
def lane_codes_env(s: Any, i: int) -> np.uint64:
    """:func:`lane_codes` for row ``i``: each lane's image in :func:`_lane_images` (0 for
    an empty lane, else ``1 + x + 10 * right + 20 * gold``), lane k's in byte k of one
    word, computed on the 8 slots at once (each field's slots read as one word, as
    Freeway's cars: a code is at most 40, so no byte carries into the next; a dead slot's
    column, which may be -1, is cleared before the sum)."""
    present = perenv.words(s.alive[i])[0] * _BYTE  # 0xFF in the byte of a live slot
    x = perenv.words(s.ent_x[i])[0] & present
    right = perenv.words(s.ent_right[i])[0]
    gold = perenv.words(s.ent_gold[i])[0]
    return (_BYTES + x + right * _TEN + gold * _TWENTY) & present
