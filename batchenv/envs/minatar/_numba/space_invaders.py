"""BatchSpaceInvaders' rules as one compiled loop over the envs (the numba layer: see
:mod:`batchenv.envs.minatar._numba`). Each step follows ``space_invaders.py``'s numpy
kernels decision for decision: ``resolve_action``, ``advance_bullets``, ``cannon_hit``,
``march_aliens``, ``aliens_shoot``, ``shoot_aliens``, ``count_down_timers`` and
``send_new_wave``, on the same row masks (bit x of board row y is cell (y, x)). The game
draws only the sticky word; resets (``reset_envs``) draw nothing.

The observation follows ``observe``: each board row is written whole from
``_alien_rows``' image of its aliens and the block's heading (as the numpy path's
``RowCanvas``, but every row every time: no canvas to keep), then the bullets and the
cannon are set."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from batchenv.envs.minatar._base import FIRE, GRID
from batchenv.envs.minatar._numba import (
    cell,
    flat_cells,
    game_action,
    jit,
    sticky_limit,
)
from batchenv.envs.minatar._rows import POPCOUNT, ROW_BITS
from batchenv.envs.minatar.space_invaders import (
    _BOTTOM,
    _CANNON_DX,
    _CHANNELS,
    _FULL_ROW,
    _LEFT_EDGE,
    _RIGHT_EDGE,
    _WAVE_ROW,
    _WAVE_ROWS,
    CANNON_START,
    ENEMY_MOVE_INTERVAL,
    ENEMY_SHOT_INTERVAL,
    FASTEST_MOVE_INTERVAL,
    SHOT_COOL_DOWN,
    WAVE_SIZE,
    _alien_rows,
)
from batchenv.random import BatchRandom

__all__ = ["step_envs", "observe", "reset_rows"]

_LAST = GRID - 1  # the last row and column of the board
_WAVE_HEIGHT = _WAVE_ROWS.stop  # a new wave fills rows 0-3
_CANNON, _ALIEN, _ALIEN_LEFT, _ALIEN_RIGHT, _F_BULLET, _E_BULLET = range(_CHANNELS)
_NONE16 = np.uint16(0)
_RIGHT_CODE = 1 << ROW_BITS  # _alien_rows' code of a row: its mask, + 1024 marching right
#: _alien_rows' images (every channel of a board row's 10 cells, 60 bytes) as 15 words
#: each. A global, so numba compiles it in as a constant: the compiler then knows the
#: observation cannot overlap it and copies a row in a few vector moves.
_ALIEN_ROW_WORDS = np.ascontiguousarray(
    _alien_rows().reshape(2 << ROW_BITS, GRID * _CHANNELS)).view(np.uint32)
_ROW_WORDS = _ALIEN_ROW_WORDS.shape[1]


def step_envs(env: Any, s: Any, action: np.ndarray, rng: BatchRandom
              ) -> tuple[np.ndarray, np.ndarray]:
    """``BatchSpaceInvaders.step_envs``, compiled."""
    limit, always = sticky_limit(env.sticky_action_prob)
    reward, terminated = env.reward_buffer, env.terminated_buffer
    _step(action, env.action_set, limit, always, env.difficulty_ramping, s.last_action,
          s.rng_key, s.rng_counter, s.awaiting_reset, s.pos, s.alien_dir, s.move_interval,
          s.alien_move_timer, s.alien_shot_timer, s.shot_timer, s.ramp_index,
          s.alien_count, s.aliens, s.f_bullets, s.e_bullets, reward, terminated)
    return reward, terminated


def reset_rows(env: Any, s: Any, rows: np.ndarray | slice, rng: BatchRandom) -> None:
    """``BatchSpaceInvaders.reset_envs`` at ``rows``, compiled (no draws: the start state
    is fixed)."""
    if isinstance(rows, slice):
        rows = np.arange(len(s))[rows]
    _reset(rows, s.pos, s.alien_dir, s.move_interval, s.alien_move_timer, s.alien_shot_timer,
           s.shot_timer, s.ramp_index, s.alien_count, s.aliens, s.f_bullets, s.e_bullets)


def observe(env: Any, s: Any, out: np.ndarray) -> None:
    """``BatchSpaceInvaders.observe``, compiled: writes every cell of ``out``."""
    cells = flat_cells(out)
    _observe(s.pos, s.alien_dir, s.aliens, s.f_bullets, s.e_bullets,
             cells.view(np.uint32), cells)


# ---------------------------------------------------------------- the rules, one env each
@jit
def _step(action, action_set, limit, always, ramping, last_action, key, counter, awaiting,
          pos, alien_dir, move_interval, alien_move_timer, alien_shot_timer, shot_timer,
          ramp_index, alien_count, aliens, f_bullets, e_bullets, reward,
          terminated):  # pragma: no cover (compiled)
    for i in range(len(action)):
        reward[i] = 0.0
        terminated[i] = False
        if awaiting[i]:  # a discarded step: no draw, no change (MinAtarEnv.discarded_rows)
            continue
        a = game_action(i, action, action_set, last_action, key, counter, limit, always)
        new_bullet = _resolve_action(i, a, pos, shot_timer)
        _advance_bullets(i, f_bullets, e_bullets, new_bullet)
        over = _cannon_hit(i, e_bullets, aliens, pos[i])
        if alien_move_timer[i] == 0:
            over |= _march_aliens(i, aliens, alien_dir, alien_move_timer, alien_count,
                                  move_interval, pos[i])
        terminated[i] = over
        if alien_shot_timer[i] == 0:
            alien_shot_timer[i] = ENEMY_SHOT_INTERVAL
            _aliens_shoot(i, aliens, e_bullets, pos[i])
        killed = _shoot_aliens(i, aliens, f_bullets)
        reward[i] = killed
        alien_count[i] -= killed
        _count_down_timers(i, shot_timer, alien_move_timer, alien_shot_timer)
        if alien_count[i] == 0:
            _send_new_wave(i, ramping, aliens, alien_count, move_interval, ramp_index)


# The helpers below read and write their arrays unconditionally (a store of a selected
# value rather than a store under an ``if``): numba then prunes the reference counting of
# the arrays an inlined helper is given, which would otherwise cost more than the rules.

@njit(inline="always")
def _resolve_action(i, a, pos, shot_timer):  # pragma: no cover (compiled)
    """``resolve_action``: ``f`` with the cannon cooled down fires (the cool-down
    restarts), ``l``/``r`` move the cannon within the board. Returns the new bullet as a
    bottom-row mask (0 if none)."""
    timer = shot_timer[i]
    firing = a == FIRE and timer == 0
    shot_timer[i] = SHOT_COOL_DOWN if firing else timer
    p = pos[i]
    pos[i] = min(max(p + _CANNON_DX[a], 0), _LAST)
    return (1 << p) if firing else 0


@njit(inline="always")
def _advance_bullets(i, f, e, new_bullet):  # pragma: no cover (compiled)
    """``advance_bullets``: the cannon's bullets rise a row (the new one into row 8, row
    9 cleared), the aliens' fall a row (row 0 cleared)."""
    for y in range(_LAST - 1):
        f[i, y] = f[i, y + 1]
    f[i, _LAST - 1] = new_bullet  # row 9 held only new bullets, as in the numpy kernel
    f[i, _LAST] = 0
    for y in range(_LAST, 0, -1):
        e[i, y] = e[i, y - 1]
    e[i, 0] = 0


@njit(inline="always")
def _cannon_hit(i, e, block, p):  # pragma: no cover (compiled)
    """``cannon_hit``: an alien bullet or an alien in the cannon's cell."""
    return ((e[i, _BOTTOM] >> p) | (block[i, _BOTTOM] >> p)) & 1 != 0


@njit(inline="always")
def _march_aliens(i, block, alien_dir, alien_move_timer, alien_count, move_interval,
                  p):  # pragma: no cover (compiled)
    """``march_aliens`` for an env whose move timer ran out: the timer restarts; a block
    at the side it marches to turns and steps down (``np.roll``: the bottom row comes
    round to the top, ending the episode if it held aliens), else it shifts a column.
    Returns whether the episode ends (also when an alien lands on the cannon in column
    ``p``)."""
    alien_move_timer[i] = min(alien_count[i], move_interval[i])
    columns = 0
    for y in range(GRID):
        columns |= block[i, y]
    d = alien_dir[i]
    left = d < 0
    turn = (columns & (_LEFT_EDGE if left else _RIGHT_EDGE)) != 0
    alien_dir[i] = -d if turn else d
    bottom = block[i, _LAST]
    above = bottom  # np.roll: the row that comes round to the top
    for y in range(GRID):
        row = block[i, y]
        block[i, y] = above if turn else (row >> 1 if left else (row << 1) & _FULL_ROW)
        above = row
    landed = (block[i, _BOTTOM] >> p) & 1 != 0
    return (turn and bottom != 0) or landed


@njit(inline="always")
def _aliens_shoot(i, block, e, p):  # pragma: no cover (compiled)
    """``aliens_shoot`` for an env whose shot timer ran out: the lowest alien of the
    occupied column nearest the cannon in column ``p`` (the left one of two equally
    near; column 0 if none, as the numpy kernel's ``argmin``) drops a bullet in its cell
    (row 9 if the column is empty, as its ``argmax``)."""
    columns = 0
    for y in range(GRID):
        columns |= block[i, y]
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
        lowest = y if (block[i, y] >> column) & 1 else lowest
    e[i, lowest] |= 1 << column


@njit(inline="always")
def _shoot_aliens(i, block, f):  # pragma: no cover (compiled)
    """``shoot_aliens``: a cannon bullet in an alien's cell removes both. Returns the
    aliens killed."""
    killed = 0
    for y in range(GRID):
        hit = block[i, y] & f[i, y]
        block[i, y] ^= hit
        f[i, y] ^= hit
        killed += POPCOUNT[hit]
    return killed


@njit(inline="always")
def _count_down_timers(i, shot_timer, alien_move_timer,
                       alien_shot_timer):  # pragma: no cover (compiled)
    """``count_down_timers``: the cool-down down to 0, the alien timers down by one."""
    timer = shot_timer[i]
    shot_timer[i] = timer - (timer > 0)
    alien_move_timer[i] -= 1
    alien_shot_timer[i] -= 1


@njit(inline="always")
def _send_new_wave(i, ramping, block, alien_count, move_interval,
                   ramp_index):  # pragma: no cover (compiled)
    """``send_new_wave`` for a cleared board: a new wave in rows 0-3, marching one step
    faster with ramping (down to an interval of 6)."""
    interval = move_interval[i]
    faster = ramping and interval > FASTEST_MOVE_INTERVAL
    move_interval[i] = interval - faster
    ramp_index[i] += faster
    for y in range(_WAVE_HEIGHT):
        block[i, y] = _WAVE_ROW
    alien_count[i] = WAVE_SIZE


@jit
def _reset(rows, pos, alien_dir, move_interval, alien_move_timer, alien_shot_timer,
           shot_timer, ramp_index, alien_count, aliens, f_bullets,
           e_bullets):  # pragma: no cover (compiled)
    for i in rows:
        pos[i] = CANNON_START
        for y in range(GRID):
            aliens[i, y] = _WAVE_ROW if y < _WAVE_HEIGHT else _NONE16
            f_bullets[i, y] = 0
            e_bullets[i, y] = 0
        alien_dir[i] = -1
        move_interval[i] = ENEMY_MOVE_INTERVAL
        alien_move_timer[i] = ENEMY_MOVE_INTERVAL
        alien_shot_timer[i] = ENEMY_SHOT_INTERVAL
        ramp_index[i] = 0
        alien_count[i] = WAVE_SIZE
        shot_timer[i] = 0


@jit
def _observe(pos, alien_dir, aliens, f_bullets, e_bullets, words,
             cells):  # pragma: no cover (compiled)
    for i in range(len(pos)):
        heading = _RIGHT_CODE if alien_dir[i] > 0 else 0
        for y in range(GRID):
            # the board row's image from the aliens' table: every cell of the row written
            code = aliens[i, y] | heading
            start = (i * GRID + y) * _ROW_WORDS
            for k in range(_ROW_WORDS):
                words[start + k] = _ALIEN_ROW_WORDS[code, k]
            f, e = f_bullets[i, y], e_bullets[i, y]
            if f | e:  # bullets are few: most rows have none
                for x in range(GRID):
                    cells[cell(i, y, x, _F_BULLET, _CHANNELS)] = (f >> x) & 1
                    cells[cell(i, y, x, _E_BULLET, _CHANNELS)] = (e >> x) & 1
        cells[cell(i, _BOTTOM, pos[i], _CANNON, _CHANNELS)] = True
