"""BatchBreakout: MinAtar's Breakout (``minatar/environments/breakout.py``, MinAtar 1.0.15),
batched."""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np

from batchenv import perenv
from batchenv.envs.minatar._base import (
    GRID,
    LEFT,
    RIGHT,
    MinAtarEnv,
    MinAtarState,
    paint_table_row,
    randint,
    sticky_action_env,
)
from batchenv.envs.minatar._rows import BIT, ROW_BITS, RowCanvas
from batchenv.random import BatchRandom
from batchenv.state import Field

__all__ = ["BatchBreakout", "BreakoutState"]

_BALL_START_Y = 3
_PADDLE_START = 4
WALL_ROWS = (1, 2, 3)  # the board rows that hold bricks
_FULL_ROW = np.uint16((1 << ROW_BITS) - 1)
_BOTTOM = GRID - 1  # the paddle's row
_CHANNELS = 4
_ZERO, _ONE, _NINE = (np.array(v, dtype=np.int8) for v in (0, 1, GRID - 1))
_NO_BIT = np.uint16(0)


_LAST = GRID - 1  # the last row and column of the board
_PADDLE, _BALL, _TRAIL, _BRICK = range(_CHANNELS)
_ONE16 = np.uint16(1)


def _brick_rows() -> np.ndarray:
    """The image of a board row of bricks for each 10-bit mask: ``(1024, 10, 4)`` bools,
    channel 3 (``brick``) set at the mask's bits."""
    images = np.zeros((1 << ROW_BITS, GRID, _CHANNELS), dtype=bool)
    images[..., 3] = (np.arange(1 << ROW_BITS)[:, None] >> np.arange(GRID)) & 1
    return images


#: :func:`_brick_rows` as 5 words per mask (``observe_env`` copies a wall row's words).
_BRICK_WORDS = np.ascontiguousarray(_brick_rows().reshape(1 << ROW_BITS, -1)).view(np.uint64)
_NO_BRICKS = np.uint64(0)  # the mask of a row without bricks: an empty row's image
_OPEN_ROWS = tuple(y for y in range(GRID) if y not in WALL_ROWS)


class BreakoutState(MinAtarState):
    """One game per row (``BatchBreakout.state_dtype`` is made from these annotations)."""

    ball_x: Field[np.int8]  # column 0-9
    ball_y: Field[np.int8]  # row 0-9 (0 at the top)
    ball_dx: Field[np.int8]  # -1 left, +1 right (MinAtar's ball_dir: 0 up-left,
    ball_dy: Field[np.int8]  # -1 up, +1 down        1 up-right, 2 down-right, 3 down-left)
    pos: Field[np.int8]  # the paddle's column (row 9)
    last_x: Field[np.int8]  # the ball's previous cell (the trail)
    last_y: Field[np.int8]
    strike: Field[np.bool_]  # the ball broke a brick last step
    bricks: Annotated[Field[np.uint16], (len(WALL_ROWS),)]  # rows 1-3 of MinAtar's
    #                                       brick_map as row masks: bit x is column x


class BatchBreakout(MinAtarEnv[BreakoutState]):
    """## Description

    MinAtar's Breakout for thousands of games at once, step for step the rules of
    ``minatar/environments/breakout.py`` (MinAtar 1.0.15; Young & Tian, 2019). The player
    moves a paddle along the bottom row and bounces a ball to break three rows of bricks at
    the top. The ball travels on diagonals only; it reflects off walls and bricks; off the
    paddle it goes back up, or back the way it came when it hits the paddle's corner. When
    the ball reaches the bottom row after every brick is broken, three new rows appear.
    Tested step by step against the ``minatar`` package (``tests/test_minatar_parity.py``).

    Each step applies, in MinAtar's order: :func:`~batchenv.envs.minatar._base.sticky_actions`,
    :func:`move_paddle`, :func:`move_ball` (walls, bricks, and :func:`catch_ball` at the
    bottom row). The bricks are row masks (bit x of a wall row is column x) and stay drawn
    between steps (``_rows.RowCanvas``); the ball, its trail and the paddle are painted on.

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
    ``kernels="auto"`` (default): the per-env kernels compiled when numba is installed,
    else the numpy kernels; ``"numpy"``, ``"numba"`` or ``"python"`` (the per-env kernels
    as a Python loop) to choose, and ``num_threads=`` for the compiled loop (identical
    results: docs/minatar.md).

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
    state_type = BreakoutState

    def __init__(self, num_envs: int | None = None, **kwargs: Any) -> None:
        super().__init__(num_envs, **kwargs)
        if self.kernels == "numpy":  # (observe_env draws every wall row itself)
            self._wall = RowCanvas(self.num_envs, WALL_ROWS, _brick_rows(),
                                   (GRID, GRID, _CHANNELS), np.uint16)
        self._wall_base = np.arange(self.num_envs, dtype=np.intp) * len(WALL_ROWS)

    def check_state(self, states: np.ndarray) -> dict[str, np.ndarray]:
        """Bricks only in columns 0-9 (10-bit masks), the ball moving diagonally."""
        return {"bricks with bits beyond column 9": states["bricks"] >= 1 << ROW_BITS,
                "ball_dx or ball_dy not -1 or +1": (np.abs(states["ball_dx"]) != 1)
                | (np.abs(states["ball_dy"]) != 1)}

    def reset_envs(self, s: BreakoutState, rng: BatchRandom) -> None:
        self.reset_rows(s, slice(None), rng)

    def reset_rows(self, s: BreakoutState, rows: np.ndarray | slice, rng: BatchRandom
                   ) -> None:
        right_side = randint(rng.draws(self.reset_words)[0], 0, 2).astype(np.int8)
        # randint(2): 0 starts in column 0 moving down-right, 1 in column 9 down-left
        s.ball_x[rows] = s.last_x[rows] = right_side * _NINE
        s.ball_dx[rows] = 1 - 2 * right_side
        s.ball_dy[rows] = 1
        s.ball_y[rows] = s.last_y[rows] = _BALL_START_Y
        s.pos[rows] = _PADDLE_START
        s.bricks[rows] = _FULL_ROW
        s.strike[rows] = False

    def step_envs(self, s: BreakoutState, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        a = self.game_actions(s, action, self.step_draws(s, rng)[0])
        move_paddle(s.pos, a)
        reward = self.reward_buffer
        terminated = self.terminated_buffer
        move_ball(s, self._wall_base, reward, terminated)
        return reward, terminated

    def observe(self, s: BreakoutState, out: np.ndarray) -> None:
        self._wall.draw(out, s.bricks)  # the bricks, redrawn where they changed
        grid = self.grid(len(s))
        flat = out.reshape(-1)
        flat[grid.cells(s.ball_y, s.ball_x, 1)] = True
        flat[grid.cells(s.last_y, s.last_x, 2)] = True
        flat[grid.lane_base((_BOTTOM,))[:, 0] + s.pos * np.int8(_CHANNELS)] = True  # paddle

    # ------------------------------------------------------------ per-env kernels
    # The same rules for one env, row i (batchenv.perenv: compiled by numba into one loop
    # over the batch), decision for decision and draw for draw as the numpy kernels above.

    @staticmethod
    def reset_env(p: Any, s: Any, i: int) -> None:
        right_side = perenv.integers(s, i, 0, 2)  # reset word 0: randint(2)
        s.ball_x[i] = s.last_x[i] = right_side * _LAST
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
        move_paddle_env(s, i, a)
        return move_ball_env(s, i)

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


def move_paddle(pos: np.ndarray, action: np.ndarray) -> None:
    """``l``: one column left, ``r``: one right, within the board."""
    pos += (action == RIGHT).view(np.int8)
    pos -= (action == LEFT).view(np.int8)
    np.maximum(pos, _ZERO, out=pos)
    np.minimum(pos, _NINE, out=pos)


def move_ball(s: BreakoutState, wall_base: np.ndarray, reward: np.ndarray,
              terminated: np.ndarray) -> None:
    """One move of the ball along its diagonal, as MinAtar's ``act``: reflect off a side
    wall (then) off the top, or break the brick it enters (unless it broke one last step)
    and go back to its row, or at the bottom row bounce off the paddle (its middle: the
    ball's column before the move is the paddle's; its corner: the column after is) or end
    the episode. Writes ``reward`` (bricks broken) and ``terminated``."""
    s.last_x[:] = s.ball_x
    s.last_y[:] = s.ball_y
    new_x = s.ball_x + s.ball_dx
    new_y = s.ball_y + s.ball_dy
    side = (new_x < 0) | (new_x > _NINE)
    reflect(s.ball_dx, side)
    np.maximum(new_x, _ZERO, out=new_x)
    np.minimum(new_x, _NINE, out=new_x)
    top = new_y < 0
    # top: the ball stays in row 0, which never holds bricks, so the brick test below is
    # False there as in MinAtar's elif; beyond row 9 only a finished game moves (clamped)
    np.maximum(new_y, _ZERO, out=new_y)
    np.minimum(new_y, _NINE, out=new_y)
    brick, wall_row = brick_at(s.bricks, wall_base, new_y, new_x)
    hit = brick & ~s.strike
    np.copyto(reward, hit)
    s.strike[:] = brick
    if hit.any():
        rows = hit.nonzero()[0]
        s.bricks.reshape(-1)[wall_row[rows]] ^= BIT[new_x[rows]]
    bottom = new_y == _BOTTOM  # (no brick is ever in the bottom row: MinAtar's elif)
    caught = catch_ball(s, bottom, new_x, terminated)
    back = hit | caught  # the ball goes back to its row, and up (or down, off a brick)
    reflect(s.ball_dy, top | back)
    np.copyto(new_y, s.last_y, where=back)
    s.ball_x[:] = new_x
    s.ball_y[:] = new_y


def catch_ball(s: BreakoutState, bottom: np.ndarray, new_x: np.ndarray,
               terminated: np.ndarray) -> np.ndarray:
    """A ball reaching the bottom row (``bottom``) first brings a new wall if every brick
    is broken; then the paddle catches it if it stood in the ball's column before the
    move (its middle) or after it (its corner, which also sends the ball back the way it
    came: the column direction flips here); else the episode ends (``terminated``).
    Returns where the paddle caught the ball."""
    empty = (s.bricks[:, 0] | s.bricks[:, 1] | s.bricks[:, 2]) == _NO_BIT
    empty &= bottom
    if empty.any():
        s.bricks[empty] = _FULL_ROW
    middle = s.last_x == s.pos
    middle &= bottom
    corner = new_x == s.pos
    corner &= bottom
    corner &= ~middle
    reflect(s.ball_dx, corner)
    caught = middle | corner
    np.not_equal(bottom, caught, out=terminated)  # at the bottom and not caught
    return caught


def brick_at(bricks: np.ndarray, wall_base: np.ndarray, y: np.ndarray, x: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """Whether cell ``(y, x)`` of each env holds a brick, and the index of its row in
    ``bricks.reshape(-1)`` (a wall row; meaningless where ``y`` is outside the wall).
    ``wall_base``: each env's first index there (``3 * env``)."""
    row = (y - _ONE).view(np.uint8)  # the wall row (rows above the wall wrap to 255)
    in_wall = row < len(WALL_ROWS)
    np.minimum(row, len(WALL_ROWS) - 1, out=row)
    wall_row = wall_base + row
    word = bricks.reshape(-1).take(wall_row)
    word &= BIT.take(x)
    brick = word != _NO_BIT
    brick &= in_wall
    return brick, wall_row


def reflect(d: np.ndarray, where: np.ndarray) -> None:
    """Negate the directions ``d`` (each -1 or +1, int8) where ``where`` holds."""
    flip = where.view(np.int8) * np.int8(-2)
    flip += _ONE
    d *= flip


# ---------------------------------------------------------------- per-env rules (row i)
@perenv.rule
def move_paddle_env(s: Any, i: int, a: int) -> None:
    """:func:`move_paddle` for row ``i``."""
    if a == RIGHT:
        s.pos[i] = min(s.pos[i] + 1, _LAST)
    elif a == LEFT:
        s.pos[i] = max(s.pos[i] - 1, 0)


@perenv.rule
def move_ball_env(s: Any, i: int) -> tuple[float, bool]:
    """:func:`move_ball` (with :func:`brick_at` and :func:`catch_ball`) for row ``i``.
    Returns ``(reward, terminated)``."""
    s.last_x[i] = s.ball_x[i]
    s.last_y[i] = s.ball_y[i]
    new_x = s.ball_x[i] + s.ball_dx[i]
    new_y = s.ball_y[i] + s.ball_dy[i]
    if new_x < 0 or new_x > _LAST:  # a side wall
        s.ball_dx[i] = -s.ball_dx[i]
        new_x = min(max(new_x, 0), _LAST)
    top = new_y < 0
    new_y = min(max(new_y, 0), _LAST)
    row = new_y - WALL_ROWS[0]  # the wall row, if the ball is in the wall
    brick = 0 <= row < len(WALL_ROWS) and (s.bricks[i, row] >> new_x) & _ONE16 != 0
    hit = brick and not s.strike[i]  # (right after a strike the ball passes into bricks)
    s.strike[i] = brick
    reward = 0.0
    if hit:
        reward = 1.0
        s.bricks[i, row] ^= _ONE16 << new_x
    caught = terminated = False
    if new_y == _BOTTOM:  # catch_ball
        if s.bricks[i, 0] == 0 and s.bricks[i, 1] == 0 and s.bricks[i, 2] == 0:
            for r in range(len(WALL_ROWS)):  # every brick broken: a new wall
                s.bricks[i, r] = _FULL_ROW
        if s.last_x[i] == s.pos[i]:  # the paddle's middle
            caught = True
        elif new_x == s.pos[i]:  # its corner: back the way it came
            s.ball_dx[i] = -s.ball_dx[i]
            caught = True
        terminated = not caught
    if top or hit or caught:
        s.ball_dy[i] = -s.ball_dy[i]
    if hit or caught:  # back to its row
        new_y = s.last_y[i]
    s.ball_x[i] = new_x
    s.ball_y[i] = new_y
    return reward, terminated
