"""BatchFreeway: MinAtar's Freeway (``minatar/environments/freeway.py``, MinAtar 1.0.15),
batched."""

from __future__ import annotations

from typing import Any

import numpy as np

from batchenv.envs.minatar._base import (
    DOWN,
    GRID,
    STICKY_FIELDS,
    UP,
    MinAtarEnv,
    randint,
)
from batchenv.random import BatchRandom
from batchenv.state import State

__all__ = ["BatchFreeway"]

PLAYER_SPEED = 3  # the chicken moves at most once every 3 steps (freeway.py: player_speed)
TIME_LIMIT = 2500  # freeway.py: time_limit; the episode ends after 2501 steps
CARS = 8  # one car per lane, lanes are rows 1-8
CHICKEN_X = 4  # the chicken's column
_START = GRID - 1  # the chicken's row at the start and after a crossing or a hit
_LANES = tuple(range(1, CARS + 1))  # car i drives row i+1
_MAX_SPEED = 5
_SPEED_CODE_SHIFT = _MAX_SPEED * GRID  # code = (speed + 5) * 10 + x
_MOVE = np.zeros(6, dtype=np.int8)  # row change per action (u: up, d: down)
_MOVE[UP], _MOVE[DOWN] = -1, 1
_HALF = np.array(2**52, dtype=np.int64)  # rand() - 0.5 as an integer: (w >> 11) - 2**52
_S11 = np.array(11, dtype=np.uint64)
_ZERO, _NINE, _TEN = (np.array(v, dtype=np.int8) for v in (0, 9, 10))


def _cell_tables() -> tuple[np.ndarray, np.ndarray]:
    """Per car code ``(speed + 5) * 10 + x``: the offset in its lane of its cell (``x * 7 +
    1``, channel ``car``) and of its trail (the cell behind it across the edge, in channel
    ``speed|speed|``: 1 + |speed|; speed 0, see the docstring, in ``speed1``)."""
    car = np.zeros((2 * _MAX_SPEED + 1) * GRID, dtype=np.int8)
    trail = np.zeros_like(car)
    for speed in range(-_MAX_SPEED, _MAX_SPEED + 1):
        for x in range(GRID):
            code = (speed + _MAX_SPEED) * GRID + x
            back = (x - 1 if speed > 0 else x + 1) % GRID
            car[code] = x * 7 + 1
            trail[code] = back * 7 + 1 + max(abs(speed), 1)
    return car, trail


_CAR_OFFSET, _TRAIL_OFFSET = _cell_tables()
#: a car's move per step by speed + 5: right for speed > 0, else left (speed 0 too)
_STEP_BY_SPEED = np.array([1 if v > 0 else -1 for v in range(-_MAX_SPEED, _MAX_SPEED + 1)],
                          dtype=np.int8)
_WRAP = np.array([GRID - 1, *range(GRID), 0], dtype=np.int8)  # column + 1 -> wrapped column


class BatchFreeway(MinAtarEnv):
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

    ## Random Words

    17 words per env each step: word 0 the sticky-action draw (``Environment.act``'s
    ``rand()``), words 1-8 the 8 ``randint(1, 6, 8)`` of ``_randomize_cars`` and words
    9-16 its 8 ``rand(8)`` (used only on a crossing; drawn every step); 16 per reset
    (words 0-7 and 8-15 for the same two calls).

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
    step_words = 1 + 2 * CARS
    reset_words = 2 * CARS
    ansi_chars = "C#12345"
    state_dtype = np.dtype([
        ("pos", np.int8),  # the chicken's row (0 top, 9 bottom); its column is 4
        ("move_timer", np.int8),  # steps until the chicken may move again
        ("terminate_timer", np.int16),  # counts down from 2500; the episode ends below 0
        ("car_x", np.int8, (CARS,)),  # column of the car in lane i (row i+1)
        ("car_timer", np.int8, (CARS,)),  # steps until the car moves
        ("car_speed", np.int8, (CARS,)),  # +-(1..5): moves every |speed| steps, sign: way
        *STICKY_FIELDS,
    ])

    def __init__(self, num_envs: int | None = None, **kwargs: Any) -> None:
        super().__init__(num_envs, **kwargs)
        self._lane_base = np.arange(self.num_envs, dtype=np.intp) * CARS

    def reset_envs(self, s: State, rng: BatchRandom) -> None:
        self.reset_rows(s, slice(None), rng)

    def reset_rows(self, s: State, rows: np.ndarray | slice, rng: BatchRandom) -> None:
        words = rng.draws(self.reset_words)
        speed = car_speeds(words[:CARS], words[CARS:])
        s.car_x[rows] = 0
        s.car_speed[rows] = speed
        s.car_timer[rows] = np.abs(speed)
        s.pos[rows] = _START
        s.move_timer[rows] = PLAYER_SPEED
        s.terminate_timer[rows] = TIME_LIMIT

    def step_envs(self, s: State, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        words = self.step_draws(s, rng)
        a = self.game_actions(s, action, words[0])
        move_chicken(s, a)
        reward = self.reward_buffer
        cross(s, words, reward)
        drive_cars(s, self._lane_base)
        s.move_timer -= s.move_timer > 0
        s.terminate_timer -= 1
        terminated = self.terminated_buffer
        np.less(s.terminate_timer, 0, out=terminated)
        return reward, terminated

    def observe(self, s: State, out: np.ndarray) -> None:
        out.fill(False)
        grid = self.grid(len(s))
        flat = out.reshape(-1)
        flat[grid.cells(s.pos, np.full_like(s.pos, CHICKEN_X), 0)] = True
        lanes = grid.lane_base(_LANES)  # car i drives lane (row) i+1
        code = s.car_speed * np.int8(GRID)  # (speed + 5) * 10 + x, in 0-109
        code += s.car_x
        code += np.int8(_SPEED_CODE_SHIFT)
        flat[np.add(lanes, _CAR_OFFSET.take(code))] = True
        flat[np.add(lanes, _TRAIL_OFFSET.take(code))] = True


def car_speeds(speed_words: np.ndarray, direction_words: np.ndarray) -> np.ndarray:
    """``_randomize_cars``: ``speeds = randint(1, 6, 8) * sign(rand(8) - 0.5)`` from
    draw-major words ``(8, rows)``; returns ``(rows, 8)`` int8."""
    speed = randint(speed_words, 1, 6).astype(np.int8)
    half = (direction_words >> _S11).astype(np.int64)
    half -= _HALF  # (rand() - 0.5) * 2**53, exactly
    speed *= np.sign(half).astype(np.int8)
    return speed.T


def move_chicken(s: State, action: np.ndarray) -> None:
    """``u``/``d`` move the chicken one row when its move timer is 0, which restarts the
    timer at 3."""
    step = _MOVE[action]
    step *= s.move_timer == 0
    moved = step != 0
    s.pos += step
    np.clip(s.pos, _ZERO, _NINE, out=s.pos)
    s.move_timer[moved] = PLAYER_SPEED


def cross(s: State, words: np.ndarray, reward: np.ndarray) -> None:
    """A chicken in row 0 scores +1 and goes back to row 9, and every car of its game gets
    a new speed and direction (step words 1-16)."""
    across = s.pos == 0
    np.copyto(reward, across)
    if across.any():
        rows = across.nonzero()[0]
        speed = car_speeds(words[1:1 + CARS, rows], words[1 + CARS:, rows])
        s.car_speed[rows] = speed
        s.car_timer[rows] = np.abs(speed)
        s.pos[rows] = _START


def drive_cars(s: State, lane_base: np.ndarray) -> None:
    """Every car whose timer is 0 moves one cell its way (wrapping around) and restarts its
    timer at ``|speed|``; the others count down. The car in the chicken's lane sends it to
    row 9 if it is in column 4 before or after its move. (MinAtar checks each car in turn,
    but only the car of the chicken's lane can meet it, and a chicken sent back to row 9
    is in no lane.)"""
    n = len(s)
    lane = s.pos.astype(np.intp) - 1  # the chicken's lane, if 0 <= lane < 8
    in_lane = (lane >= 0) & (lane < CARS)
    np.clip(lane, 0, CARS - 1, out=lane)
    lane += lane_base[:n]
    car_x = s.car_x.reshape(-1)
    hit = car_x.take(lane) == CHICKEN_X
    moving = s.car_timer == 0
    s.car_timer -= 1
    np.copyto(s.car_timer, np.abs(s.car_speed), where=moving)
    step = _STEP_BY_SPEED.take(s.car_speed + np.int8(_MAX_SPEED))
    step *= moving
    step += s.car_x
    _WRAP.take(step + np.int8(1), out=s.car_x)  # -1 -> 9, 10 -> 0
    hit |= car_x.take(lane) == CHICKEN_X
    hit &= in_lane
    s.pos[hit] = _START
