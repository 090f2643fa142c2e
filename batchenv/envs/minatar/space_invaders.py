"""BatchSpaceInvaders: MinAtar's Space Invaders (``minatar/environments/space_invaders.py``,
MinAtar 1.0.15), batched."""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np

from batchenv import perenv
from batchenv.envs.minatar._base import (
    FIRE,
    GRID,
    LEFT,
    RIGHT,
    MinAtarEnv,
    MinAtarState,
    sticky_action_env,
)
from batchenv.envs.minatar._rows import BIT, POPCOUNT, ROW_BITS, RowCanvas, set_cells
from batchenv.random import BatchRandom
from batchenv.state import Field

__all__ = ["BatchSpaceInvaders", "SpaceInvadersState"]

# Constants of minatar/environments/space_invaders.py
SHOT_COOL_DOWN = 5  # shot_cool_down: steps between the cannon's shots
ENEMY_MOVE_INTERVAL = 12  # enemy_move_interval: the first wave's steps between alien moves
ENEMY_SHOT_INTERVAL = 10  # enemy_shot_interval: steps between alien shots
FASTEST_MOVE_INTERVAL = 6  # the ramp stops there (``enemy_move_interval > 6``)
CANNON_START = 5  # reset(): self.pos = 5
WAVE_SIZE = 24  # alien_map[0:4, 2:8] = 1

_BIT = BIT
_WAVE_ROW = np.uint16(sum(1 << x for x in range(2, 8)))  # alien_map[0:4, 2:8] = 1
_WAVE_ROWS = slice(0, 4)
_FULL_ROW = np.uint16((1 << GRID) - 1)
_LEFT_EDGE, _RIGHT_EDGE = _BIT[0], _BIT[GRID - 1]
_BOTTOM = GRID - 1  # the cannon's row
_POPCOUNT = POPCOUNT
_CHANNELS = 6
_COLUMNS = np.arange(GRID, dtype=np.int16)
_CANNON_DX = np.zeros(6, dtype=np.int8)
_CANNON_DX[LEFT], _CANNON_DX[RIGHT] = -1, 1
_ZERO, _NINE = np.array(0, dtype=np.int8), np.array(GRID - 1, dtype=np.int8)


class SpaceInvadersState(MinAtarState):
    """One game per row (``BatchSpaceInvaders.state_dtype`` is made from these
    annotations)."""

    pos: Field[np.int8]  # the cannon's column (row 9)
    alien_dir: Field[np.int8]  # -1 marching left, +1 right
    move_interval: Field[np.int8]  # enemy_move_interval: 12, one less per wave (ramp)
    alien_move_timer: Field[np.int8]  # steps to the block's next move
    alien_shot_timer: Field[np.int8]  # steps to the next alien shot
    shot_timer: Field[np.int8]  # the cannon's cool-down
    ramp_index: Field[np.int8]  # waves that sped up (difficulty_ramp())
    alien_count: Field[np.int8]  # aliens left (np.count_nonzero(alien_map))
    aliens: Annotated[Field[np.uint16], (GRID,)]  # alien_map as row masks: bit x of row y
    f_bullets: Annotated[Field[np.uint16], (GRID,)]  # f_bullet_map (the cannon's)
    e_bullets: Annotated[Field[np.uint16], (GRID,)]  # e_bullet_map (the aliens')


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
    :func:`~batchenv.envs.minatar._base.sticky_actions`, :func:`resolve_action` (fire or
    move), :func:`advance_bullets`, :func:`cannon_hit`, :func:`march_aliens`,
    :func:`aliens_shoot`, :func:`shoot_aliens`, :func:`count_down_timers`,
    :func:`send_new_wave`.

    The state keeps the three 10 x 10 boards (aliens, the cannon's bullets, the aliens'
    bullets) as ten 10-bit row masks each (bit x of row y is cell (y, x)): marching and
    bullets are shifts, hits are ANDs, counts a popcount table. The observation keeps the
    aliens drawn between steps (``_rows.RowCanvas``, a row's code: its mask and the
    block's heading) and paints the cannon and the bullets on.

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
    ``kernels="auto"`` (default): the per-env kernels compiled when numba is installed,
    else the numpy kernels; ``"numpy"``, ``"numba"`` or ``"python"`` (the per-env kernels
    as a Python loop) to choose, and ``num_threads=`` for the compiled loop (identical
    results: docs/minatar.md).

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

    * v0 / v1: as MinAtar 1.0.15's ``MinAtar/SpaceInvaders-v0`` / ``-v1``.
    """

    game = "space_invaders"
    channels = ("cannon", "alien", "alien_left", "alien_right", "friendly_bullet",
                "enemy_bullet")
    minimal_actions = (0, 1, 3, 5)
    step_words = 1
    reset_words = 0
    ansi_chars = "^A<>!v"
    state_type = SpaceInvadersState

    def __init__(self, num_envs: int | None = None, **kwargs: Any) -> None:
        super().__init__(num_envs, **kwargs)
        if self.kernels == "numpy":  # (observe_env draws every row itself)
            self._alien_canvas = RowCanvas(self.num_envs, tuple(range(GRID)), _alien_rows(),
                                           (GRID, GRID, _CHANNELS), np.uint16)

    def reset_envs(self, s: SpaceInvadersState, rng: BatchRandom) -> None:
        s.pos[:] = CANNON_START
        s.f_bullets[:] = 0
        s.e_bullets[:] = 0
        s.aliens[:] = 0
        s.aliens[:, _WAVE_ROWS] = _WAVE_ROW
        s.alien_dir[:] = -1
        s.move_interval[:] = ENEMY_MOVE_INTERVAL
        s.alien_move_timer[:] = ENEMY_MOVE_INTERVAL
        s.alien_shot_timer[:] = ENEMY_SHOT_INTERVAL
        s.ramp_index[:] = 0
        s.alien_count[:] = WAVE_SIZE
        s.shot_timer[:] = 0

    def step_envs(self, s: SpaceInvadersState, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        words = self.step_draws(s, rng)
        a = self.game_actions(s, action, words[0])
        new_bullets = resolve_action(s, a)
        advance_bullets(s, new_bullets)
        terminated = self.terminated_buffer
        cannon_hit(s, terminated)
        march_aliens(s, terminated)
        aliens_shoot(s)
        reward = self.reward_buffer
        shoot_aliens(s, reward)
        count_down_timers(s)
        send_new_wave(s, self.difficulty_ramping)
        return reward, terminated

    def observe(self, s: SpaceInvadersState, out: np.ndarray) -> None:
        # the aliens, redrawn where their rows changed; then the cannon and the bullets
        # (few: painted cell by cell)
        self._alien_canvas.draw(out, alien_codes(s))
        n = len(s)
        grid = self.grid(n)
        cells = [grid.cells(np.full(n, _BOTTOM, dtype=np.int8), s.pos, 0)]  # the cannon
        for board, channel in ((s.f_bullets, 4), (s.e_bullets, 5)):
            pair, column = set_cells(board)  # pair: env * 10 + row, a board row's index
            cells.append(pair * grid.y_stride + (column * grid.x_stride + channel))
        out.reshape(-1)[np.concatenate(cells)] = True

    # ------------------------------------------------------------ per-env kernels
    # The same rules for one env, row i (batchenv.perenv: compiled by numba into one loop
    # over the batch), decision for decision and draw for draw as the numpy kernels above.

    @staticmethod
    def reset_env(p: Any, s: Any, i: int) -> None:
        s.pos[i] = CANNON_START
        for y in range(GRID):
            s.aliens[i, y] = _WAVE_ROW if y < _WAVE_ROWS.stop else _NO_ROW
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
        new_bullet = resolve_action_env(s, i, a)
        advance_bullets_env(s, i, new_bullet)
        terminated = cannon_hit_env(s, i)
        if s.alien_move_timer[i] == 0:
            terminated |= march_aliens_env(s, i)
        if s.alien_shot_timer[i] == 0:
            s.alien_shot_timer[i] = ENEMY_SHOT_INTERVAL
            aliens_shoot_env(s, i)
        killed = shoot_aliens_env(s, i)
        s.alien_count[i] -= killed
        if s.shot_timer[i] > 0:  # count_down_timers
            s.shot_timer[i] -= 1
        s.alien_move_timer[i] -= 1
        s.alien_shot_timer[i] -= 1
        if s.alien_count[i] == 0:
            send_new_wave_env(p, s, i)
        return float(killed), terminated

    @staticmethod
    def observe_env(p: Any, s: Any, i: int, obs: np.ndarray) -> None:
        heading = _RIGHT_CODE if s.alien_dir[i] > 0 else 0
        words = perenv.words(obs)
        for y in range(0, GRID, 2):  # every cell of the board: the aliens' rows, by pairs
            draw_alien_rows_env(words, y, s.aliens[i, y] | heading,
                                s.aliens[i, y + 1] | heading)
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


def alien_codes(s: SpaceInvadersState) -> np.ndarray:
    """Each board row's code for :func:`_alien_rows`: its alien mask, plus 1024 when the
    block marches right."""
    right = (s.alien_dir > 0).astype(np.uint16)
    right <<= ROW_BITS
    code = right.repeat(GRID).reshape(len(s), GRID)  # (a real array: see _rows.per_slot)
    code |= s.aliens
    return code


def resolve_action(s: SpaceInvadersState, a: np.ndarray) -> np.ndarray:
    """``f`` with the cannon cooled down fires (a bullet in the cannon's cell, the
    cool-down restarts); ``l``/``r`` move the cannon one column within the board. Returns
    the new bullets as bottom-row masks (0 where the cannon did not fire)."""
    firing = (a == FIRE) & (s.shot_timer == 0)
    new_bullets = _BIT[s.pos] * firing
    s.shot_timer[firing] = SHOT_COOL_DOWN
    s.pos += _CANNON_DX[a]
    np.clip(s.pos, _ZERO, _NINE, out=s.pos)
    return new_bullets


def advance_bullets(s: SpaceInvadersState, new_bullets: np.ndarray) -> None:
    """The cannon's bullets (with the new ones from the bottom row) rise a row, leaving
    the board above row 0; the aliens' bullets fall a row, leaving it below row 9."""
    # Each env's 10 rows are consecutive in memory: shifting the whole (n * 10) array by
    # one row moves every env's rows at once, and the rows that cross into the next env
    # (row 0 of the cannon's bullets, row 9 of the aliens') are the ones overwritten below.
    f = s.f_bullets.reshape(-1)
    f[:-1] = f[1:]
    s.f_bullets[:, _BOTTOM - 1] = new_bullets  # row 9 held only new bullets (cleared below)
    s.f_bullets[:, _BOTTOM] = 0
    e = s.e_bullets.reshape(-1)
    e[1:] = e[:-1]
    s.e_bullets[:, 0] = 0


def cannon_hit(s: SpaceInvadersState, terminated: np.ndarray) -> None:
    """The episode ends if an alien bullet or an alien is in the cannon's cell."""
    cannon = _BIT[s.pos]
    np.not_equal((s.e_bullets[:, _BOTTOM] | s.aliens[:, _BOTTOM]) & cannon, 0, out=terminated)


def march_aliens(s: SpaceInvadersState, terminated: np.ndarray) -> None:
    """Envs whose move timer ran out move their block: it restarts at ``min(aliens left,
    move interval)``; a block at the side it marches to turns round and steps down a row
    (ending the episode if it had an alien on the bottom row; MinAtar's ``np.roll``
    brings that row round to the top), else it shifts a column. An alien landing on the
    cannon ends the episode."""
    idx = (s.alien_move_timer == 0).nonzero()[0]
    if not len(idx):
        return
    block = s.aliens[idx]
    s.alien_move_timer[idx] = np.minimum(s.alien_count[idx], s.move_interval[idx])
    columns = np.bitwise_or.reduce(block, axis=1)
    d = s.alien_dir[idx]
    turn = np.where(d < 0, columns & _LEFT_EDGE, columns & _RIGHT_EDGE) != 0
    s.alien_dir[idx] = np.where(turn, -d, d)
    down = np.roll(block, 1, axis=1)
    sideways = np.where((d < 0)[:, None], block >> 1, (block << 1) & _FULL_ROW)
    block = np.where(turn[:, None], down, sideways)
    s.aliens[idx] = block
    crushed = turn & (down[:, 0] != 0)  # the row rolled to the top was the bottom row
    crushed |= (block[:, _BOTTOM] & _BIT[s.pos[idx]]) != 0
    terminated[idx] |= crushed


def aliens_shoot(s: SpaceInvadersState) -> None:
    """Envs whose shot timer ran out restart it; the lowest alien of the occupied column
    nearest the cannon (the left one of two equally near) drops a bullet in its cell."""
    idx = (s.alien_shot_timer == 0).nonzero()[0]
    if not len(idx):
        return
    s.alien_shot_timer[idx] = ENEMY_SHOT_INTERVAL
    block = s.aliens[idx]
    columns = np.bitwise_or.reduce(block, axis=1)
    occupied = (columns[:, None] >> _COLUMNS) & 1
    pos = s.pos[idx].astype(np.int16)[:, None]
    # MinAtar searches columns sorted by |x - pos| (a stable sort: the left one first)
    order = 2 * np.abs(_COLUMNS - pos) + (_COLUMNS > pos)
    column = np.where(occupied != 0, order, 4 * GRID).argmin(axis=1)
    in_column = (block >> column[:, None].astype(np.uint16)) & 1  # (k, rows)
    lowest = _BOTTOM - in_column[:, ::-1].argmax(axis=1)
    s.e_bullets[idx, lowest] |= _BIT[column]


def shoot_aliens(s: SpaceInvadersState, reward: np.ndarray) -> None:
    """A cannon bullet in an alien's cell removes both; +1 per alien."""
    hits = (s.aliens & s.f_bullets).reshape(-1)  # (env, row) pairs, flat
    reward.fill(0.0)
    pairs = hits.nonzero()[0]
    if not len(pairs):
        return
    hit = hits[pairs]
    s.aliens.reshape(-1)[pairs] ^= hit
    s.f_bullets.reshape(-1)[pairs] ^= hit
    env = pairs // GRID
    killed = _POPCOUNT[hit]
    np.add.at(reward, env, killed)
    np.subtract.at(s.alien_count, env, killed.astype(np.int8))


def count_down_timers(s: SpaceInvadersState) -> None:
    """The cannon's cool-down counts down to 0; the aliens' move and shot timers count
    down (each restarts when it is 0 at the start of a step)."""
    s.shot_timer -= s.shot_timer > 0
    s.alien_move_timer -= 1
    s.alien_shot_timer -= 1


def send_new_wave(s: SpaceInvadersState, ramping: bool) -> None:
    """A cleared board gets a new wave (rows 0-3, columns 2-7); with ramping, the move
    interval drops by one per wave down to 6."""
    idx = (s.alien_count == 0).nonzero()[0]
    if not len(idx):
        return
    if ramping:
        faster = idx[s.move_interval[idx] > FASTEST_MOVE_INTERVAL]
        s.move_interval[faster] -= 1
        s.ramp_index[faster] += 1
    s.aliens[idx, _WAVE_ROWS] = _WAVE_ROW
    s.alien_count[idx] = WAVE_SIZE


# ---------------------------------------------------------------- per-env rules (row i)
_CANNON, _ALIEN, _ALIEN_LEFT, _ALIEN_RIGHT, _F_BULLET, _E_BULLET = range(_CHANNELS)
_NO_ROW = np.uint16(0)
_LAST = GRID - 1
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
def draw_alien_rows_env(words: np.ndarray, y: int, code: int, next_code: int) -> None:
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
def resolve_action_env(s: Any, i: int, a: int) -> int:
    """:func:`resolve_action` for row ``i``: ``f`` with the cannon cooled down fires (the
    cool-down restarts), ``l``/``r`` move the cannon within the board. Returns the new
    bullet as a bottom-row mask (0 if none)."""
    new_bullet = 0
    if a == FIRE and s.shot_timer[i] == 0:
        s.shot_timer[i] = SHOT_COOL_DOWN
        new_bullet = _ONE16 << s.pos[i]
    s.pos[i] = min(max(s.pos[i] + _CANNON_DX[a], 0), _LAST)
    return new_bullet


@perenv.rule
def advance_bullets_env(s: Any, i: int, new_bullet: int) -> None:
    """:func:`advance_bullets` for row ``i``: the cannon's bullets rise a row (the new one
    into row 8, row 9 cleared), the aliens' fall a row (row 0 cleared)."""
    for y in range(_LAST - 1):
        s.f_bullets[i, y] = s.f_bullets[i, y + 1]
    s.f_bullets[i, _LAST - 1] = new_bullet  # row 9 holds only new bullets
    s.f_bullets[i, _LAST] = 0
    for y in range(_LAST, 0, -1):
        s.e_bullets[i, y] = s.e_bullets[i, y - 1]
    s.e_bullets[i, 0] = 0


@perenv.rule
def cannon_hit_env(s: Any, i: int) -> bool:
    """:func:`cannon_hit` for row ``i``: an alien bullet or an alien in the cannon's
    cell."""
    cannon = _ONE16 << s.pos[i]
    return (s.e_bullets[i, _BOTTOM] | s.aliens[i, _BOTTOM]) & cannon != 0


@perenv.rule
def march_aliens_env(s: Any, i: int) -> bool:
    """:func:`march_aliens` for row ``i``, whose move timer ran out: the timer restarts; a
    block at the side it marches to turns and steps down (``np.roll``: the bottom row
    comes round to the top, ending the episode if it held aliens), else it shifts a
    column. Returns whether the episode ends (also when an alien lands on the cannon)."""
    s.alien_move_timer[i] = min(s.alien_count[i], s.move_interval[i])
    columns = 0
    for y in range(GRID):
        columns |= s.aliens[i, y]
    left = s.alien_dir[i] < 0
    turn = columns & (_LEFT_EDGE if left else _RIGHT_EDGE) != 0
    bottom = s.aliens[i, _LAST]
    if turn:  # down a row (np.roll), and the other way
        s.alien_dir[i] = -s.alien_dir[i]
        for y in range(_LAST, 0, -1):
            s.aliens[i, y] = s.aliens[i, y - 1]
        s.aliens[i, 0] = bottom
    else:
        for y in range(GRID):
            row = s.aliens[i, y]
            s.aliens[i, y] = row >> 1 if left else (row << 1) & _FULL_ROW
    landed = (s.aliens[i, _BOTTOM] >> s.pos[i]) & 1 != 0
    return (turn and bottom != 0) or landed


@perenv.rule
def aliens_shoot_env(s: Any, i: int) -> None:
    """:func:`aliens_shoot` for row ``i``, whose shot timer ran out: the lowest alien of
    the occupied column nearest the cannon (the left one of two equally near; column 0 if
    none) drops a bullet in its cell (row 9 if the column is empty)."""
    p = s.pos[i]
    columns = 0
    for y in range(GRID):
        columns |= s.aliens[i, y]
    column = 0
    for d in range(GRID):  # by distance, the left column first (MinAtar's stable sort)
        if p - d >= 0 and (columns >> (p - d)) & 1:
            column = p - d
            break
        if p + d <= _LAST and (columns >> (p + d)) & 1:
            column = p + d
            break
    lowest = _BOTTOM
    for y in range(GRID):
        if (s.aliens[i, y] >> column) & 1:
            lowest = y
    s.e_bullets[i, lowest] |= _ONE16 << column


@perenv.rule
def shoot_aliens_env(s: Any, i: int) -> int:
    """:func:`shoot_aliens` for row ``i``: a cannon bullet in an alien's cell removes both.
    Returns the aliens killed."""
    killed = 0
    for y in range(GRID):
        hit = s.aliens[i, y] & s.f_bullets[i, y]
        if hit:
            s.aliens[i, y] ^= hit
            s.f_bullets[i, y] ^= hit
            killed += _POPCOUNT[hit]
    return killed


@perenv.rule
def send_new_wave_env(p: Any, s: Any, i: int) -> None:
    """:func:`send_new_wave` for row ``i``, whose board is cleared: a new wave in rows 0-3,
    marching one step faster with ramping (down to an interval of 6)."""
    if p.difficulty_ramping and s.move_interval[i] > FASTEST_MOVE_INTERVAL:
        s.move_interval[i] -= 1
        s.ramp_index[i] += 1
    for y in range(_WAVE_ROWS.stop):
        s.aliens[i, y] = _WAVE_ROW
    s.alien_count[i] = WAVE_SIZE
