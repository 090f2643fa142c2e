"""BatchFreeway's rules as one compiled loop over the envs (the numba layer: see
:mod:`batchenv.envs.minatar._numba`). Each step follows ``freeway.py``'s numpy kernels
decision for decision: ``move_chicken``, ``cross`` (with ``car_speeds``; its 16 words drawn
only by a crossing env), ``drive_cars``, then the timers. A reset is ``reset_rows`` (16
words: ``car_speeds``); the observation is ``observe`` with ``car_cell`` and
``trail_cell``.

The step sees an env's 8 cars as one word per field: ``car_x``, ``car_timer`` and
``car_speed`` are ``(n, 8)`` int8, so row ``i`` of each is one uint64 whose byte ``j`` is
car ``j`` (little-endian, as ``freeway._LANE_BYTE`` reads ``met``). ``drive_cars`` is then a
dozen word operations on all 8 cars at once (bytes never carry into each other: every
byte's sum stays below 256 and every difference non-negative, for the states the game
reaches: columns 0-9, speeds -5 to 5), instead of 8 turns of a loop whose branch (does
this car move?) the branch predictor cannot guess.
"""

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
    _LANE_BYTE,
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
_U = np.uint64
_HALF = _U(2**52)  # rand() < 0.5 exactly when word >> 11 < 2**52
_S11 = _U(11)

# bytes of a word of 8 cars (byte j: car j)
_BYTE = _U(0xFF)
_EACH = _U(0x0101010101010101)  # 1 in every byte: k * _EACH is k in every byte
_LOW7 = 0x7F * _EACH
_SIGN = 0x80 * _EACH  # each byte's top bit
_AT_CHICKEN = CHICKEN_X * _EACH
_TO_TEN = (0x80 - _WIDTH) * _EACH  # added to bytes of 0-18, sets the top bit of those >= 10
_S3, _S7 = _U(3), _U(7)


def step_envs(env: Any, s: Any, action: np.ndarray, rng: BatchRandom
              ) -> tuple[np.ndarray, np.ndarray]:
    """``BatchFreeway.step_envs``, compiled."""
    limit, always = sticky_limit(env.sticky_action_prob)
    reward, terminated = env.reward_buffer, env.terminated_buffer
    _step(action, env.action_set, limit, always, s.last_action, s.rng_key, s.rng_counter,
          s.awaiting_reset, s.pos, s.move_timer, s.terminate_timer, _words(s.car_x),
          _words(s.car_timer), _words(s.car_speed), reward, terminated)
    return reward, terminated


def reset_rows(env: Any, s: Any, rows: np.ndarray | slice, rng: BatchRandom) -> None:
    """``BatchFreeway.reset_rows``, compiled (``rng`` is ``rows``' streams)."""
    if isinstance(rows, slice):
        rows = np.arange(len(s))[rows]
    _reset(rows, s.rng_key, s.rng_counter, s.pos, s.move_timer, s.terminate_timer,
           _words(s.car_x), _words(s.car_timer), _words(s.car_speed))


def observe(env: Any, s: Any, out: np.ndarray) -> None:
    """``BatchFreeway.observe``, compiled: writes every cell of ``out``."""
    _observe(s.pos, s.car_x, s.car_speed, flat_cells(out))


def _words(cars: np.ndarray) -> np.ndarray:
    """An ``(n, 8)`` int8 field of the cars as ``(n,)`` uint64 words (a view: writes go
    to the field), byte ``j`` of word ``i`` being car ``j`` of env ``i``."""
    return cars.view(np.uint64).reshape(-1)


@njit(inline="always")
def _bytes_zero(w: np.uint64) -> np.uint64:  # pragma: no cover (compiled)
    """1 in each byte of ``w`` that is 0, else 0 (exact: no carry between bytes)."""
    return (~(((w & _LOW7) + _LOW7) | w) & _SIGN) >> _S7


@njit(inline="always")
def _randomize_cars(i, key, counter, car_timer, car_speed):  # pragma: no cover (compiled)
    """``car_speeds`` for row ``i`` (``_randomize_cars``): 8 words of ``randint(1, 6)``,
    then 8 of ``sign(rand() - 0.5)``; a car's timer starts at ``|speed|``."""
    magnitude = _U(0)
    for j in range(CARS):
        magnitude |= _U(randint(next_word(key, counter, i), 1, 6)) << _U(8 * j)
    speed = timer = _U(0)
    for j in range(CARS):
        half = next_word(key, counter, i) >> _S11
        m = (magnitude >> _U(8 * j)) & _BYTE
        if half < _HALF:  # rand() - 0.5 < 0: left (the int8 -m)
            m_signed = (_U(256) - m) & _BYTE
        elif half == _HALF:  # exactly 0: speed 0 (see BatchFreeway's docstring)
            m = m_signed = _U(0)
        else:
            m_signed = m
        speed |= m_signed << _U(8 * j)
        timer |= m << _U(8 * j)
    car_speed[i] = speed
    car_timer[i] = timer


@njit(inline="always")
def _move_chicken(i, a, pos, move_timer):  # pragma: no cover (compiled)
    """``move_chicken``: ``u``/``d`` move the chicken one row when its timer is 0, which
    restarts the timer at 3 (even when the move is against the edge)."""
    step = (np.int64(a == DOWN) - np.int64(a == UP)) * np.int64(move_timer[i] == 0)
    pos[i] = min(max(pos[i] + step, 0), _LAST)
    move_timer[i] += PLAYER_SPEED * step * step  # (no branch: the action is a coin toss)


@njit(inline="always")
def _drive_cars(i, pos, car_x, car_timer, car_speed):  # pragma: no cover (compiled)
    """``drive_cars`` on the 8 cars of row ``i`` at once (one byte each): a car whose timer
    is 0 moves one cell its way (wrapping) and restarts its timer at ``|speed|``, the others
    count down; the car of the chicken's lane sends it to row 9 if it is in column 4 before
    or after its move."""
    x, timer, speed = car_x[i], car_timer[i], car_speed[i]
    moving = _bytes_zero(timer)  # 1 in the bytes of the cars that move
    moving_byte = moving * _BYTE
    negative = (speed & _SIGN) >> _S7
    size = (speed ^ (negative * _BYTE)) + negative  # |speed|: -s is ~s + 1
    right = (((speed & _LOW7) + _LOW7) & ~speed & _SIGN) >> _S7  # speed > 0
    # restart at |speed| where moving, else count down (those bytes are >= 1: no borrow)
    car_timer[i] = (size & moving_byte) | (timer - (_EACH & ~moving_byte))
    # a move is +1 to the right (9 - 8), +9 to the left; then mod 10
    moved = x + moving * _U(_LAST) - ((moving & right) << _S3)
    wrapped = ((moved + _TO_TEN) & _SIGN) >> _S7  # 1 where the car left the board
    new_x = moved - wrapped * _U(_WIDTH)
    car_x[i] = new_x
    met = _bytes_zero(x ^ _AT_CHICKEN) | _bytes_zero(new_x ^ _AT_CHICKEN)
    if met & _LANE_BYTE[pos[i]]:  # met in the chicken's lane (rows 0 and 9: no lane)
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
        move_timer[i] -= move_timer[i] > 0
        terminate_timer[i] -= 1
        terminated[i] = terminate_timer[i] < 0


@jit
def _reset(rows, key, counter, pos, move_timer, terminate_timer, car_x, car_timer,
           car_speed):  # pragma: no cover (compiled)
    for i in rows:
        _randomize_cars(i, key, counter, car_timer, car_speed)  # reset words 0-15
        car_x[i] = 0
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
