"""BatchAsterix: MinAtar's Asterix (``minatar/environments/asterix.py``, MinAtar 1.0.15),
batched."""

from __future__ import annotations

from typing import Any

import numpy as np

from batchenv.entities import free_count, nth_free, spawn
from batchenv.envs.minatar._base import (
    DOWN,
    GRID,
    LEFT,
    RIGHT,
    STICKY_FIELDS,
    UP,
    MinAtarEnv,
    rand_below,
    randint,
)
from batchenv.random import BatchRandom
from batchenv.state import State

__all__ = ["BatchAsterix"]

RAMP_INTERVAL = 100  # asterix.py: ramp_interval (a ramp every 102 steps: 100 -> -1, then ramp)
INIT_SPAWN_SPEED = 10  # asterix.py: init_spawn_speed, steps between spawns at the start
INIT_MOVE_INTERVAL = 5  # asterix.py: init_move_interval, steps between entity moves
SLOTS = 8  # one entity slot per lane; slot i is row i+1
_DX = np.zeros(6, dtype=np.int8)
_DY = np.zeros(6, dtype=np.int8)
_DX[LEFT], _DX[RIGHT], _DY[UP], _DY[DOWN] = -1, 1, -1, 1
_LOW = np.array([0, 1], dtype=np.int8)[:, None]  # the player's (x, y) bounds: x 0-9, y 1-8
_HIGH = np.array([GRID - 1, SLOTS], dtype=np.int8)[:, None]
_START = 5  # the player's start cell (5, 5)
_EDGE_X = np.array([GRID - 1, 0], dtype=np.int8)  # spawn column: right edge, or left if lr
_WAY = np.array([-1, 1], dtype=np.int8)  # move per step: left, or right if lr
_NINE = np.array(GRID - 1, dtype=np.int8)
_LANES = tuple(range(1, SLOTS + 1))


def _cell_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per entity code ``x + 10 * right + 20 * gold``: the offset of its cell in its lane
    (``x * 4 + channel``: enemy 1, gold 3), of its trail (the cell behind it, channel 2),
    and whether that trail cell is on the board (MinAtar's ``state()``)."""
    body, trail, shown = (np.zeros(4 * GRID, dtype=t) for t in (np.int8, np.int8, bool))
    for gold in (0, 1):
        for right in (0, 1):
            for x in range(GRID):
                code = x + _CODES_RIGHT * right + _CODES_GOLD * gold
                back = x - 1 if right else x + 1
                body[code] = x * 4 + (3 if gold else 1)
                shown[code] = 0 <= back <= GRID - 1
                trail[code] = min(max(back, 0), GRID - 1) * 4 + 2
    return body, trail, shown


_CODES_RIGHT, _CODES_GOLD = GRID, 2 * GRID
_BODY_OFFSET, _TRAIL_OFFSET, _TRAIL_SHOWN = _cell_tables()


class BatchAsterix(MinAtarEnv):
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
    timer is 0) and :func:`collide` again, the timers, :func:`ramp_difficulty`.

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

    ## Random Words

    4 words per env each step: word 0 the sticky-action draw (``Environment.act``'s
    ``rand()``), then ``_spawn_entity``'s ``rand()`` (side, word 1), ``rand()`` (gold,
    word 2) and ``randint(len(slot_options))`` (the lane among the free ones, word 3),
    drawn every step, used on spawn steps. None per reset.

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
    step_words = 4
    reset_words = 0
    ansi_chars = "@X-$"
    state_dtype = np.dtype([
        ("player_x", np.int8),  # column 0-9
        ("player_y", np.int8),  # row 1-8
        ("spawn_speed", np.int8),  # steps between spawns (10 down to 1 by ramping)
        ("spawn_timer", np.int8),  # steps until the next spawn
        ("move_speed", np.int8),  # steps between entity moves (5 down to 1)
        ("move_timer", np.int8),  # steps until entities move
        ("ramp_timer", np.int8),  # counts 100 down to -1, then the game speeds up
        ("ramp_index", np.int8),  # ramps so far (MinAtar's difficulty_ramp())
        ("alive", np.bool_, (SLOTS,)),  # slot i (lane i+1) holds an entity
        ("ent_x", np.int8, (SLOTS,)),  # its column
        ("ent_right", np.bool_, (SLOTS,)),  # it moves right (MinAtar's lr)
        ("ent_gold", np.bool_, (SLOTS,)),  # gold (else an enemy)
        *STICKY_FIELDS,
    ])

    def __init__(self, num_envs: int | None = None, **kwargs: Any) -> None:
        super().__init__(num_envs, **kwargs)
        self._slot_base = np.arange(self.num_envs, dtype=np.intp) * SLOTS
        self._player = np.empty((2, self.num_envs), dtype=np.int8)

    def reset_envs(self, s: State, rng: BatchRandom) -> None:
        self.reset_rows(s, slice(None), rng)

    def reset_rows(self, s: State, rows: np.ndarray | slice, rng: BatchRandom) -> None:
        s.player_x[rows] = _START
        s.player_y[rows] = _START
        s.alive[rows] = False  # the other slot fields of a dead slot are never read
        s.spawn_speed[rows] = INIT_SPAWN_SPEED
        s.spawn_timer[rows] = INIT_SPAWN_SPEED
        s.move_speed[rows] = INIT_MOVE_INTERVAL
        s.move_timer[rows] = INIT_MOVE_INTERVAL
        s.ramp_timer[rows] = RAMP_INTERVAL
        s.ramp_index[rows] = 0

    def step_envs(self, s: State, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        words = self.step_draws(s, rng)
        a = self.game_actions(s, action, words[0])
        spawn_entity(s, words)
        move_player(s, a, self._player)
        lane = self._slot_base[:len(s)] + (s.player_y - 1)  # the player's slot, flat
        reward = self.reward_buffer
        terminated = self.terminated_buffer
        gold, enemy = collide(s, lane)
        moving = move_entities(s)
        gold2, enemy2 = collide(s, lane)
        gold2 &= moving
        enemy2 &= moving
        np.add(gold, gold2, out=reward)
        np.logical_or(enemy, enemy2, out=terminated)
        s.spawn_timer -= 1
        s.move_timer -= 1
        if self.difficulty_ramping:
            ramp_difficulty(s)
        return reward, terminated

    def observe(self, s: State, out: np.ndarray) -> None:
        out.fill(False)
        grid = self.grid(len(s))
        flat = out.reshape(-1)
        flat[grid.cells(s.player_y, s.player_x, 0)] = True
        # Slot i is alone in lane i+1, and only it writes channels 1-3 there: a dead slot
        # writes False to its lane (a no-op), which saves selecting the live ones.
        code = s.ent_right.view(np.int8) * np.int8(_CODES_RIGHT)
        code += s.ent_gold.view(np.int8) * np.int8(_CODES_GOLD)
        code += s.ent_x
        lanes = grid.lane_base(_LANES)
        flat[np.add(lanes, _BODY_OFFSET.take(code))] = s.alive
        trail_shown = _TRAIL_SHOWN.take(code)
        trail_shown &= s.alive
        flat[np.add(lanes, _TRAIL_OFFSET.take(code))] = trail_shown


def spawn_entity(s: State, words: np.ndarray) -> None:
    """Where the spawn timer is 0: a new entity, on the left edge moving right if
    ``rand() < 1/2`` (word 1) else on the right edge, gold if ``rand() < 1/3`` (word 2),
    in the ``randint(free lanes)``-th free lane (word 3; nothing if every lane is taken);
    the timer restarts at the spawn speed."""
    due = s.spawn_timer == 0
    if not due.any():
        return
    rows = due.nonzero()[0]
    right = rand_below(words[1, rows], 0.5)
    gold = rand_below(words[2, rows], 1 / 3)
    alive = s.alive[rows]
    free = free_count(alive)
    has_free = free > 0
    j = randint(words[3, rows], 0, np.maximum(free, 1))  # randint(len(slot_options))
    slot = nth_free(alive, j)
    ok = has_free.nonzero()[0]
    spawn(s.alive, rows[ok], slot[ok], {
        "ent_x": (s.ent_x, _EDGE_X[right[ok].view(np.int8)]),
        "ent_right": (s.ent_right, right[ok]),
        "ent_gold": (s.ent_gold, gold[ok]),
    })
    s.spawn_timer[rows] = s.spawn_speed[rows]


def move_player(s: State, action: np.ndarray, work: np.ndarray) -> None:
    """``l``/``r`` move one column (0-9), ``u``/``d`` one row (1-8)."""
    work[0, :len(s)] = s.player_x
    work[1, :len(s)] = s.player_y
    xy = work[:, :len(s)]
    xy[0] += _DX[action]
    xy[1] += _DY[action]
    np.clip(xy, _LOW, _HIGH, out=xy)
    s.player_x[:] = xy[0]
    s.player_y[:] = xy[1]


def collide(s: State, lane: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The entity in the player's lane, if it is in the player's cell: gold is picked up
    (its slot freed) and returned in the first mask, an enemy in the second."""
    met = s.alive.reshape(-1)[lane] & (s.ent_x.reshape(-1)[lane] == s.player_x)
    gold = met & s.ent_gold.reshape(-1)[lane]
    enemy = met & ~gold
    if gold.any():
        s.alive.reshape(-1)[lane[gold]] = False
    return gold, enemy


def move_entities(s: State) -> np.ndarray:
    """Where the move timer is 0: every entity moves one cell its way and leaves the board
    past an edge; the timer restarts at the move speed. Returns where they moved."""
    moving = s.move_timer == 0
    if not moving.any():
        return moving
    step = _WAY[s.ent_right.view(np.int8)]
    step *= s.alive
    step *= moving[:, None]
    s.ent_x += step
    gone = (s.ent_x < 0) | (s.ent_x > _NINE)
    s.alive &= ~gone
    np.clip(s.ent_x, 0, _NINE, out=s.ent_x)  # a dead slot's column is never read
    np.copyto(s.move_timer, s.move_speed, where=moving)
    return moving


def ramp_difficulty(s: State) -> None:
    """While spawns or moves can still speed up: the ramp timer counts down to -1; then the
    spawn interval drops by one (to 1 at least), the move interval too on odd ramps, and
    the timer restarts at 100."""
    active = (s.spawn_speed > 1) | (s.move_speed > 1)
    ramp = active & (s.ramp_timer < 0)
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
