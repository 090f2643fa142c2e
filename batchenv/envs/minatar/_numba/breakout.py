"""BatchBreakout's rules as one compiled loop over the envs (the numba layer: see
:mod:`batchenv.envs.minatar._numba`). Each step follows ``breakout.py``'s numpy kernels
decision for decision: ``move_paddle``, then ``move_ball`` with ``brick_at`` and
``catch_ball``."""

from __future__ import annotations

from typing import Any

import numpy as np

from batchenv.envs.minatar._base import LEFT, RIGHT
from batchenv.envs.minatar._numba import (
    cell,
    flat_cells,
    game_action,
    jit,
    next_word,
    randint,
    sticky_limit,
)
from batchenv.envs.minatar.breakout import (
    _BALL_START_Y,
    _BOTTOM,
    _FULL_ROW,
    _PADDLE_START,
    WALL_ROWS,
    _brick_rows,
)
from batchenv.random import BatchRandom

_LAST = 9  # the last row and column of the board
_WALL_TOP = WALL_ROWS[0]
_N_WALL = len(WALL_ROWS)
_PADDLE, _BALL, _TRAIL, _BRICK = range(4)  # channels
_CHANNELS = 4
_WORDS_PER_ROW = 10 * _CHANNELS // 8  # a board row of 10 cells x 4 channels: 5 uint64
_WORDS_PER_ENV = 10 * _WORDS_PER_ROW
#: The cells of a wall row for each 10-bit brick mask, as 5 words (``_brick_rows``' images).
_BRICK_WORDS = np.ascontiguousarray(_brick_rows().reshape(1 << 10, -1)).view(np.uint64)
_NO_WORD = np.uint16(0)
_FULL = np.uint16(_FULL_ROW)
_ONE16 = np.uint16(1)


def step_envs(env: Any, s: Any, action: np.ndarray, rng: BatchRandom
              ) -> tuple[np.ndarray, np.ndarray]:
    """``BatchBreakout.step_envs``, compiled."""
    limit, always = sticky_limit(env.sticky_action_prob)
    reward, terminated = env.reward_buffer, env.terminated_buffer
    _step(action, env.action_set, limit, always, s.last_action, s.rng_key, s.rng_counter,
          s.awaiting_reset, s.ball_x, s.ball_y, s.ball_dx, s.ball_dy, s.pos, s.last_x,
          s.last_y, s.strike, s.bricks, reward, terminated)
    return reward, terminated


def reset_rows(env: Any, s: Any, rows: np.ndarray | slice, rng: BatchRandom) -> None:
    """``BatchBreakout.reset_rows``, compiled (``rng`` is ``rows``' streams)."""
    if isinstance(rows, slice):
        rows = np.arange(len(s))[rows]
    _reset(rows, s.rng_key, s.rng_counter, s.ball_x, s.ball_y, s.ball_dx, s.ball_dy, s.pos,
           s.last_x, s.last_y, s.strike, s.bricks)


def observe(env: Any, s: Any, out: np.ndarray) -> None:
    """``BatchBreakout.observe``, compiled: writes every cell of ``out``."""
    flat = flat_cells(out)
    if flat.ctypes.data % 8:  # (never from the base class: numpy's buffers are aligned)
        aligned = np.empty_like(flat)
        _observe(s.ball_x, s.ball_y, s.pos, s.last_x, s.last_y, s.bricks, aligned,
                 aligned.view(np.uint64), _BRICK_WORDS)
        flat[:] = aligned
        return
    _observe(s.ball_x, s.ball_y, s.pos, s.last_x, s.last_y, s.bricks, flat,
             flat.view(np.uint64), _BRICK_WORDS)


@jit
def _step(action, action_set, limit, always, last_action, key, counter, awaiting, ball_x,
          ball_y, ball_dx, ball_dy, pos, last_x, last_y, strike, bricks, reward,
          terminated):  # pragma: no cover (compiled)
    for i in range(len(action)):
        reward[i] = 0.0
        terminated[i] = False
        if awaiting[i]:  # a discarded step: no draw, no change (MinAtarEnv.discarded_rows)
            continue
        a = game_action(i, action, action_set, last_action, key, counter, limit, always)
        # move_paddle
        if a == RIGHT:
            pos[i] = min(pos[i] + 1, _LAST)
        elif a == LEFT:
            pos[i] = max(pos[i] - 1, 0)
        # move_ball
        last_x[i] = ball_x[i]
        last_y[i] = ball_y[i]
        new_x = ball_x[i] + ball_dx[i]
        new_y = ball_y[i] + ball_dy[i]
        if new_x < 0 or new_x > _LAST:
            ball_dx[i] = -ball_dx[i]
            new_x = min(max(new_x, 0), _LAST)
        top = new_y < 0
        new_y = min(max(new_y, 0), _LAST)
        row = new_y - _WALL_TOP
        brick = 0 <= row < _N_WALL and (bricks[i, row] >> new_x) & _ONE16 != _NO_WORD
        hit = brick and not strike[i]
        strike[i] = brick
        if hit:
            reward[i] = 1.0
            bricks[i, row] ^= _ONE16 << new_x
        caught = False
        if new_y == _BOTTOM:  # catch_ball
            if bricks[i, 0] == _NO_WORD and bricks[i, 1] == _NO_WORD \
                    and bricks[i, 2] == _NO_WORD:
                bricks[i, 0] = bricks[i, 1] = bricks[i, 2] = _FULL
            if last_x[i] == pos[i]:  # the paddle's middle
                caught = True
            elif new_x == pos[i]:  # its corner: back the way it came
                ball_dx[i] = -ball_dx[i]
                caught = True
            terminated[i] = not caught
        if top or hit or caught:
            ball_dy[i] = -ball_dy[i]
        if hit or caught:
            new_y = last_y[i]
        ball_x[i] = new_x
        ball_y[i] = new_y


@jit
def _reset(rows, key, counter, ball_x, ball_y, ball_dx, ball_dy, pos, last_x, last_y, strike,
           bricks):  # pragma: no cover (compiled)
    for i in rows:
        right_side = randint(next_word(key, counter, i), 0, 2)  # reset word 0
        ball_x[i] = last_x[i] = right_side * _LAST
        ball_dx[i] = 1 - 2 * right_side
        ball_dy[i] = 1
        ball_y[i] = last_y[i] = _BALL_START_Y
        pos[i] = _PADDLE_START
        for r in range(_N_WALL):
            bricks[i, r] = _FULL
        strike[i] = False


@jit
def _observe(ball_x, ball_y, pos, last_x, last_y, bricks, out, words,
             brick_words):  # pragma: no cover (compiled)
    for i in range(len(ball_x)):
        # an env's 400 cells as 50 words of 8 cells: its bare rows, then each wall row's
        # image (its 10-bit mask's 5 words) from the table
        first = i * _WORDS_PER_ENV
        for k in range(_WORDS_PER_ROW):
            words[first + k] = 0
        for r in range(_N_WALL):
            image = brick_words[bricks[i, r]]
            row = first + (_WALL_TOP + r) * _WORDS_PER_ROW
            for k in range(_WORDS_PER_ROW):
                words[row + k] = image[k]
        for k in range((_WALL_TOP + _N_WALL) * _WORDS_PER_ROW, _WORDS_PER_ENV):
            words[first + k] = 0
        out[cell(i, ball_y[i], ball_x[i], _BALL, _CHANNELS)] = True
        out[cell(i, last_y[i], last_x[i], _TRAIL, _CHANNELS)] = True
        out[cell(i, _BOTTOM, pos[i], _PADDLE, _CHANNELS)] = True
