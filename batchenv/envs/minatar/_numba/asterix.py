"""BatchAsterix's rules as one compiled loop over the envs (the numba layer: see
:mod:`batchenv.envs.minatar._numba`). Each step follows ``BatchAsterix.step_envs``'s numpy
kernels decision for decision: the sticky action, ``spawn_entity`` (when the spawn timer is
0; its side and kind words drawn even when every lane is taken, the lane word only when one
is free), ``move_player``, ``collide``, ``move_entities`` (when the move timer is 0) and
``collide`` again, the timers, ``ramp_difficulty``. ``observe`` draws what ``lane_codes``
and ``_lane_images`` draw (each entity and the trail cell behind it), then the player."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from batchenv.envs.minatar._base import DOWN, LEFT, RIGHT, UP
from batchenv.envs.minatar._numba import (
    cell,
    flat_cells,
    game_action,
    jit,
    next_word,
    rand_below,
    randint,
    sticky_limit,
)
from batchenv.envs.minatar.asterix import (
    _CHANNELS,
    _START,
    GOLD_PROB,
    INIT_MOVE_INTERVAL,
    INIT_SPAWN_SPEED,
    RAMP_INTERVAL,
    RIGHT_PROB,
    SLOTS,
)
from batchenv.random import BatchRandom

_LAST = 9  # the last row and column of the board
_TOP, _BOTTOM = 1, SLOTS  # the player's rows (the lanes)
_PLAYER, _ENEMY, _TRAIL, _GOLD = range(4)  # channels
_CELLS = 10 * 10 * _CHANNELS  # one env's observation
_RIGHT_LIMIT, _RIGHT_ALWAYS = sticky_limit(RIGHT_PROB)
_GOLD_LIMIT, _GOLD_ALWAYS = sticky_limit(GOLD_PROB)


def step_envs(env: Any, s: Any, action: np.ndarray, rng: BatchRandom
              ) -> tuple[np.ndarray, np.ndarray]:
    """``BatchAsterix.step_envs``, compiled."""
    limit, always = sticky_limit(env.sticky_action_prob)
    reward, terminated = env.reward_buffer, env.terminated_buffer
    _step(action, env.action_set, limit, always, env.difficulty_ramping, s.last_action,
          s.rng_key, s.rng_counter, s.awaiting_reset, s.player_x, s.player_y,
          s.spawn_speed, s.spawn_timer, s.move_speed, s.move_timer, s.ramp_timer,
          s.ramp_index, s.alive, s.ent_x, s.ent_right, s.ent_gold, reward, terminated)
    return reward, terminated


def reset_rows(env: Any, s: Any, rows: np.ndarray | slice, rng: BatchRandom) -> None:
    """``BatchAsterix.reset_rows``, compiled (no random draw)."""
    if isinstance(rows, slice):
        rows = np.arange(len(s))[rows]
    _reset(rows, s.player_x, s.player_y, s.spawn_speed, s.spawn_timer, s.move_speed,
           s.move_timer, s.ramp_timer, s.ramp_index, s.alive, s.ent_x, s.ent_right, s.ent_gold)


def observe(env: Any, s: Any, out: np.ndarray) -> None:
    """``BatchAsterix.observe``, compiled: writes every cell of ``out``."""
    _observe(s.player_x, s.player_y, s.alive, s.ent_x, s.ent_right, s.ent_gold,
             flat_cells(out))


# The helpers that take the state's arrays are branch-free (no ``if``, ``and``, ``or``):
# a branch there makes numba count references to the arrays inside the loop (an atomic
# increment and decrement per array and env, which would cost more than the rules).


@njit(inline="always")
def _free_lanes(i, alive):  # pragma: no cover (compiled)
    """The number of free lanes (slots) of env ``i`` (``free_count``)."""
    free = 0
    for k in range(SLOTS):
        free += 1 - np.int64(alive[i, k])
    return free


@njit(inline="always")
def _nth_free_lane(i, alive, j):  # pragma: no cover (compiled)
    """The ``j``-th free slot of env ``i`` (``nth_free``): the number of slots with at most
    ``j`` free slots up to and including them."""
    seen = slot = 0
    for k in range(SLOTS):
        seen += 1 - np.int64(alive[i, k])
        slot += seen <= j
    return slot


@njit(inline="always")
def _enter(i, k, right, gold, alive, ent_x, ent_right, ent_gold):  # pragma: no cover
    """``spawn_entity``'s new entity in slot ``k``: on the left edge moving right, or on
    the right edge moving left; gold or an enemy."""
    ent_x[i, k] = (1 - np.int64(right)) * _LAST
    ent_right[i, k] = right
    ent_gold[i, k] = gold
    alive[i, k] = True


@njit(inline="always")
def _move_player(i, a, player_x, player_y):  # pragma: no cover (compiled)
    """``move_player``: ``l``/``r`` one column (0-9), ``u``/``d`` one row (1-8)."""
    x = player_x[i] + np.int64(a == RIGHT) - np.int64(a == LEFT)
    player_x[i] = min(max(x, 0), _LAST)
    y = player_y[i] + np.int64(a == DOWN) - np.int64(a == UP)
    player_y[i] = min(max(y, _TOP), _BOTTOM)


@njit(inline="always")
def _collide(i, player_x, player_y, alive, ent_x, ent_gold):  # pragma: no cover
    """``collide``: whether the entity of the player's lane is in the player's cell and is
    gold (picked up: its slot freed), or an enemy."""
    k = player_y[i] - 1  # the player's lane's slot (rows 1-8 after _move_player)
    met = alive[i, k] & (ent_x[i, k] == player_x[i])
    gold = met & ent_gold[i, k]
    alive[i, k] ^= gold
    return gold, met ^ gold


@njit(inline="always")
def _move_entities(i, alive, ent_x, ent_right):  # pragma: no cover (compiled)
    """``move_entities`` for one env whose move timer is 0: each live entity one cell its
    way, gone past an edge (its column stays where it went: -1 or 10)."""
    for k in range(SLOTS):
        live = alive[i, k]
        x = ent_x[i, k] + np.int64(live) * (2 * np.int64(ent_right[i, k]) - 1)
        ent_x[i, k] = x
        alive[i, k] = live & (x >= 0) & (x <= _LAST)


@njit(inline="always")
def _ramp_difficulty(spawn_speed, move_speed, ramp_timer,
                     ramp_index):  # pragma: no cover (compiled)
    """``ramp_difficulty`` on one env's speeds, timer and ramp count (returned): while
    spawns or moves can speed up, the timer counts down to -1; then spawns (and moves, on
    odd ramps) come one step sooner, and the timer restarts."""
    if spawn_speed > 1 or move_speed > 1:
        if ramp_timer < 0:
            if move_speed > 1 and ramp_index % 2 == 1:
                move_speed -= 1
            if spawn_speed > 1:
                spawn_speed -= 1
            return spawn_speed, move_speed, RAMP_INTERVAL, ramp_index + 1
        ramp_timer -= 1
    return spawn_speed, move_speed, ramp_timer, ramp_index


@jit
def _step(action, action_set, limit, always, ramping, last_action, key, counter, awaiting,
          player_x, player_y, spawn_speed, spawn_timer, move_speed, move_timer, ramp_timer,
          ramp_index, alive, ent_x, ent_right, ent_gold, reward,
          terminated):  # pragma: no cover (compiled)
    for i in range(len(action)):
        reward[i] = 0.0
        terminated[i] = False
        if awaiting[i]:  # a discarded step: no draw, no change (MinAtarEnv.discarded_rows)
            continue
        a = game_action(i, action, action_set, last_action, key, counter, limit, always)
        if spawn_timer[i] == 0:  # spawn_entity
            right = rand_below(next_word(key, counter, i), _RIGHT_LIMIT, _RIGHT_ALWAYS)
            gold = rand_below(next_word(key, counter, i), _GOLD_LIMIT, _GOLD_ALWAYS)
            free = _free_lanes(i, alive)
            if free:  # (every lane taken: nothing spawns, and no lane word is drawn)
                k = _nth_free_lane(i, alive, randint(next_word(key, counter, i), 0, free))
                _enter(i, k, right, gold, alive, ent_x, ent_right, ent_gold)
            spawn_timer[i] = spawn_speed[i]
        _move_player(i, a, player_x, player_y)
        gold, enemy = _collide(i, player_x, player_y, alive, ent_x, ent_gold)
        if move_timer[i] == 0:
            _move_entities(i, alive, ent_x, ent_right)
            move_timer[i] = move_speed[i]
            gold2, enemy2 = _collide(i, player_x, player_y, alive, ent_x, ent_gold)
            gold |= gold2
            enemy |= enemy2
        reward[i] = gold
        terminated[i] = enemy
        spawn_timer[i] -= 1
        move_timer[i] -= 1
        if ramping:
            spawn_speed[i], move_speed[i], ramp_timer[i], ramp_index[i] = _ramp_difficulty(
                spawn_speed[i], move_speed[i], ramp_timer[i], ramp_index[i])


@jit
def _reset(rows, player_x, player_y, spawn_speed, spawn_timer, move_speed, move_timer,
           ramp_timer, ramp_index, alive, ent_x, ent_right,
           ent_gold):  # pragma: no cover (compiled)
    for i in rows:
        player_x[i] = player_y[i] = _START
        for k in range(SLOTS):  # every slot field cleared, as the numpy reset_rows does
            alive[i, k] = ent_right[i, k] = ent_gold[i, k] = False
            ent_x[i, k] = 0
        spawn_speed[i] = spawn_timer[i] = INIT_SPAWN_SPEED
        move_speed[i] = move_timer[i] = INIT_MOVE_INTERVAL
        ramp_timer[i] = RAMP_INTERVAL
        ramp_index[i] = 0


@njit(inline="always")
def _draw_lane(i, k, alive, ent_x, ent_right, ent_gold, out):  # pragma: no cover
    """Slot ``k``'s entity on its lane (row ``k + 1``; ``_lane_images``): channel 1 (enemy)
    or 3 (gold) at its column, 2 (trail) in the cell behind it if that is on the board.
    Branch-free: a dead slot writes False at a clamped column (a cell only this slot
    draws, still clear)."""
    live = alive[i, k]
    x = min(max(ent_x[i, k], 0), _LAST)
    kind = _ENEMY + (_GOLD - _ENEMY) * np.int64(ent_gold[i, k])  # its channel
    out[cell(i, k + 1, x, kind, _CHANNELS)] = live
    back = x + 1 - 2 * np.int64(ent_right[i, k])
    on_board = min(max(back, 0), _LAST)
    out[cell(i, k + 1, on_board, _TRAIL, _CHANNELS)] = live & (back == on_board)


@njit(inline="always")
def _clear(i, out):  # pragma: no cover (compiled)
    """Every cell of env ``i``'s observation to False (one block of ``out``)."""
    first = cell(i, 0, 0, 0, _CHANNELS)
    for c in range(_CELLS):
        out[first + c] = False


@jit
def _observe(player_x, player_y, alive, ent_x, ent_right, ent_gold,
             out):  # pragma: no cover (compiled)
    for i in range(len(player_x)):
        _clear(i, out)  # env by env: its cells are still in the cache when drawn on
        for k in range(SLOTS):
            _draw_lane(i, k, alive, ent_x, ent_right, ent_gold, out)
        out[cell(i, player_y[i], player_x[i], _PLAYER, _CHANNELS)] = True
