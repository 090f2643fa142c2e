"""BatchBreakout: MinAtar's Breakout (``minatar/environments/breakout.py``, MinAtar 1.0.15),
batched."""

from __future__ import annotations

from typing import Any

import numpy as np

from batchenv.envs.minatar._base import (
    GRID,
    LEFT,
    RIGHT,
    STICKY_FIELDS,
    MinAtarEnv,
    randint,
)
from batchenv.random import BatchRandom
from batchenv.state import State

__all__ = ["BatchBreakout"]

# Ball directions (MinAtar's ball_dir): 0 up-left, 1 up-right, 2 down-right, 3 down-left
_DX = np.array([-1, 1, 1, -1], dtype=np.int8)
_DY = np.array([-1, -1, 1, 1], dtype=np.int8)
_FLIP_X = np.array([1, 0, 3, 2], dtype=np.int8)  # off a side wall
_FLIP_Y = np.array([3, 2, 1, 0], dtype=np.int8)  # off the top, a brick, the paddle's middle
_FLIP_XY = np.array([2, 3, 0, 1], dtype=np.int8)  # off the paddle's corner
_PADDLE_DX = np.zeros(6, dtype=np.int8)
_PADDLE_DX[LEFT], _PADDLE_DX[RIGHT] = -1, 1
_BALL_STARTS = np.array([[0, 2], [9, 3]], dtype=np.int8)  # (ball_x, ball_dir) per coin
_BALL_START_Y = 3
_PADDLE_START = 4
_BRICK_ROWS = slice(1, 4)  # three rows of bricks
_WALL_ROWS = 4  # the state keeps rows 0-3 of MinAtar's brick_map: no brick is ever lower
_CHANNEL_3 = np.array([0, 0, 0, 1], dtype=np.uint8).view(np.uint32).reshape(())  # a cell
#                                  (4 bools) with only channel 3 set, as one uint32
_BOTTOM = GRID - 1  # the paddle's row
_FULL_WALL = np.zeros((_WALL_ROWS, GRID), dtype=bool)
_FULL_WALL[_BRICK_ROWS] = True
_ZERO, _NINE = np.array(0, dtype=np.int8), np.array(GRID - 1, dtype=np.int8)
_THREE = np.array(_WALL_ROWS - 1, dtype=np.int8)
_TEN = np.array(GRID, dtype=np.int8)


class BatchBreakout(MinAtarEnv):
    """## Description

    MinAtar's Breakout for thousands of games at once, step for step the rules of
    ``minatar/environments/breakout.py`` (MinAtar 1.0.15; Young & Tian, 2019). The player
    moves a paddle along the bottom row and bounces a ball to break three rows of bricks at
    the top. The ball travels on diagonals only; it reflects off walls and bricks; off the
    paddle it goes back up, or back the way it came when it hits the paddle's corner. When
    the ball reaches the bottom row after every brick is broken, three new rows appear.
    Tested step by step against the ``minatar`` package (``tests/test_minatar_parity.py``).

    Each step applies, in MinAtar's order: :func:`~batchenv.envs.minatar._base.sticky_actions`,
    :func:`move_paddle`, :func:`move_ball` (walls, bricks, the bottom row).

    ## Action Space

    ``Discrete(6)``: MinAtar's ``n, l, u, r, d, f`` (only ``l`` and ``r`` move the paddle),
    or with ``minimal_action_set=True`` (``-v1``) ``Discrete(3)``: ``n, l, r``.

    ## Observation Space

    ``Box(0, 1, (10, 10, 4), bool)``, MinAtar's channels in its order: 0 ``paddle``,
    1 ``ball``, 2 ``trail`` (the ball's previous cell, showing its direction), 3 ``brick``.

    ## Rewards

    +1 for each brick broken.

    ## Starting State

    Three full rows of bricks (rows 1-3), the paddle in column 4, the ball in row 3 at
    column 0 moving down-right or at column 9 moving down-left (one random word:
    ``randint(2)``).

    ## Episode End

    Terminated when the ball reaches the bottom row without hitting the paddle. No time
    limit by default (MinAtar has none); ``max_episode_steps=`` adds one.

    ## Arguments

    ``BatchBreakout(num_envs, *, sticky_action_prob=0.1, minimal_action_set=False,
    difficulty_ramping=True, render_scale=8, **BatchEnv options)``. Breakout has no
    difficulty ramp (MinAtar ignores ``difficulty_ramping`` here too). ``render_mode``:
    ``"rgb_array"`` (MinAtar's cubehelix palette) or ``"ansi"``.

    ## Random Words

    Each step draws 1 word per env (the sticky-action draw), each reset 1 (the ball's
    start side). The mapping for ``tests/minatar_parity.py``: ``Environment.act``'s
    ``rand()`` is step word 0; ``Env.reset``'s ``randint(2)`` is reset word 0.

    ## Quirks of the reference, reproduced

    * A ball that moves into a brick cell in the step right after breaking a brick (the
      ``strike`` flag is still set) breaks nothing and passes into the brick's cell.
    * The bricks come back only when the ball reaches the bottom row with no brick left.
    * ``last_action`` (sticky actions) carries over from one episode to the next, as in
      MinAtar's ``Environment``; ``reset(seed=...)`` clears it.

    ## Version History

    * v0 / v1: as MinAtar 1.0.15's ``MinAtar/Breakout-v0`` / ``-v1``.
    """

    game = "breakout"
    channels = ("paddle", "ball", "trail", "brick")
    minimal_actions = (0, 1, 3)
    step_words = 1
    reset_words = 1
    ansi_chars = "=o*#"
    state_dtype = np.dtype([
        ("ball_x", np.int8),  # column 0-9
        ("ball_y", np.int8),  # row 0-9 (0 at the top)
        ("ball_dir", np.int8),  # 0 up-left, 1 up-right, 2 down-right, 3 down-left
        ("pos", np.int8),  # the paddle's column (row 9)
        ("last_x", np.int8),  # the ball's previous cell (the trail)
        ("last_y", np.int8),
        ("strike", np.bool_),  # the ball broke a brick last step
        ("bricks", np.bool_, (_WALL_ROWS, GRID)),  # rows 0-3 of MinAtar's brick_map
        *STICKY_FIELDS,
    ])

    def __init__(self, num_envs: int | None = None, **kwargs: Any) -> None:
        super().__init__(num_envs, **kwargs)
        self._brick_base = np.arange(self.num_envs, dtype=np.intp) * (_WALL_ROWS * GRID)

    def reset_envs(self, s: State, rng: BatchRandom) -> None:
        self.reset_rows(s, slice(None), rng)

    def reset_rows(self, s: State, rows: np.ndarray | slice, rng: BatchRandom) -> None:
        start = _BALL_STARTS[randint(rng.draws(self.reset_words)[0], 0, 2)]
        s.ball_x[rows] = s.last_x[rows] = start[:, 0]
        s.ball_dir[rows] = start[:, 1]
        s.ball_y[rows] = s.last_y[rows] = _BALL_START_Y
        s.pos[rows] = _PADDLE_START
        s.bricks[rows] = _FULL_WALL
        s.strike[rows] = False

    def step_envs(self, s: State, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        words = self.step_draws(s, rng)
        a = self.game_actions(s, action, words[0])
        move_paddle(s.pos, a)
        reward = self.reward_buffer
        terminated = self.terminated_buffer
        move_ball(s, self._brick_base, reward, terminated)
        return reward, terminated

    def observe(self, s: State, out: np.ndarray) -> None:
        n = len(s)
        cells = out.view(np.uint32).reshape(n, GRID * GRID)  # a cell's 4 channels as one
        wall = _WALL_ROWS * GRID
        np.multiply(s.bricks.reshape(n, wall).view(np.uint8), _CHANNEL_3, out=cells[:, :wall])
        cells[:, wall:] = 0
        grid = self.grid(n)
        flat = out.reshape(-1)
        flat[grid.cells(s.ball_y, s.ball_x, 1)] = True
        flat[grid.cells(s.last_y, s.last_x, 2)] = True
        paddle = grid.lane_base((_BOTTOM,))[:, 0] + s.pos * np.int8(4)  # channel 0
        flat[paddle] = True


def move_paddle(pos: np.ndarray, action: np.ndarray) -> None:
    """``l``: one column left, ``r``: one right, within the board."""
    pos += _PADDLE_DX.take(action)
    np.maximum(pos, _ZERO, out=pos)
    np.minimum(pos, _NINE, out=pos)


def move_ball(s: State, brick_base: np.ndarray, reward: np.ndarray,
              terminated: np.ndarray) -> None:
    """One move of the ball along its diagonal, as MinAtar's ``act``: reflect off a side
    wall (then) off the top, or break the brick it enters (unless it broke one last step)
    and go back to its row, or at the bottom row bounce off the paddle (its middle: the
    ball's column before the move is the paddle's; its corner: the column after is) or end
    the episode. Writes ``reward`` (bricks broken) and ``terminated``."""
    n = len(s)
    s.last_x[:] = s.ball_x
    s.last_y[:] = s.ball_y
    d = s.ball_dir
    new_x = s.ball_x + _DX.take(d)
    new_y = s.ball_y + _DY.take(d)
    side = (new_x < 0) | (new_x > GRID - 1)
    np.maximum(new_x, _ZERO, out=new_x)
    np.minimum(new_x, _NINE, out=new_x)
    d = np.where(side, _FLIP_X.take(d), d)
    top = new_y < 0
    d = np.where(top, _FLIP_Y.take(d), d)
    # top: the ball stays in row 0, which never holds bricks, so the brick test below is
    # False there as in MinAtar's elif; beyond row 9 only a finished game moves (clamped)
    np.maximum(new_y, _ZERO, out=new_y)
    np.minimum(new_y, _NINE, out=new_y)
    cell = np.minimum(new_y, _THREE)  # bricks are in rows 1-3 only
    cell *= _TEN
    cell += new_x
    brick = s.bricks.reshape(-1).take(brick_base[:n] + cell)
    brick &= new_y < _WALL_ROWS
    hit = brick & ~s.strike
    np.copyto(reward, hit)
    s.strike[:] = brick
    if hit.any():
        rows = hit.nonzero()[0]
        s.bricks.reshape(-1)[brick_base[rows] + cell[rows]] = False
        new_y[rows] = s.last_y[rows]
        d[rows] = _FLIP_Y[d[rows]]
    bottom = new_y == _BOTTOM
    terminated.fill(False)
    if bottom.any():
        rows = bottom.nonzero()[0]
        empty = ~s.bricks[rows].any(axis=(1, 2))
        if empty.any():
            s.bricks[rows[empty], _BRICK_ROWS] = True
        pos = s.pos[rows]
        middle = s.last_x[rows] == pos
        corner = ~middle & (new_x[rows] == pos)
        dr = d[rows]
        d[rows] = np.where(middle, _FLIP_Y[dr], np.where(corner, _FLIP_XY[dr], dr))
        caught = middle | corner
        new_y[rows] = np.where(caught, s.last_y[rows], _BOTTOM)
        terminated[rows] = ~caught
    s.ball_dir[:] = d
    s.ball_x[:] = new_x
    s.ball_y[:] = new_y
