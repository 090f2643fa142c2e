"""BatchFreeway's rules as one compiled loop over the envs (the numba layer: see
:mod:`batchenv.envs.minatar._numba`). Each step follows ``freeway.py``'s numpy kernels
decision for decision: ``move_chicken``, ``cross`` (with ``car_speeds``; its 16 words drawn
only by a crossing env), ``drive_cars``, then the timers. A reset is ``reset_rows`` (16
words: ``car_speeds``); the observation is ``observe`` with ``car_cell`` and
``trail_cell``."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from batchenv.envs.minatar._base import DOWN, UP
from batchenv.envs.minatar._numba import (
    cell,
    flat_cells,
    game_action,
    jit,
    next_word,
    randint,
    sticky_limit,
)
from batchenv.envs.minatar.freeway import (
    _CHANNELS,
    _START,
    CARS,
    CHICKEN_X,
    PLAYER_SPEED,
    TIME_LIMIT,
)
from batchenv.random import BatchRandom

_LAST = 9  # the last row and column of the board
_WIDTH = 10
_CHICKEN, _CAR, _SPEED1 = 0, 1, 2  # channels: a car's trail is in _SPEED1 - 1 + |speed|
_HALF = np.uint64(2**52)  # rand() < 0.5 exactly when word >> 11 < 2**52
_S11 = np.uint64(11)


def step_envs(env: Any, s: Any, action: np.ndarray, rng: BatchRandom
              ) -> tuple[np.ndarray, np.ndarray]:
    """``BatchFreeway.step_envs``, compiled."""
    limit, always = sticky_limit(env.sticky_action_prob)
    reward, terminated = env.reward_buffer, env.terminated_buffer
    _step(action, env.action_set, limit, always, s.last_action, s.rng_key, s.rng_counter,
          s.awaiting_reset, s.pos, s.move_timer, s.terminate_timer, s.car_x, s.car_timer,
          s.car_speed, reward, terminated)
    return reward, terminated


def reset_rows(env: Any, s: Any, rows: np.ndarray | slice, rng: BatchRandom) -> None:
    """``BatchFreeway.reset_rows``, compiled (``rng`` is ``rows``' streams)."""
    if isinstance(rows, slice):
        rows = np.arange(len(s))[rows]
    _reset(rows, s.rng_key, s.rng_counter, s.pos, s.move_timer, s.terminate_timer, s.car_x,
           s.car_timer, s.car_speed)


def observe(env: Any, s: Any, out: np.ndarray) -> None:
    """``BatchFreeway.observe``, compiled: writes every cell of ``out``."""
    _observe(s.pos, s.car_x, s.car_speed, flat_cells(out))


@njit(inline="always")
def _randomize_cars(i, key, counter, car_timer, car_speed):  # pragma: no cover (compiled)
    """``car_speeds`` for row ``i`` (``_randomize_cars``): 8 words of ``randint(1, 6)``,
    then 8 of ``sign(rand() - 0.5)``; a car's timer starts at ``|speed|``."""
    for j in range(CARS):
        car_speed[i, j] = randint(next_word(key, counter, i), 1, 6)
    for j in range(CARS):
        half = next_word(key, counter, i) >> _S11
        if half < _HALF:  # rand() - 0.5 < 0: left
            car_speed[i, j] = -car_speed[i, j]
        elif half == _HALF:  # exactly 0: speed 0 (see BatchFreeway's docstring)
            car_speed[i, j] = 0
        car_timer[i, j] = abs(car_speed[i, j])


@njit(inline="always")
def _move_chicken(i, a, pos, move_timer):  # pragma: no cover (compiled)
    """``move_chicken``: ``u``/``d`` move the chicken one row when its timer is 0, which
    restarts the timer at 3 (even when the move is against the edge)."""
    step = 1 if a == DOWN else -1 if a == UP else 0
    if step != 0 and move_timer[i] == 0:
        pos[i] = min(max(pos[i] + step, 0), _LAST)
        move_timer[i] = PLAYER_SPEED


@njit(inline="always")
def _drive_cars(i, pos, car_x, car_timer, car_speed):  # pragma: no cover (compiled)
    """``drive_cars``: a car whose timer is 0 moves one cell its way (wrapping) and restarts
    its timer at ``|speed|``, the others count down; the car of the chicken's lane (car
    ``pos - 1``) sends it to row 9 if it is in column 4 before or after its move. Written
    without branches: whether a car moves this step is a coin toss to the branch
    predictor."""
    lane_car = pos[i] - 1  # -1 or 8 (rows 0 and 9): no car
    hit = False
    for j in range(CARS):
        x = np.int64(car_x[i, j])
        speed = np.int64(car_speed[i, j])
        timer = np.int64(car_timer[i, j])
        moving = timer == 0
        met = x == CHICKEN_X
        car_timer[i, j] = abs(speed) if moving else timer - 1
        x += moving * ((speed > 0) * 2 - 1)  # right if positive, else left
        x = _LAST if x < 0 else (0 if x > _LAST else x)  # across the edge
        car_x[i, j] = x
        hit |= (j == lane_car) & (met | (x == CHICKEN_X))
    if hit:
        pos[i] = _START


@jit
def _step(action, action_set, limit, always, last_action, key, counter, awaiting, pos,
          move_timer, terminate_timer, car_x, car_timer, car_speed, reward,
          terminated):  # pragma: no cover (compiled)
    for i in range(len(action)):
        reward[i] = 0.0
        terminated[i] = False
        if awaiting[i]:  # a discarded step: no draw, no change (MinAtarEnv.discarded_rows)
            continue
        a = game_action(i, action, action_set, last_action, key, counter, limit, always)
        _move_chicken(i, a, pos, move_timer)
        if pos[i] == 0:  # cross: score, back to the start, new car speeds (16 words)
            reward[i] = 1.0
            _randomize_cars(i, key, counter, car_timer, car_speed)
            pos[i] = _START
        _drive_cars(i, pos, car_x, car_timer, car_speed)
        if move_timer[i] > 0:
            move_timer[i] -= 1
        terminate_timer[i] -= 1
        terminated[i] = terminate_timer[i] < 0


@jit
def _reset(rows, key, counter, pos, move_timer, terminate_timer, car_x, car_timer,
           car_speed):  # pragma: no cover (compiled)
    for i in rows:
        _randomize_cars(i, key, counter, car_timer, car_speed)  # reset words 0-15
        for j in range(CARS):
            car_x[i, j] = 0
        pos[i] = _START
        move_timer[i] = PLAYER_SPEED
        terminate_timer[i] = TIME_LIMIT


@jit
def _observe(pos, car_x, car_speed, out):  # pragma: no cover (compiled)
    size = _WIDTH * _WIDTH * _CHANNELS
    for i in range(len(pos)):
        # one pass: each env's block cleared and drawn while it is in cache
        start = cell(i, 0, 0, 0, _CHANNELS)
        out[start:start + size] = False
        out[cell(i, pos[i], CHICKEN_X, _CHICKEN, _CHANNELS)] = True
        for j in range(CARS):  # car j drives lane (row) j + 1
            x = np.int64(car_x[i, j])
            speed = np.int64(car_speed[i, j])
            out[cell(i, j + 1, x, _CAR, _CHANNELS)] = True
            # its trail: the cell behind it (across the edge), in the channel of its speed
            # (a speed of 0, see BatchFreeway's docstring, in speed1)
            back = x + 1 - 2 * (speed > 0)
            back = _LAST if back < 0 else (0 if back > _LAST else back)
            out[cell(i, j + 1, back, _SPEED1 - 1 + max(abs(speed), 1), _CHANNELS)] = True
