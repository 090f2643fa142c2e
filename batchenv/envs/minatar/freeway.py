"""BatchFreeway: MinAtar's Freeway (``minatar/environments/freeway.py``, MinAtar 1.0.15),
batched."""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np

from batchenv import perenv
from batchenv.envs.minatar._base import (
    DOWN,
    GRID,
    UP,
    MinAtarEnv,
    MinAtarState,
    randint,
    sticky_action_env,
)
from batchenv.random import BatchRandom
from batchenv.state import Field

__all__ = ["BatchFreeway", "FreewayState"]

PLAYER_SPEED = 3  # the chicken moves at most once every 3 steps (freeway.py: player_speed)
TIME_LIMIT = 2500  # freeway.py: time_limit; the episode ends after 2501 steps
CARS = 8  # one car per lane, lanes are rows 1-8
CHICKEN_X = 4  # the chicken's column
_START = GRID - 1  # the chicken's row at the start and after a crossing or a hit
_LANES = tuple(range(1, CARS + 1))  # car i drives row i+1
_CHANNELS = 7
_LAST = GRID - 1  # the last row and column of the board
_WORD_HALF, _WORD_S11 = np.uint64(2**52), np.uint64(11)  # (uint64 scalars for per-env rules)
_HALF = np.array(2**52, dtype=np.int64)  # rand() - 0.5 as an integer: (w >> 11) - 2**52
_S11 = np.array(11, dtype=np.uint64)
_ZERO, _ONE, _NINE, _TEN = (np.array(v, dtype=np.int8) for v in (0, 1, 9, 10))
#: The chicken's lane as a byte mask over the 8 lanes (bool (8,) viewed as one uint64): row
#: r (1-8) sets byte r - 1; rows 0 and 9 are no lane.
_LANE_BYTE = np.array([0, *(1 << (8 * i) for i in range(CARS)), 0], dtype=np.uint64)


class FreewayState(MinAtarState):
    """One game per row (``BatchFreeway.state_dtype`` is made from these annotations)."""

    pos: Field[np.int8]  # the chicken's row (0 top, 9 bottom); its column is 4
    move_timer: Field[np.int8]  # steps until the chicken may move again
    terminate_timer: Field[np.int16]  # counts down from 2500; the episode ends below 0
    car_x: Annotated[Field[np.int8], (CARS,)]  # column of the car in lane i (row i+1)
    car_timer: Annotated[Field[np.int8], (CARS,)]  # steps until the car moves
    car_speed: Annotated[Field[np.int8], (CARS,)]  # +-(1..5): moves every |speed| steps,
    #                                                right if positive


class BatchFreeway(MinAtarEnv[FreewayState]):
    """## Description

    MinAtar's Freeway for thousands of games at once, step for step the rules of
    ``minatar/environments/freeway.py`` (MinAtar 1.0.15; Young & Tian, 2019). A chicken
    crosses eight lanes of traffic from the bottom row to the top; it can move up or down
    at most once every 3 steps. Each car drives one lane at its own speed (it moves one
    cell every 1 to 5 steps) and direction, wrapping around at the edges. A car that meets
    the chicken sends it back to the bottom; reaching the top scores and sends it back too,
    and gives every car a new random speed and direction. Tested step by step against the
    ``minatar`` package (``tests/test_minatar_parity.py``).

    Each step applies, in MinAtar's order: sticky actions, :func:`move_chicken`,
    :func:`cross` (score, new car speeds), :func:`drive_cars` (and collisions), the timers.

    ## Action Space

    ``Discrete(6)`` (MinAtar's ``n, l, u, r, d, f``; ``u`` and ``d`` move), or with
    ``minimal_action_set=True`` (``-v1``) ``Discrete(3)``: ``n, u, d``.

    ## Observation Space

    ``Box(0, 1, (10, 10, 7), bool)``, MinAtar's channels in its order: 0 ``chicken``,
    1 ``car``, 2-6 ``speed1``-``speed5``: the cell behind each car (its direction), in the
    channel of its speed (a car with speed k moves once every k steps).

    ## Rewards

    +1 for each crossing (reaching row 0).

    ## Starting State

    The chicken in row 9 (column 4); every car in column 0 of its lane, with a speed
    ``randint(1, 6)`` and a direction ``sign(rand() - 0.5)`` (16 random words).

    ## Episode End

    Terminated after 2501 steps (MinAtar's time limit of 2500 counts down to -1). There is
    nothing else that ends an episode.

    ## Arguments

    ``BatchFreeway(num_envs, *, sticky_action_prob=0.1, minimal_action_set=False,
    difficulty_ramping=True, render_scale=8, **BatchEnv options)``. Freeway has no
    difficulty ramp (MinAtar ignores ``difficulty_ramping`` here too).
    ``kernels="auto"`` (default): the per-env kernels compiled when numba is installed,
    else the numpy kernels; ``"numpy"``, ``"numba"`` or ``"python"`` (the per-env kernels
    as a Python loop) to choose, and ``num_threads=`` for the compiled loop (identical
    results: docs/minatar.md).

    ## Random Words

    Each step draws 1 word per env, the sticky-action draw (``Environment.act``'s
    ``rand()``, word 0), and a crossing 16 more: words 1-8 the 8 ``randint(1, 6, 8)`` of
    ``_randomize_cars`` and words 9-16 its 8 ``rand(8)``. A reset draws 16 (words 0-7 and
    8-15 for the same two calls).

    ## Quirks of the reference, reproduced

    * The chicken's move timer starts at 3, so its first move comes on step 4.
    * A car that drives into the chicken's cell and one the chicken walks into both send
      it back; a crossing sends it back to row 9 before the cars move.
    * ``last_action`` carries over from one episode to the next (see BatchBreakout).

    Not reproduced: a direction ``sign(rand() - 0.5)`` of exactly 0 (probability 2**-53
    per car and crossing) makes MinAtar's car drive left with speed 0 and its ``state()``
    reuse the previous car's trail channel (or fail); here such a car also drives left
    every step, and its trail is drawn in channel ``speed1``.

    ## Version History

    * v0 / v1: as MinAtar 1.0.15's ``MinAtar/Freeway-v0`` / ``-v1``.
    """

    game = "freeway"
    channels = ("chicken", "car", "speed1", "speed2", "speed3", "speed4", "speed5")
    minimal_actions = (0, 2, 4)
    step_words = 1
    reset_words = 2 * CARS
    event_words = "and 16 on a crossing"
    ansi_chars = "C#12345"
    state_type = FreewayState

    def reset_envs(self, s: FreewayState, rng: BatchRandom) -> None:
        self.reset_rows(s, slice(None), rng)

    def reset_rows(self, s: FreewayState, rows: np.ndarray | slice, rng: BatchRandom
                   ) -> None:
        words = rng.draws(self.reset_words)
        speed = car_speeds(words[:CARS], words[CARS:])
        s.car_x[rows] = 0
        s.car_speed[rows] = speed
        s.car_timer[rows] = np.abs(speed)
        s.pos[rows] = _START
        s.move_timer[rows] = PLAYER_SPEED
        s.terminate_timer[rows] = TIME_LIMIT

    def step_envs(self, s: FreewayState, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        a = self.game_actions(s, action, self.step_draws(s, rng)[0])
        move_chicken(s, a)
        reward = self.reward_buffer
        crossing = s.pos == 0
        np.copyto(reward, crossing)
        if crossing.any():
            rows, words = self.event_draws(s, rng, crossing, 2 * CARS)
            cross(s, crossing, rows, words)
        drive_cars(s)
        s.move_timer -= s.move_timer > 0
        s.terminate_timer -= 1
        terminated = self.terminated_buffer
        np.less(s.terminate_timer, 0, out=terminated)
        return reward, terminated

    def observe(self, s: FreewayState, out: np.ndarray) -> None:
        out.fill(False)
        grid = self.grid(len(s))
        flat = out.reshape(-1)
        flat[grid.cells(s.pos, np.full_like(s.pos, CHICKEN_X), 0)] = True
        lanes = grid.lane_base(_LANES)  # car i drives lane (row) i+1
        # a car's cell, and its trail: the cell behind it (across the edge), in the
        # channel of its speed
        flat[np.add(lanes, car_cell(s.car_x))] = True
        flat[np.add(lanes, trail_cell(s.car_x, s.car_speed))] = True

    # ------------------------------------------------------------ per-env kernels
    # The same rules for one env, row i (batchenv.perenv: compiled by numba into one loop
    # over the batch), decision for decision and draw for draw as the numpy kernels above.

    @staticmethod
    def reset_env(p: Any, s: Any, i: int) -> None:
        randomize_cars_env(s, i)  # reset words 0-15
        for j in range(CARS):
            s.car_x[i, j] = 0
        s.pos[i] = _START
        s.move_timer[i] = PLAYER_SPEED
        s.terminate_timer[i] = TIME_LIMIT

    @staticmethod
    def step_env(p: Any, s: Any, i: int, action: int) -> tuple[float, bool]:
        a = sticky_action_env(p, s, i, action)
        move_chicken_env(s, i, a)
        reward = 0.0
        if s.pos[i] == 0:  # cross: score, new car speeds (16 words), back to the start
            reward = 1.0
            randomize_cars_env(s, i)
            s.pos[i] = _START
        drive_cars_env(s, i)
        s.move_timer[i] -= s.move_timer[i] > 0  # (down to 0; no branch: a coin toss)
        s.terminate_timer[i] -= 1
        return reward, s.terminate_timer[i] < 0

    @staticmethod
    def observe_env(p: Any, s: Any, i: int, obs: np.ndarray) -> None:
        obs[:] = False
        obs[s.pos[i], CHICKEN_X, 0] = True
        for j in range(CARS):  # car j drives lane (row) j + 1
            x = s.car_x[i, j]
            speed = s.car_speed[i, j]
            obs[j + 1, x, 1] = True
            # its trail: the cell behind it (across the edge), in the channel of its
            # speed (a speed of 0, see the docstring, in speed1)
            back = x - 1 if speed > 0 else x + 1
            back = _LAST if back < 0 else (0 if back > _LAST else back)
            obs[j + 1, back, 1 + max(abs(speed), 1)] = True


def car_speeds(speed_words: np.ndarray, direction_words: np.ndarray) -> np.ndarray:
    """``_randomize_cars``: ``speeds = randint(1, 6, 8) * sign(rand(8) - 0.5)`` from
    draw-major words ``(8, rows)``; returns ``(rows, 8)`` int8."""
    speed = randint(speed_words, 1, 6).astype(np.int8)
    half = (direction_words >> _S11).astype(np.int64)
    half -= _HALF  # (rand() - 0.5) * 2**53, exactly
    speed *= np.sign(half).astype(np.int8)
    return speed.T


def move_chicken(s: FreewayState, action: np.ndarray) -> None:
    """``u``/``d`` move the chicken one row when its move timer is 0, which restarts the
    timer at 3."""
    step = (action == DOWN).view(np.int8) - (action == UP).view(np.int8)
    step *= s.move_timer == 0
    s.pos += step
    np.maximum(s.pos, _ZERO, out=s.pos)
    np.minimum(s.pos, _NINE, out=s.pos)
    step *= step  # 1 where the chicken moved (the timer is 0 there)
    step *= PLAYER_SPEED
    s.move_timer += step


def cross(s: FreewayState, crossing: np.ndarray, rows: np.ndarray, words: np.ndarray
          ) -> None:
    """A chicken in row 0 (``crossing``) goes back to row 9, and every car of its game
    gets a new speed and direction (``rows``: the crossing envs, ``words``: their 16)."""
    speed = car_speeds(words[:CARS], words[CARS:])
    s.car_speed[rows] = speed
    s.car_timer[rows] = np.abs(speed)
    np.copyto(s.pos, _START, where=crossing)


def drive_cars(s: FreewayState) -> None:
    """Every car whose timer is 0 moves one cell its way (wrapping around) and restarts its
    timer at ``|speed|``; the others count down. The car in the chicken's lane sends it to
    row 9 if it is in column 4 before or after its move. (MinAtar checks each car in turn,
    but only the car of the chicken's lane can meet it, and a chicken sent back to row 9
    is in no lane.)"""
    met = s.car_x == CHICKEN_X
    moving = s.car_timer == 0
    restart = np.abs(s.car_speed)  # a moving car's timer: 0 - 1 + (|speed| + 1)
    restart += _ONE
    restart *= moving
    s.car_timer -= _ONE
    s.car_timer += restart
    step = (s.car_speed > 0).view(np.int8) * np.int8(2)  # right if positive, else left
    step -= _ONE
    step *= moving
    s.car_x += step
    wrap = (s.car_x < 0).view(np.int8) - (s.car_x > _NINE).view(np.int8)
    wrap *= _TEN  # off the left edge to column 9, off the right edge to column 0
    s.car_x += wrap
    met |= s.car_x == CHICKEN_X
    hit = met.view(np.uint64)[:, 0] & _LANE_BYTE.take(s.pos)  # met in the chicken's lane
    np.copyto(s.pos, _START, where=hit.astype(bool))


def car_cell(x: np.ndarray) -> np.ndarray:
    """Offsets in a lane (10 cells of 7 channels) of the cars' cells (channel ``car``)."""
    cell = x * np.int8(_CHANNELS)
    cell += _ONE
    return cell


def trail_cell(x: np.ndarray, speed: np.ndarray) -> np.ndarray:
    """Offsets in a lane of the cars' trails: the cell behind each car (the next one
    across the edge), in channel ``speed|speed|`` (channel 1 + |speed|; a speed of 0,
    see the docstring, in ``speed1``)."""
    back = x - (speed > 0).view(np.int8)  # behind: left of a car moving right
    back += (speed <= 0).view(np.int8)  # right of one moving left
    back += (back < 0).view(np.int8) * _TEN
    back -= (back > _NINE).view(np.int8) * _TEN
    cell = back * np.int8(_CHANNELS)
    cell += np.maximum(np.abs(speed), _ONE)
    cell += _ONE
    return cell


# ---------------------------------------------------------------- per-env rules (row i)
@perenv.rule
def randomize_cars_env(s: Any, i: int) -> None:
    """:func:`car_speeds` for row ``i`` (MinAtar's ``_randomize_cars``): 8 words of
    ``randint(1, 6)``, then 8 of ``sign(rand() - 0.5)``; a car's timer starts at
    ``|speed|``."""
    for j in range(CARS):
        s.car_speed[i, j] = perenv.integers(s, i, 1, 6)
    for j in range(CARS):
        half = perenv.bits(s, i) >> _WORD_S11  # rand() * 2**53
        if half < _WORD_HALF:  # rand() - 0.5 < 0: left
            s.car_speed[i, j] = -s.car_speed[i, j]
        elif half == _WORD_HALF:  # exactly 0: speed 0 (see BatchFreeway's docstring)
            s.car_speed[i, j] = 0
        s.car_timer[i, j] = abs(s.car_speed[i, j])


@perenv.rule
def move_chicken_env(s: Any, i: int, a: int) -> None:
    """:func:`move_chicken` for row ``i``: ``u``/``d`` move the chicken one row when its
    timer is 0, which restarts the timer at 3 (even against the edge). (Without branches:
    the action is a coin toss to the branch predictor.)"""
    step = (np.int64(a == DOWN) - np.int64(a == UP)) * np.int64(s.move_timer[i] == 0)
    s.pos[i] = min(max(s.pos[i] + step, 0), _LAST)
    s.move_timer[i] += PLAYER_SPEED * step * step


# drive_cars_env sees the 8 cars of an env as one uint64 word per field (perenv.words of the
# row of car_x, car_timer, car_speed: byte j is car j, little-endian as _LANE_BYTE reads
# it), and moves all 8 in a dozen word operations instead of 8 turns of a loop whose branch
# (does this car move?) the branch predictor cannot guess. Bytes never carry into each
# other: every byte's sum stays below 256 and every difference non-negative for the states
# the game reaches (columns 0-9, speeds -5 to 5).
_U = np.uint64
_BYTE = _U(0xFF)
_EACH = _U(0x0101010101010101)  # 1 in every byte: k * _EACH is k in every byte
_LOW7 = _U(0x7F) * _EACH
_SIGN = _U(0x80) * _EACH  # each byte's top bit
_AT_CHICKEN = _U(CHICKEN_X) * _EACH
_TO_TEN = _U(0x80 - GRID) * _EACH  # added to bytes of 0-18, sets the top bit of those >= 10
_S3, _S7 = _U(3), _U(7)
_WORD_LAST = _U(_LAST)
_WORD_TEN = _U(GRID)


@perenv.rule
def bytes_zero(w: np.uint64) -> np.uint64:
    """1 in each byte of ``w`` that is 0, else 0 (exact: no carry between bytes)."""
    return (~(((w & _LOW7) + _LOW7) | w) & _SIGN) >> _S7


@perenv.rule
def drive_cars_env(s: Any, i: int) -> None:
    """:func:`drive_cars` for row ``i``, its 8 cars at once (a byte each): a car whose timer
    is 0 moves one cell its way (wrapping) and restarts its timer at ``|speed|``, the
    others count down; the car of the chicken's lane sends it to row 9 if it is in column
    4 before or after its move."""
    car_x = perenv.words(s.car_x[i])
    car_timer = perenv.words(s.car_timer[i])
    x, timer, speed = car_x[0], car_timer[0], perenv.words(s.car_speed[i])[0]
    moving = bytes_zero(timer)  # 1 in the bytes of the cars that move
    moving_byte = moving * _BYTE
    negative = (speed & _SIGN) >> _S7
    size = (speed ^ (negative * _BYTE)) + negative  # |speed|: -s is ~s + 1
    right = (((speed & _LOW7) + _LOW7) & ~speed & _SIGN) >> _S7  # speed > 0
    # restart at |speed| where moving, else count down (those bytes are >= 1: no borrow)
    car_timer[0] = (size & moving_byte) | (timer - (_EACH & ~moving_byte))
    # a move is +1 to the right (9 - 8), +9 to the left; then mod 10
    moved = x + moving * _WORD_LAST - ((moving & right) << _S3)
    wrapped = ((moved + _TO_TEN) & _SIGN) >> _S7  # 1 where the car left the board
    new_x = moved - wrapped * _WORD_TEN
    car_x[0] = new_x
    met = bytes_zero(x ^ _AT_CHICKEN) | bytes_zero(new_x ^ _AT_CHICKEN)
    if met & _LANE_BYTE[s.pos[i]]:  # met in the chicken's lane (rows 0 and 9: no lane)
        s.pos[i] = _START
