"""BatchBreakout: MinAtar's Breakout (``minatar/environments/breakout.py``, MinAtar 1.0.15),
batched."""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np

from batchenv import perenv
from batchenv.envs.minatar._base import (
    GRID,
    LAST,
    LEFT,
    RIGHT,
    ROW_BITS,
    ROW_MASKS,
    Coordinate,
    Heading,
    MinAtarEnv,
    MinAtarState,
    paint_table_row,
    sticky_action_env,
)
from batchenv.state import Field, Range

__all__ = ["BatchBreakout", "BreakoutState"]

_BALL_START_Y = 3
_PADDLE_START = 4
WALL_ROWS = (1, 2, 3)  # the board rows that hold bricks
_FULL_ROW = np.uint16(ROW_MASKS - 1)
_BOTTOM = LAST  # the paddle's row
_CHANNELS = 4
_PADDLE, _BALL, _TRAIL, _BRICK = range(_CHANNELS)
_ONE16 = np.uint16(1)


def _brick_rows() -> np.ndarray:
    """The image of a board row of bricks for each 10-bit mask: ``(1024, 10, 4)`` bools,
    channel 3 (``brick``) set at the mask's bits."""
    images = np.zeros((ROW_MASKS, GRID, _CHANNELS), dtype=bool)
    images[..., _BRICK] = (np.arange(ROW_MASKS)[:, None] >> np.arange(GRID)) & 1
    return images


#: :func:`_brick_rows` as 5 words per mask (``observe_env`` copies a wall row's words).
_BRICK_WORDS = np.ascontiguousarray(_brick_rows().reshape(ROW_MASKS, -1)).view(np.uint64)
_NO_BRICKS = np.uint64(0)  # the mask of a row without bricks: an empty row's image
_OPEN_ROWS = tuple(y for y in range(GRID) if y not in WALL_ROWS)
assert ROW_BITS == GRID


class BreakoutState(MinAtarState):
    """One game per row (``BatchBreakout.state_dtype`` is made from these annotations)."""

    ball_x: Coordinate  # column 0-9
    ball_y: Coordinate  # row 0-9 (0 at the top)
    ball_dx: Heading  # -1 left, +1 right (MinAtar's ball_dir: 0 up-left,
    ball_dy: Heading  # -1 up, +1 down        1 up-right, 2 down-right, 3 down-left)
    pos: Coordinate  # the paddle's column (row 9)
    last_x: Coordinate  # the ball's previous cell (the trail)
    last_y: Coordinate
    strike: Field[np.bool_]  # the ball broke a brick last step
    # rows 1-3 of MinAtar's brick_map as row masks (bit x is column x): 10-bit, each one a
    # row of the table of brick rows observe_env copies from
    bricks: Annotated[Field[np.uint16], (len(WALL_ROWS),), Range(0, ROW_MASKS - 1)]


class BatchBreakout(MinAtarEnv[BreakoutState]):
    """## Description

    MinAtar's Breakout for thousands of games at once, step for step the rules of
    ``minatar/environments/breakout.py`` (MinAtar 1.0.15; Young & Tian, 2019). The player
    moves a paddle along the bottom row and bounces a ball to break three rows of bricks at
    the top. The ball travels on diagonals only; it reflects off walls and bricks; off the
    paddle it goes back up, or back the way it came when it hits the paddle's corner. When
    the ball reaches the bottom row after every brick is broken, three new rows appear.
    Tested step by step against the ``minatar`` package (``tests/test_minatar_parity.py``).

    Each step applies, in MinAtar's order:
    :func:`~batchenv.envs.minatar._base.sticky_action_env`, :func:`move_paddle`,
    :func:`move_ball` (walls, bricks, and the paddle at the bottom row). The bricks are row
    masks (bit x of a wall row is column x); the observation copies each wall row's image
    from a table of the 1024 masks.

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
    ``kernels="auto"`` (default): the rules compiled by numba when it is installed, else
    run as a Python loop (with a warning); ``"numba"`` or ``"python"`` to choose, and
    ``num_threads=`` for the compiled loop (identical results: docs/minatar.md).

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

    * v0 / v1: as MinAtar 1.0.15's ``MinAtar/Breakout-v0`` / ``-v1``. Its rules are
      written once, as per-env kernels: ``kernels="numpy"`` (a second copy of the rules as
      numpy kernels) is gone; the results are the same.
    """

    game = "breakout"
    channels = ("paddle", "ball", "trail", "brick")
    minimal_actions = (0, 1, 3)
    step_words = 1
    reset_words = 1
    ansi_chars = "=o*#"
    state_type = BreakoutState

    def check_state(self, states: np.ndarray) -> dict[str, np.ndarray]:
        """The ball moving diagonally (its headings are -1 or +1; the ranges let 0 in)."""
        return {"ball_dx or ball_dy not -1 or +1": (np.abs(states["ball_dx"]) != 1)
                | (np.abs(states["ball_dy"]) != 1)}

    @staticmethod
    def reset_env(p: Any, s: Any, i: int) -> None:
        right_side = perenv.integers(s, i, 0, 2)  # reset word 0: randint(2)
        s.ball_x[i] = s.last_x[i] = right_side * LAST
        s.ball_dx[i] = 1 - 2 * right_side
        s.ball_dy[i] = 1
        s.ball_y[i] = s.last_y[i] = _BALL_START_Y
        s.pos[i] = _PADDLE_START
        for r in range(len(WALL_ROWS)):
            s.bricks[i, r] = _FULL_ROW
        s.strike[i] = False

    @staticmethod
    def step_env(p: Any, s: Any, i: int, action: int) -> tuple[float, bool]:
        a = sticky_action_env(p, s, i, action)
        move_paddle(s, i, a)
        return move_ball(s, i)

    @staticmethod
    def observe_env(p: Any, s: Any, i: int, obs: np.ndarray) -> None:
        # every board row from the table of brick rows, the rows without a wall the image
        # of no bricks (a clear of the board, its size read from obs, is a call of memset)
        for y in _OPEN_ROWS:
            paint_table_row(obs, y, _BRICK_WORDS, _NO_BRICKS)
        for r in range(len(WALL_ROWS)):  # each wall row: the image of its 10-bit mask
            paint_table_row(obs, WALL_ROWS[r], _BRICK_WORDS, np.uint64(s.bricks[i, r]))
        obs[s.ball_y[i], s.ball_x[i], _BALL] = True
        obs[s.last_y[i], s.last_x[i], _TRAIL] = True
        obs[_BOTTOM, s.pos[i], _PADDLE] = True


# ---------------------------------------------------------------- rules (row i)
@perenv.rule
def move_paddle(s: Any, i: int, a: int) -> None:
    """``l``: one column left, ``r``: one right, within the board."""
    if a == RIGHT:
        s.pos[i] = min(s.pos[i] + 1, LAST)
    elif a == LEFT:
        s.pos[i] = max(s.pos[i] - 1, 0)


@perenv.rule
def move_ball(s: Any, i: int) -> tuple[float, bool]:
    """One move of the ball along its diagonal, as MinAtar's ``act``: reflect off a side
    wall (then) off the top, or break the brick it enters (unless it broke one last step)
    and go back to its row, or at the bottom row bounce off the paddle (its middle: the
    ball's column before the move is the paddle's; its corner: the column after is) or end
    the episode. Returns ``(reward, terminated)``: bricks broken, and whether the paddle
    missed."""
    s.last_x[i] = s.ball_x[i]
    s.last_y[i] = s.ball_y[i]
    new_x = s.ball_x[i] + s.ball_dx[i]
    new_y = s.ball_y[i] + s.ball_dy[i]
    if new_x < 0 or new_x > LAST:  # a side wall
        s.ball_dx[i] = -s.ball_dx[i]
        new_x = min(max(new_x, 0), LAST)
    top = new_y < 0
    new_y = min(max(new_y, 0), LAST)
    hit = break_brick(s, i, new_x, new_y)
    caught = terminated = False
    if new_y == _BOTTOM:
        caught = meet_paddle(s, i, new_x)
        terminated = not caught
    if top or hit or caught:
        s.ball_dy[i] = -s.ball_dy[i]
    if hit or caught:  # back to its row
        new_y = s.last_y[i]
    s.ball_x[i] = new_x
    s.ball_y[i] = new_y
    return (1.0 if hit else 0.0), terminated


@perenv.rule
def break_brick(s: Any, i: int, x: int, y: int) -> bool:
    """The ball entering cell ``(x, y)``: a brick there breaks (returns True) unless the
    ball broke one on its last move, when it passes into the wall instead. Remembers
    whether the ball is in a brick (``strike``)."""
    row = y - WALL_ROWS[0]  # the wall row, if the ball is in the wall
    brick = 0 <= row < len(WALL_ROWS) and (s.bricks[i, row] >> x) & _ONE16 != 0
    hit = brick and not s.strike[i]  # (right after a strike the ball passes into bricks)
    s.strike[i] = brick
    if hit:
        s.bricks[i, row] ^= _ONE16 << x
    return hit


@perenv.rule
def meet_paddle(s: Any, i: int, x: int) -> bool:
    """The ball reaching the bottom row in column ``x``: a new wall if every brick is
    broken, then the paddle catches it with its middle (the ball's column before the move
    is the paddle's) or its corner (the column after is; the ball goes back the way it
    came). Returns whether it was caught."""
    if s.bricks[i, 0] == 0 and s.bricks[i, 1] == 0 and s.bricks[i, 2] == 0:
        for r in range(len(WALL_ROWS)):  # every brick broken: a new wall
            s.bricks[i, r] = _FULL_ROW
    if s.last_x[i] == s.pos[i]:  # the paddle's middle
        return True
    if x == s.pos[i]:  # its corner: back the way it came
        s.ball_dx[i] = -s.ball_dx[i]
        return True
    return False
