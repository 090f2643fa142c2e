"""BatchSpaceInvaders: MinAtar's Space Invaders (``minatar/environments/space_invaders.py``,
MinAtar 1.0.15), batched."""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np

from batchenv import perenv
from batchenv.envs.minatar._base import (
    FIRE,
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
    sticky_action_env,
)
from batchenv.state import Field, Range

__all__ = ["BatchSpaceInvaders", "SpaceInvadersState"]

# Constants of minatar/environments/space_invaders.py
SHOT_COOL_DOWN = 5  # shot_cool_down: steps between the cannon's shots
ENEMY_MOVE_INTERVAL = 12  # enemy_move_interval: the first wave's steps between alien moves
ENEMY_SHOT_INTERVAL = 10  # enemy_shot_interval: steps between alien shots
FASTEST_MOVE_INTERVAL = 6  # the ramp stops there (``enemy_move_interval > 6``)
CANNON_START = 5  # reset(): self.pos = 5
WAVE_SIZE = 24  # alien_map[0:4, 2:8] = 1

_WAVE_ROW = np.uint16(sum(1 << x for x in range(2, 8)))  # alien_map[0:4, 2:8] = 1
_WAVE_ROWS = 4
_FULL_ROW = np.uint16(ROW_MASKS - 1)
_LEFT_EDGE, _RIGHT_EDGE = np.uint16(1), np.uint16(1 << LAST)  # columns 0 and 9
_BOTTOM = LAST  # the cannon's row
#: Bits set in each 10-bit row mask: the aliens a hit kills.
_POPCOUNT = np.array([bin(m).count("1") for m in range(ROW_MASKS)], dtype=np.int16)
_CHANNELS = 6
_CANNON_DX = np.zeros(6, dtype=np.int8)
_CANNON_DX[LEFT], _CANNON_DX[RIGHT] = -1, 1


class SpaceInvadersState(MinAtarState):
    """One game per row (``BatchSpaceInvaders.state_dtype`` is made from these
    annotations)."""

    pos: Coordinate  # the cannon's column (row 9)
    alien_dir: Heading  # -1 marching left, +1 right
    # enemy_move_interval: 12, one less per wave (ramp) down to 6
    move_interval: Annotated[Field[np.int8], Range(FASTEST_MOVE_INTERVAL,
                                                   ENEMY_MOVE_INTERVAL)]
    # steps to the block's next move: restarts at min(aliens left, move_interval), at
    # least 1 (check_state: a board is never empty at a step's start), then counts down
    alien_move_timer: Annotated[Field[np.int8], Range(0, ENEMY_MOVE_INTERVAL)]
    alien_shot_timer: Annotated[Field[np.int8], Range(0, ENEMY_SHOT_INTERVAL)]  # steps to
    #                                                          the next alien shot
    shot_timer: Annotated[Field[np.int8], Range(0, SHOT_COOL_DOWN)]  # the cannon's
    #                                                                  cool-down
    ramp_index: Field[np.int8]  # waves that sped up (difficulty_ramp()): the rules do not
    #                             read it, so any value is safe
    # aliens left (np.count_nonzero(alien_map): check_state), 1 to a full board: a cleared
    # board gets its new wave in the step that clears it
    alien_count: Annotated[Field[np.int8], Range(1, GRID * GRID)]
    # alien_map, f_bullet_map (the cannon's), e_bullet_map (the aliens') as row masks (bit
    # x of row y is cell (y, x)): 10-bit, each one a row of the tables observe_env and
    # the hits read (_ALIEN_ROWS, _POPCOUNT)
    aliens: Annotated[Field[np.uint16], (GRID,), Range(0, ROW_MASKS - 1)]
    f_bullets: Annotated[Field[np.uint16], (GRID,), Range(0, ROW_MASKS - 1)]
    e_bullets: Annotated[Field[np.uint16], (GRID,), Range(0, ROW_MASKS - 1)]


class BatchSpaceInvaders(MinAtarEnv[SpaceInvadersState]):
    """## Description

    MinAtar's Space Invaders for thousands of games at once, step for step the rules of
    ``minatar/environments/space_invaders.py`` (MinAtar 1.0.15; Young & Tian, 2019). The
    player moves a cannon along the bottom row and shoots upwards at a block of aliens
    (4 rows of 6) that marches sideways, stepping down a row and turning whenever it
    reaches a side. The aliens march faster as they thin out (one move every
    ``min(aliens left, move interval)`` steps) and the alien nearest the cannon shoots
    down every 10 steps. A cleared wave is replaced by a new one that marches one step
    faster (difficulty ramping, down to an interval of 6). Tested step by step against the
    ``minatar`` package (``tests/test_minatar_space_invaders.py``).

    Each step applies, in MinAtar's order:
    :func:`~batchenv.envs.minatar._base.sticky_action_env`, :func:`resolve_action` (fire
    or move), :func:`advance_bullets`, :func:`cannon_hit`, :func:`march_aliens`,
    :func:`aliens_shoot`, :func:`shoot_aliens`, the timers, :func:`send_new_wave`.

    The state keeps the three 10 x 10 boards (aliens, the cannon's bullets, the aliens'
    bullets) as ten 10-bit row masks each (bit x of row y is cell (y, x)): marching and
    bullets are shifts, hits are ANDs, counts a popcount table. The observation copies
    the aliens' rows from a table of row images (a row's code: its mask and the block's
    heading) and paints the cannon and the bullets on.

    ## Action Space

    ``Discrete(6)``: MinAtar's ``n, l, u, r, d, f`` (``u`` and ``d`` do nothing), or with
    ``minimal_action_set=True`` (``-v1``) ``Discrete(4)``: ``n, l, r, f``. ``f`` fires
    when the cannon has cooled down (5 steps after its last shot), and then does not move.

    ## Observation Space

    ``Box(0, 1, (10, 10, 6), bool)``, MinAtar's channels in its order: 0 ``cannon``,
    1 ``alien``, 2 ``alien_left`` and 3 ``alien_right`` (every alien again, in the channel
    of the block's direction), 4 ``friendly_bullet``, 5 ``enemy_bullet``.

    ## Rewards

    +1 for each alien shot.

    ## Starting State

    The cannon in column 5 of the bottom row; aliens in rows 0-3, columns 2-7, marching
    left, moving every 12 steps; the first alien shot after 10 steps. No randomness.

    ## Episode End

    Terminated when an alien bullet or an alien reaches the cannon's cell, or when the
    block steps down while an alien is on the bottom row. No time limit by default
    (MinAtar has none); ``max_episode_steps=`` adds one.

    ## Arguments

    ``BatchSpaceInvaders(num_envs, *, difficulty_ramping=True, sticky_action_prob=0.1,
    minimal_action_set=False, render_scale=8, **BatchEnv options)``. With
    ``difficulty_ramping=False`` every wave marches at the first wave's speed.
    ``render_mode``: ``"rgb_array"`` (MinAtar's cubehelix palette) or ``"ansi"``.
    ``kernels="auto"`` (default): the rules compiled by numba when it is installed, else
    run as a Python loop (with a warning); ``"numba"`` or ``"python"`` to choose, and
    ``num_threads=`` for the compiled loop (identical results: docs/minatar.md).

    ## Random Words

    The game itself is deterministic: each step draws 1 word per env, the sticky-action
    draw, and resets draw none. The mapping for ``tests/minatar_parity.py``:
    ``Environment.act``'s ``rand()`` is step word 0.

    ## Quirks of the reference, reproduced

    * Hits are tested only after everything moved: a bullet and an alien that swap cells
      in one step (the bullet rising into the alien's row as the block steps down into
      the bullet's) pass through each other.
    * When the block steps down from the bottom row (ending the episode) MinAtar rolls
      its bottom row round to the top (``np.roll``): the final observation shows those
      aliens in row 0.
    * The alien that shoots is the lowest one of the occupied column nearest the cannon;
      of two columns equally near, the left one.
    * The wave-clear test and the new wave come after the timers: a new wave keeps the
      move timer of the last alien (``min(aliens left, interval)``), so it first moves
      at most one step after the last alien dies.
    * ``last_action`` (sticky actions) carries over from one episode to the next, as in
      MinAtar's ``Environment``; ``reset(seed=...)`` clears it.

    ## Version History

    * v0 / v1: as MinAtar 1.0.15's ``MinAtar/SpaceInvaders-v0`` / ``-v1``. Its rules are
      written once, as per-env kernels: ``kernels="numpy"`` (a second copy of the rules as
      numpy kernels) is gone; the results are the same.
    """

    game = "space_invaders"
    channels = ("cannon", "alien", "alien_left", "alien_right", "friendly_bullet",
                "enemy_bullet")
    minimal_actions = (0, 1, 3, 5)
    step_words = 1
    reset_words = 0
    ansi_chars = "^A<>!v"
    state_type = SpaceInvadersState

    def check_state(self, states: np.ndarray) -> dict[str, np.ndarray]:
        """The block marching one way or the other, and ``alien_count`` counting the
        aliens on the board (it times the march and tells a cleared wave)."""
        on_board = _POPCOUNT[states["aliens"] & _FULL_ROW].sum(axis=1)  # (beyond: a range's)
        return {"alien_dir not -1 or +1": np.abs(states["alien_dir"]) != 1,
                "alien_count not the number of aliens on the board":
                    on_board != states["alien_count"]}

    # ------------------------------------------------------------ kernels (row i)
    @staticmethod
    def reset_env(p: Any, s: Any, i: int) -> None:
        s.pos[i] = CANNON_START
        for y in range(GRID):
            s.aliens[i, y] = _WAVE_ROW if y < _WAVE_ROWS else _NO_ROW
            s.f_bullets[i, y] = s.e_bullets[i, y] = _NO_ROW
        s.alien_dir[i] = -1
        s.move_interval[i] = s.alien_move_timer[i] = ENEMY_MOVE_INTERVAL
        s.alien_shot_timer[i] = ENEMY_SHOT_INTERVAL
        s.ramp_index[i] = 0
        s.alien_count[i] = WAVE_SIZE
        s.shot_timer[i] = 0

    @staticmethod
    def step_env(p: Any, s: Any, i: int, action: int) -> tuple[float, bool]:
        a = sticky_action_env(p, s, i, action)
        new_bullet = resolve_action(s, i, a)
        advance_bullets(s, i, new_bullet)
        terminated = cannon_hit(s, i)
        if s.alien_move_timer[i] == 0:
            terminated |= march_aliens(s, i)
        if s.alien_shot_timer[i] == 0:
            s.alien_shot_timer[i] = ENEMY_SHOT_INTERVAL
            aliens_shoot(s, i)
        killed = shoot_aliens(s, i)
        s.alien_count[i] -= killed
        if s.shot_timer[i] > 0:  # the timers (the aliens' restart when 0 at a step's start)
            s.shot_timer[i] -= 1
        s.alien_move_timer[i] -= 1
        s.alien_shot_timer[i] -= 1
        if s.alien_count[i] == 0:
            send_new_wave(p, s, i)
        return float(killed), terminated

    @staticmethod
    def observe_env(p: Any, s: Any, i: int, obs: np.ndarray) -> None:
        heading = _RIGHT_CODE if s.alien_dir[i] > 0 else 0
        words = perenv.words(obs)
        for y in range(0, GRID, 2):  # every cell of the board: the aliens' rows, by pairs
            draw_alien_rows(words, y, s.aliens[i, y] | heading, s.aliens[i, y + 1] | heading)
        for y in range(GRID):
            f, e = s.f_bullets[i, y], s.e_bullets[i, y]
            if f | e:  # bullets are few: most rows have none
                for x in range(GRID):
                    obs[y, x, _F_BULLET] = (f >> x) & 1
                    obs[y, x, _E_BULLET] = (e >> x) & 1
        obs[_BOTTOM, s.pos[i], _CANNON] = True


def _alien_rows() -> np.ndarray:
    """The image of a board row for each code ``mask + 1024 * right`` (a row of aliens and
    the block's heading): the aliens of the 10-bit mask in channel 1 (``alien``) and in
    channel 2 (``alien_left``) or, marching right, 3 (``alien_right``)."""
    code = np.arange(2 << ROW_BITS)
    on = ((code[:, None] >> np.arange(GRID)) & 1).astype(bool)
    images = np.zeros((len(code), GRID, _CHANNELS), dtype=bool)
    images[..., 1] = on
    images[..., 2] = on & (code < 1 << ROW_BITS)[:, None]
    images[..., 3] = on & (code >= 1 << ROW_BITS)[:, None]
    return images


# ---------------------------------------------------------------- rules (row i)
_CANNON, _ALIEN, _ALIEN_LEFT, _ALIEN_RIGHT, _F_BULLET, _E_BULLET = range(_CHANNELS)
_NO_ROW = np.uint16(0)
_RIGHT_CODE = 1 << ROW_BITS  # _alien_rows' code of a row: its mask, + 1024 marching right
_ALIEN_ROWS = _alien_rows()
#: _alien_rows' images as words: a board row is 60 bytes, so a pair of rows is 15 words, the
#: first row in words 0-6 and the low half of word 7 (_EVEN_ROW_WORDS: its 60 bytes, then 4
#: zero bytes), the second in the high half of word 7 and words 8-14 (_ODD_ROW_WORDS: 4 zero
#: bytes, then its 60).
_ROW_BYTES = _ALIEN_ROWS.reshape(len(_ALIEN_ROWS), -1).view(np.uint8)
_PAD = np.zeros((len(_ALIEN_ROWS), 4), dtype=np.uint8)
_EVEN_ROW_WORDS = np.ascontiguousarray(np.hstack([_ROW_BYTES, _PAD])).view(np.uint64)
_ODD_ROW_WORDS = np.ascontiguousarray(np.hstack([_PAD, _ROW_BYTES])).view(np.uint64)
_PAIR_WORDS = 2 * GRID * _CHANNELS // 8  # 15
_ONE16 = np.uint16(1)


@perenv.rule
def draw_alien_rows(words: np.ndarray, y: int, code: int, next_code: int) -> None:
    """Board rows ``y`` (even) and ``y + 1`` of an observation (``words``: all of it, as
    perenv.words) set to :func:`_alien_rows`' images of ``code`` and ``next_code``:
    every cell and channel of the two rows, in 15 words."""
    first = y // 2 * _PAIR_WORDS
    for k in range(7):
        words[first + k] = _EVEN_ROW_WORDS[code, k]
    words[first + 7] = _EVEN_ROW_WORDS[code, 7] | _ODD_ROW_WORDS[next_code, 0]
    for k in range(1, 8):
        words[first + 7 + k] = _ODD_ROW_WORDS[next_code, k]


@perenv.rule
def resolve_action(s: Any, i: int, a: int) -> int:
    """``f`` with the cannon cooled down fires (a bullet in the cannon's cell, the
    cool-down restarts); ``l``/``r`` move the cannon one column within the board. Returns
    the new bullet as a bottom-row mask (0 if none)."""
    new_bullet = 0
    if a == FIRE and s.shot_timer[i] == 0:
        s.shot_timer[i] = SHOT_COOL_DOWN
        new_bullet = _ONE16 << s.pos[i]
    s.pos[i] = min(max(s.pos[i] + _CANNON_DX[a], 0), LAST)
    return new_bullet


@perenv.rule
def advance_bullets(s: Any, i: int, new_bullet: int) -> None:
    """The cannon's bullets (with the new one from the bottom row) rise a row, leaving the
    board above row 0 (the new one goes into row 8, row 9 is cleared); the aliens' bullets
    fall a row, leaving it below row 9."""
    for y in range(LAST - 1):
        s.f_bullets[i, y] = s.f_bullets[i, y + 1]
    s.f_bullets[i, LAST - 1] = new_bullet  # row 9 holds only new bullets
    s.f_bullets[i, LAST] = 0
    for y in range(LAST, 0, -1):
        s.e_bullets[i, y] = s.e_bullets[i, y - 1]
    s.e_bullets[i, 0] = 0


@perenv.rule
def cannon_hit(s: Any, i: int) -> bool:
    """Whether an alien bullet or an alien is in the cannon's cell (the episode ends)."""
    cannon = _ONE16 << s.pos[i]
    return (s.e_bullets[i, _BOTTOM] | s.aliens[i, _BOTTOM]) & cannon != 0


@perenv.rule
def march_aliens(s: Any, i: int) -> bool:
    """Row ``i``'s move timer ran out: it restarts at ``min(aliens left, move
    interval)``; a block at the side it marches to turns round and steps down a row
    (MinAtar's ``np.roll``: the bottom row comes round to the top, ending the episode if
    it held aliens), else it shifts a column. Returns whether the episode ends (also when
    an alien lands on the cannon)."""
    s.alien_move_timer[i] = min(s.alien_count[i], s.move_interval[i])
    columns = 0
    for y in range(GRID):
        columns |= s.aliens[i, y]
    left = s.alien_dir[i] < 0
    turn = columns & (_LEFT_EDGE if left else _RIGHT_EDGE) != 0
    bottom = s.aliens[i, LAST]
    if turn:  # down a row (np.roll), and the other way
        s.alien_dir[i] = -s.alien_dir[i]
        for y in range(LAST, 0, -1):
            s.aliens[i, y] = s.aliens[i, y - 1]
        s.aliens[i, 0] = bottom
    else:
        for y in range(GRID):
            row = s.aliens[i, y]
            s.aliens[i, y] = row >> 1 if left else (row << 1) & _FULL_ROW
    landed = (s.aliens[i, _BOTTOM] >> s.pos[i]) & 1 != 0
    return (turn and bottom != 0) or landed


@perenv.rule
def aliens_shoot(s: Any, i: int) -> None:
    """Row ``i``'s shot timer ran out: the lowest alien of the occupied column nearest the
    cannon (the left one of two equally near; column 0 if none) drops a bullet in its
    cell (row 9 if the column is empty)."""
    p = s.pos[i]
    columns = 0
    for y in range(GRID):
        columns |= s.aliens[i, y]
    column = 0
    for d in range(GRID):  # by distance, the left column first (MinAtar's stable sort)
        if p - d >= 0 and (columns >> (p - d)) & 1:
            column = p - d
            break
        if p + d <= LAST and (columns >> (p + d)) & 1:
            column = p + d
            break
    lowest = _BOTTOM
    for y in range(GRID):
        if (s.aliens[i, y] >> column) & 1:
            lowest = y
    s.e_bullets[i, lowest] |= _ONE16 << column


@perenv.rule
def shoot_aliens(s: Any, i: int) -> int:
    """A cannon bullet in an alien's cell removes both. Returns the aliens killed (+1
    each)."""
    killed = 0
    for y in range(GRID):
        hit = s.aliens[i, y] & s.f_bullets[i, y]
        if hit:
            s.aliens[i, y] ^= hit
            s.f_bullets[i, y] ^= hit
            killed += _POPCOUNT[hit]
    return killed


@perenv.rule
def send_new_wave(p: Any, s: Any, i: int) -> None:
    """Row ``i``'s board is cleared: a new wave in rows 0-3, columns 2-7, marching one step
    faster with ramping (down to an interval of 6)."""
    if p.difficulty_ramping and s.move_interval[i] > FASTEST_MOVE_INTERVAL:
        s.move_interval[i] -= 1
        s.ramp_index[i] += 1
    for y in range(_WAVE_ROWS):
        s.aliens[i, y] = _WAVE_ROW
    s.alien_count[i] = WAVE_SIZE
