"""BatchFreeway: MinAtar's Freeway (``minatar/environments/freeway.py``, MinAtar 1.0.15),
batched."""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np

from batchenv import perenv
from batchenv.envs.minatar._base import (
    DOWN,
    GRID,
    LAST,
    UP,
    Coordinate,
    MinAtarEnv,
    MinAtarState,
    sticky_action_env,
)
from batchenv.state import Field, Range

__all__ = ["BatchFreeway", "FreewayState"]

PLAYER_SPEED = 3  # the chicken moves at most once every 3 steps (freeway.py: player_speed)
TIME_LIMIT = 2500  # freeway.py: time_limit; the episode ends after 2501 steps
CARS = 8  # one car per lane, lanes are rows 1-8
MAX_SPEED = 5  # freeway.py, _randomize_cars: randint(1, 6), moves every 1-5 steps
CHICKEN_X = 4  # the chicken's column
_START = LAST  # the chicken's row at the start and after a crossing or a hit
_WORD_HALF, _WORD_S11 = np.uint64(2**52), np.uint64(11)  # (uint64 scalars for the rules)
#: The chicken's lane as a byte mask over the 8 lanes (bool (8,) viewed as one uint64): row
#: r (1-8) sets byte r - 1; rows 0 and 9 are no lane.
_LANE_BYTE = np.array([0, *(1 << (8 * i) for i in range(CARS)), 0], dtype=np.uint64)


class FreewayState(MinAtarState):
    """One game per row (``BatchFreeway.state_dtype`` is made from these annotations)."""

    pos: Coordinate  # the chicken's row (0 top, 9 bottom; its lane's byte: _LANE_BYTE[pos]);
    #                  its column is 4
    move_timer: Annotated[Field[np.int8], Range(0, PLAYER_SPEED)]  # steps until the
    #                                                 chicken may move again
    # counts down from 2500; the episode ends below 0 (-1: a game over, which only an env
    # awaiting its reset may hold: check_state)
    terminate_timer: Annotated[Field[np.int16], Range(-1, TIME_LIMIT)]
    # the car in lane i (row i+1): its column, steps until it moves, and its speed (it
    # moves every |speed| steps, right if positive; 0 only from a direction draw of exactly
    # 0.5, see the docstring). drive_cars moves the 8 cars as the bytes of one word, which
    # these ranges keep from carrying into each other.
    car_x: Annotated[Field[np.int8], (CARS,), Range(0, LAST)]
    car_timer: Annotated[Field[np.int8], (CARS,), Range(0, MAX_SPEED)]
    car_speed: Annotated[Field[np.int8], (CARS,), Range(-MAX_SPEED, MAX_SPEED)]


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

    Each step applies, in MinAtar's order: sticky actions, :func:`move_chicken`, a
    crossing (score, new car speeds: :func:`randomize_cars`), :func:`drive_cars` (and
    collisions), the timers.

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
    ``kernels="auto"`` (default): the rules compiled by numba when it is installed, else
    run as a Python loop (with a warning); ``"numba"`` or ``"python"`` to choose, and
    ``num_threads=`` for the compiled loop (identical results: docs/minatar.md).

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

    * v0 / v1: as MinAtar 1.0.15's ``MinAtar/Freeway-v0`` / ``-v1``. Its rules are
      written once, as per-env kernels: ``kernels="numpy"`` (a second copy of the rules as
      numpy kernels) is gone; the results are the same.
    """

    game = "freeway"
    channels = ("chicken", "car", "speed1", "speed2", "speed3", "speed4", "speed5")
    minimal_actions = (0, 2, 4)
    step_words = 1
    reset_words = 2 * CARS
    event_words = "and 16 on a crossing"
    ansi_chars = "C#12345"
    state_type = FreewayState

    def check_state(self, states: np.ndarray) -> dict[str, np.ndarray]:
        """A game over (``terminate_timer`` -1) only in an env awaiting its reset (stepped
        on, the timer would leave its range)."""
        return {"terminate_timer -1 (the game is over) in an env not awaiting a reset":
                (states["terminate_timer"] < 0) & ~states["awaiting_reset"]}

    # ------------------------------------------------------------ kernels (row i)
    @staticmethod
    def reset_env(p: Any, s: Any, i: int) -> None:
        randomize_cars(s, i)  # reset words 0-15
        for j in range(CARS):
            s.car_x[i, j] = 0
        s.pos[i] = _START
        s.move_timer[i] = PLAYER_SPEED
        s.terminate_timer[i] = TIME_LIMIT

    @staticmethod
    def step_env(p: Any, s: Any, i: int, action: int) -> tuple[float, bool]:
        a = sticky_action_env(p, s, i, action)
        move_chicken(s, i, a)
        reward = 0.0
        if s.pos[i] == 0:  # cross: score, new car speeds (16 words), back to the start
            reward = 1.0
            randomize_cars(s, i)
            s.pos[i] = _START
        drive_cars(s, i)
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
            back = LAST if back < 0 else (0 if back > LAST else back)
            obs[j + 1, back, 1 + max(abs(speed), 1)] = True


# ---------------------------------------------------------------- rules (row i)
@perenv.rule
def randomize_cars(s: Any, i: int) -> None:
    """MinAtar's ``_randomize_cars``: ``speeds = randint(1, 6, 8) * sign(rand(8) - 0.5)``,
    8 words of ``randint(1, 6)``, then 8 of ``sign(rand() - 0.5)``; a car's timer starts
    at ``|speed|``."""
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
def move_chicken(s: Any, i: int, a: int) -> None:
    """``u``/``d`` move the chicken one row when its move timer is 0, which restarts the
    timer at 3 (even against the edge). (Without branches: the action is a coin toss to
    the branch predictor.)"""
    step = (np.int64(a == DOWN) - np.int64(a == UP)) * np.int64(s.move_timer[i] == 0)
    s.pos[i] = min(max(s.pos[i] + step, 0), LAST)
    s.move_timer[i] += PLAYER_SPEED * step * step


# drive_cars sees the 8 cars of an env as one uint64 word per field (perenv.words of the
# row of car_x, car_timer, car_speed: byte j is car j, little-endian as _LANE_BYTE reads
# it), and moves all 8 in a dozen word operations instead of 8 turns of a loop whose branch
# (does this car move?) the branch predictor cannot guess. Bytes never carry into each
# other: every byte's sum stays below 256 and every difference non-negative for the states
# inside FreewayState's ranges (columns 0-9, speeds -5 to 5, timers 0-5).
_U = np.uint64
_BYTE = _U(0xFF)
_EACH = _U(0x0101010101010101)  # 1 in every byte: k * _EACH is k in every byte
_LOW7 = _U(0x7F) * _EACH
_SIGN = _U(0x80) * _EACH  # each byte's top bit
_AT_CHICKEN = _U(CHICKEN_X) * _EACH
_TO_TEN = _U(0x80 - GRID) * _EACH  # added to bytes of 0-18, sets the top bit of those >= 10
_S3, _S7 = _U(3), _U(7)
_WORD_LAST = _U(LAST)
_WORD_TEN = _U(GRID)


@perenv.rule
def bytes_zero(w: np.uint64) -> np.uint64:
    """1 in each byte of ``w`` that is 0, else 0 (exact: no carry between bytes)."""
    return (~(((w & _LOW7) + _LOW7) | w) & _SIGN) >> _S7


@perenv.rule
def drive_cars(s: Any, i: int) -> None:
    """Row ``i``'s 8 cars at once (a byte each): a car whose timer is 0 moves one cell its
    way (wrapping around) and restarts its timer at ``|speed|``, the others count down;
    the car of the chicken's lane sends it to row 9 if it is in column 4 before or after
    its move. (MinAtar checks each car in turn, but only the car of the chicken's lane
    can meet it, and a chicken sent back to row 9 is in no lane.)"""
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
