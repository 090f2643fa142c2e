"""BatchSeaquest: MinAtar's Seaquest (``minatar/environments/seaquest.py``, MinAtar 1.0.15),
batched."""

from __future__ import annotations

from typing import Any

import numpy as np

from batchenv.core import BASE_FIELDS
from batchenv.entities import Grid, first_free
from batchenv.envs.minatar._base import (
    FIRE,
    GRID,
    STICKY_FIELDS,
    MinAtarEnv,
    rand_below,
    randint,
)
from batchenv.envs.minatar._rows import BIT as _BIT  # row masks: bit x is column x
from batchenv.envs.minatar._rows import set_bits
from batchenv.random import BatchRandom
from batchenv.state import State

__all__ = ["BatchSeaquest", "ENEMY_SLOTS"]

# Constants of minatar/environments/seaquest.py
MAX_OXYGEN = 200  # max_oxygen
INIT_SPAWN_SPEED = 20  # init_spawn_speed: steps between enemy spawns, at first
DIVER_SPAWN_SPEED = 30  # diver_spawn_speed: steps between diver spawns (not ramped)
INIT_MOVE_INTERVAL = 5  # init_move_interval: an enemy's steps between moves, at first
SHOT_COOL_DOWN = 5  # shot_cool_down
ENEMY_SHOT_INTERVAL = 10  # enemy_shot_interval: a sub's steps between shots
DIVER_MOVE_INTERVAL = 5  # diver_move_interval
MAX_DIVERS = 6  # divers the submarine carries (``diver_count < 6``)
SUB_START_X, SUB_START_Y = 5, 0
SPAWN_ROWS = (1, 9)  # randint(low=1, high=9): enemies and divers swim in rows 1-8
DEEPEST = 8  # the submarine's lowest row (``min(8, sub_y + 1)``)
FASTEST_SPAWN, FASTEST_MOVE = 1, 2  # the ramp stops at spawn speed 1 and move interval 2

#: Enemy slots per env. Enemies spawn at most once per step and live at most 29 steps at
#: the fastest move interval (2: ten moves, one every 3 steps); an enemy spawned at a
#: slower interval takes the new one at its next move. So at most 30 are alive at once
#: (29 and the one spawning); 32 leaves room. The friendly bullets and the divers need two
#: slots each: the submarine fires at most every 5 steps and a bullet leaves the board
#: within 10; a diver spawns every 30 steps and leaves within 60.
ENEMY_SLOTS = 32
_ROW_BITS = np.uint16((1 << GRID) - 1)
# The submarine's moves by MinAtar action (n, l, u, r, d, f); _FACING: -1 keeps its heading
_DX = np.array([0, -1, 0, 1, 0, 0], dtype=np.int8)
_DY = np.array([0, 0, -1, 0, 1, 0], dtype=np.int8)
_FACING = np.array([-1, 0, -1, 1, -1, -1], dtype=np.int8)
_STEP = np.array([-1, 1], dtype=np.int8)  # a column step by "moving right" (False, True)
#: Row 9's gauges: the oxygen bar (cells 0 .. level-1) and the diver bar (cells 9-c .. 8)
_OXYGEN_BAR = np.arange(GRID)[None, :] < np.arange(GRID + 1)[:, None]  # (11, 10)
_DIVER_BAR = ((np.arange(GRID)[None, :] >= GRID - 1 - np.arange(MAX_DIVERS + 1)[:, None])
              & (np.arange(GRID)[None, :] < GRID - 1))  # (7, 10)
#: Bullet-capture order keys: a sub's key is above every fish's (see capture_bullets)
_SUB_KEY = np.int64(1) << np.int64(32)
_ZERO, _NINE, _EIGHT = (np.array(v, dtype=np.int8) for v in (0, GRID - 1, DEEPEST))

_BASE_NAMES = {name for name, _ in BASE_FIELDS}  # the base class's columns (rng, counters)

# channels (MinAtar's order)
SUB_FRONT, SUB_BACK, FRIENDLY_BULLET, TRAIL, ENEMY_BULLET, ENEMY_FISH, ENEMY_SUB, \
    OXYGEN_GAUGE, DIVER_GAUGE, DIVER = range(10)
_CHANNELS = 10
#: The trail (the cell behind an enemy or diver, channel 3) from the flat index of its
#: cell's channel 0: one column right of a left-mover, one column left of a right-mover
_TRAIL_LEFT_MOVER = _CHANNELS + TRAIL
_TRAIL_RIGHT_MOVER_SHIFT = -2 * _CHANNELS


class BatchSeaquest(MinAtarEnv):
    """## Description

    MinAtar's Seaquest for thousands of games at once, step for step the rules of
    ``minatar/environments/seaquest.py`` (MinAtar 1.0.15; Young & Tian, 2019). The player
    steers a two-cell submarine (its front shows its heading) and shoots sideways at enemy
    fish and submarines that cross the board in rows 1-8; enemy submarines shoot back.
    Divers cross the board too; the submarine picks them up by touching them (at most 6).
    Oxygen runs out under water: surfacing (row 0) refills it but costs a diver, and with
    6 divers on board pays a bonus for the oxygen left. Every surfacing speeds the game up
    (difficulty ramping): enemies spawn one step sooner (from every 20 steps down to every
    step) and, every second surfacing, move one step sooner (from every 6 steps to every
    3). Tested step by step against the ``minatar`` package
    (``tests/test_minatar_seaquest.py``).

    Each step applies, in MinAtar's order:
    :func:`~batchenv.envs.minatar._base.sticky_actions`, :func:`spawn_enemies`,
    :func:`spawn_divers`, :func:`resolve_action`, :func:`move_friendly_bullets`,
    :func:`move_divers`, :func:`move_enemies` with :func:`capture_bullets` and
    :func:`enemy_subs_fire`, :func:`move_enemy_bullets`, :func:`count_down_timers`,
    :func:`breathe`.

    **State.** MinAtar keeps Python lists of entities; here each kind is a fixed set of
    slots per env with an alive mask. Enemies (fish and subs in one set of
    :data:`ENEMY_SLOTS` slots, ``en_sub`` telling them apart) carry a spawn stamp, so that
    the order of MinAtar's lists (spawn order) decides who is hit first. Friendly bullets
    and divers have two slots kept in list order (slot 0 the older). The enemies' bullets
    only move and hit the player, so two bullets in one cell moving the same way are one:
    they are two 10 x 10 boards of row masks, one per direction.

    ## Action Space

    ``Discrete(6)``: MinAtar's ``n, l, u, r, d, f``. ``f`` fires (when the gun has cooled
    down, 5 steps after the last shot) and does not move. MinAtar's minimal action set is
    all six actions, so ``-v1`` is ``-v0``.

    ## Observation Space

    ``Box(0, 1, (10, 10, 10), bool)``, MinAtar's channels in its order: 0 ``sub_front``,
    1 ``sub_back``, 2 ``friendly_bullet``, 3 ``trail`` (the cell behind each enemy and
    diver, showing its direction), 4 ``enemy_bullet``, 5 ``enemy_fish``, 6 ``enemy_sub``,
    7 ``oxygen_guage`` (row 9: one cell per 20 units of oxygen), 8 ``diver_guage`` (row 9:
    one cell per diver on board, from column 8 leftwards), 9 ``diver``.

    ## Rewards

    +1 for each enemy shot; surfacing with 6 divers pays ``oxygen * 10 // 200`` (0-10).

    ## Starting State

    The submarine at the surface (row 0) in column 5 facing left, full oxygen (200), no
    divers, no enemies; the first enemy spawns after 20 steps, the first diver after 30.

    ## Episode End

    Terminated when an enemy or an enemy bullet reaches the submarine's cell, when the
    oxygen has run out, or when the submarine surfaces with no diver on board. No time
    limit by default (MinAtar has none); ``max_episode_steps=`` adds one.

    ## Arguments

    ``BatchSeaquest(num_envs, *, difficulty_ramping=True, sticky_action_prob=0.1,
    minimal_action_set=False, render_scale=8, **BatchEnv options)``. With
    ``difficulty_ramping=False`` the spawn and move speeds never change.
    ``render_mode``: ``"rgb_array"`` (MinAtar's cubehelix palette) or ``"ansi"``.

    ## Random Words

    Each step draws 6 words per env, used or not; resets draw none. The mapping for
    ``tests/minatar_parity.py`` (MinAtar's calls in the order it makes them):
    ``Environment.act``'s ``rand()`` (sticky action) is word 0; ``_spawn_enemy``'s two
    ``rand()`` (direction ``< 1/2``, is a sub ``< 1/3``) are words 1 and 2 and its
    ``randint(1, 9)`` (row) word 3; ``_spawn_diver``'s ``rand()`` (direction) is word 4
    and its ``randint(1, 9)`` (row) word 5.

    ## Quirks of the reference, reproduced

    * Surfacing with 6 divers sets the count to 0 and then takes the usual diver, leaving
      -1: the diver gauge shows nothing, and the submarine may surface again without
      ending the episode, each time ramping the difficulty and lowering the count further
      (divers picked up later count up from there).
    * An enemy sub that is shot as it moves, or that leaves the board, still fires if its
      shot timer is due in that step (MinAtar's loop goes on with the removed sub); a
      bullet fired off the board leaves it at once. Enemy bullets start in the sub's own
      cell (``sub[0] if sub[2] else sub[0]``).
    * A new enemy is not spawned (the spawn is lost, the timer restarts) when an enemy in
      its row heads the other way; divers do not block spawns.
    * Hits are tested as MinAtar's loops go: a friendly bullet moves and hits the first
      fish in its cell, else the first sub (oldest first; the newer bullet moves first);
      an enemy hits a bullet only when it moves into the bullet's cell (subs, newest
      first, before fish, newest first; the older bullet first). A bullet and an enemy
      that swap cells in one step pass through each other.
    * The oxygen test comes before the oxygen is used: the episode ends on the step after
      the oxygen reaches 0.
    * ``last_action`` (sticky actions) carries over from one episode to the next, as in
      MinAtar's ``Environment``; ``reset(seed=...)`` clears it.

    ## Version History

    * v0 / v1: as MinAtar 1.0.15's ``MinAtar/Seaquest-v0`` / ``-v1``.
    """

    game = "seaquest"
    channels = ("sub_front", "sub_back", "friendly_bullet", "trail", "enemy_bullet",
                "enemy_fish", "enemy_sub", "oxygen_guage", "diver_guage", "diver")
    minimal_actions = (0, 1, 2, 3, 4, 5)
    step_words = 6
    reset_words = 0
    ansi_chars = "Ss-.*FE=+d"
    state_dtype = np.dtype([
        ("sub_x", np.int8),  # the submarine's front cell: column 0-9
        ("sub_y", np.int8),  # row 0 (surface) to 8
        ("sub_right", np.bool_),  # sub_or: facing right (its back is on the left)
        ("shot_timer", np.int8),  # the gun's cool-down
        ("surface", np.bool_),  # at the surface since the last surfacing (no new one)
        ("e_spawn_speed", np.int8),  # steps between enemy spawns: 20, one less per ramp
        ("e_spawn_timer", np.int8),  # steps to the next enemy spawn
        ("d_spawn_timer", np.int8),  # steps to the next diver spawn
        ("move_speed", np.int8),  # an enemy's move timer restarts at this: 5 down to 2
        ("ramp_index", np.int8),  # surfacings that ramped the difficulty
        ("oxygen", np.int16),  # 200 at the surface, one less per step under water
        ("diver_count", np.int32),  # divers on board; below 0 after a full surfacing
        ("spawn_count", np.int32),  # enemies spawned this episode: the next stamp
        ("en_slots", np.int8),  # enemy slots used this episode (one past the highest)
        # friendly bullets (f_bullets): slot 0 the older
        ("fb_x", np.int8, (2,)),
        ("fb_y", np.int8, (2,)),
        ("fb_right", np.bool_, (2,)),
        ("fb_alive", np.bool_, (2,)),
        # enemies (e_fish and e_subs): x, y, heading, move and shot timers, kind, stamp
        ("en_x", np.int8, (ENEMY_SLOTS,)),
        ("en_y", np.int8, (ENEMY_SLOTS,)),
        ("en_right", np.bool_, (ENEMY_SLOTS,)),
        ("en_timer", np.int8, (ENEMY_SLOTS,)),
        ("en_shot", np.int8, (ENEMY_SLOTS,)),  # subs only
        ("en_sub", np.bool_, (ENEMY_SLOTS,)),
        ("en_alive", np.bool_, (ENEMY_SLOTS,)),
        ("en_stamp", np.int32, (ENEMY_SLOTS,)),  # spawn order: the lists' order
        # divers: slot 0 the older
        ("dv_x", np.int8, (2,)),
        ("dv_y", np.int8, (2,)),
        ("dv_right", np.bool_, (2,)),
        ("dv_timer", np.int8, (2,)),
        ("dv_alive", np.bool_, (2,)),
        # enemy bullets (e_bullets) as row masks (bit x of row y), by heading
        ("eb_left", np.uint16, (GRID,)),
        ("eb_right", np.uint16, (GRID,)),
        *STICKY_FIELDS,
    ])

    def __init__(self, num_envs: int | None = None, **kwargs: Any) -> None:
        super().__init__(num_envs, **kwargs)

    def reset_envs(self, s: State, rng: BatchRandom) -> None:
        start_games(s, slice(None))

    def reset_rows(self, s: State, rows: np.ndarray, rng: BatchRandom) -> None:
        start_games(s, rows)  # in place: no copy of the rows out and back

    def step_envs(self, s: State, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        words = self.step_draws(s, rng)
        a = self.game_actions(s, action, words[0])
        reward = self.reward_buffer
        terminated = self.terminated_buffer
        reward.fill(0.0)
        terminated.fill(False)
        spawn_enemies(s, words[1], words[2], words[3])
        spawn_divers(s, words[4], words[5])
        resolve_action(s, a)
        en = Enemies(s)
        move_friendly_bullets(s, en, reward)
        move_divers(s)
        enemy_alive, moved = move_enemies(s, en, terminated)
        capture_bullets(s, en, moved, reward)
        enemy_subs_fire(s, en, enemy_alive)
        move_enemy_bullets(s, terminated)
        count_down_timers(s)
        breathe(s, reward, terminated, self.difficulty_ramping)
        return reward, terminated

    def observe(self, s: State, out: np.ndarray) -> None:
        n = len(s)
        out.fill(False)
        bottom = out[:, GRID - 1]
        level = np.maximum(s.oxygen, 0, dtype=np.intp)
        level *= 10
        level //= MAX_OXYGEN
        bottom[:, :, OXYGEN_GAUGE] = _OXYGEN_BAR.take(level, axis=0)
        divers = np.clip(s.diver_count, 0, MAX_DIVERS).astype(np.intp)
        bottom[:, :, DIVER_GAUGE] = _DIVER_BAR.take(divers, axis=0)
        grid = self.grid(n)
        en = Enemies(s)
        back = s.sub_x - _STEP[s.sub_right.view(np.int8)]
        cells = [grid.cells(s.sub_y, s.sub_x, SUB_FRONT), grid.cells(s.sub_y, back, SUB_BACK),
                 grid.cells(s.fb_y, s.fb_x, FRIENDLY_BULLET)[s.fb_alive],
                 enemy_bullet_cells(s, grid)]
        for x, y, right, alive, body in ((en.x, en.y, en.right, en.alive, ENEMY_FISH + en.sub),
                                         (s.dv_x, s.dv_y, s.dv_right, s.dv_alive, DIVER)):
            cell = grid.cells(y, x, 0)
            cells.append((cell + body)[alive])
            behind_on_board = np.where(right, x > 0, x < GRID - 1)
            trail = cell + _TRAIL_LEFT_MOVER
            trail += right * _TRAIL_RIGHT_MOVER_SHIFT
            cells.append(trail[alive & behind_on_board])
        out.reshape(-1)[np.concatenate(cells)] = True


def enemy_bullet_cells(s: State, grid: Grid) -> np.ndarray:
    """Flat observation indices of the enemy bullets (few: painted cell by cell)."""
    env, row, column = set_bits(s.eb_left | s.eb_right)
    return (grid.row_base[env] + row * grid.y_stride + column * grid.x_stride
            + ENEMY_BULLET)


#: reset(): each field's start value (the fields not listed start at 0)
_START = {"sub_x": SUB_START_X, "sub_y": SUB_START_Y, "surface": True,
          "e_spawn_speed": INIT_SPAWN_SPEED, "e_spawn_timer": INIT_SPAWN_SPEED,
          "d_spawn_timer": DIVER_SPAWN_SPEED, "move_speed": INIT_MOVE_INTERVAL,
          "oxygen": MAX_OXYGEN}


def start_games(s: State, rows: np.ndarray | slice) -> None:
    """MinAtar's ``reset()`` at ``rows``: the submarine at the surface in column 5 facing
    left, full oxygen, no divers, nothing on the board, the first spawns 20 and 30 steps
    away, the slowest speeds. (``last_action`` is not the game's: left alone.)"""
    for name, field in s:
        if name in _START:
            field[rows] = _START[name]
        elif name != "last_action" and name not in _BASE_NAMES:
            field[rows] = 0


class Enemies:
    """The enemy slots in use: views of the enemy fields up to the last slot used this
    episode in any env (slots beyond are dead everywhere, so the rules may skip them;
    enemies fill the first free slot, so few slots are in use unless the game is crowded)."""

    __slots__ = ("x", "y", "right", "timer", "shot", "sub", "alive", "stamp")

    def __init__(self, s: State) -> None:
        width = int(s.en_slots.max()) if len(s) else 0
        for name in self.__slots__:
            setattr(self, name, getattr(s, "en_" + name)[:, :width])


def spawn_enemies(s: State, side_word: np.ndarray, kind_word: np.ndarray,
                  row_word: np.ndarray) -> None:
    """Envs whose spawn timer ran out restart it and spawn an enemy: from the left edge
    heading right (``rand() < 1/2``) or the right edge heading left, a sub (``rand() <
    1/3``) or a fish, in row ``randint(1, 9)``; not spawned if an enemy in that row heads
    the other way. It moves at the current move interval; a sub first shoots after 10
    steps."""
    idx = (s.e_spawn_timer == 0).nonzero()[0]
    if not len(idx):
        return
    s.e_spawn_timer[idx] = s.e_spawn_speed[idx]
    right = rand_below(side_word[idx], 1 / 2)
    sub = rand_below(kind_word[idx], 1 / 3)
    row = randint(row_word[idx], *SPAWN_ROWS).astype(np.int8)
    alive = s.en_alive[idx]
    blocked = (alive & (s.en_y[idx] == row[:, None])
               & (s.en_right[idx] != right[:, None])).any(axis=1)
    if blocked.any():
        keep = ~blocked
        idx, right, sub, row, alive = idx[keep], right[keep], sub[keep], row[keep], alive[keep]
        if not len(idx):
            return
    slot, has_free = first_free(alive)
    if not has_free.all():
        raise RuntimeError(f"BatchSeaquest: more than {ENEMY_SLOTS} enemies in envs "
                           f"{idx[~has_free].tolist()} (ENEMY_SLOTS is too small)")
    s.en_x[idx, slot] = np.where(right, 0, GRID - 1)
    s.en_y[idx, slot] = row
    s.en_right[idx, slot] = right
    s.en_timer[idx, slot] = s.move_speed[idx]
    s.en_shot[idx, slot] = ENEMY_SHOT_INTERVAL
    s.en_sub[idx, slot] = sub
    s.en_stamp[idx, slot] = s.spawn_count[idx]
    s.en_alive[idx, slot] = True
    s.spawn_count[idx] += 1
    np.maximum(s.en_slots[idx], slot + 1, out=slot, casting="unsafe")
    s.en_slots[idx] = slot


def spawn_divers(s: State, side_word: np.ndarray, row_word: np.ndarray) -> None:
    """Every 30 steps a diver spawns: from the left edge heading right (``rand() <
    1/2``) or the right edge heading left, in row ``randint(1, 9)``. It becomes the newer
    diver (slot 1); the diver already there, if any, becomes the older (slot 0)."""
    idx = (s.d_spawn_timer == 0).nonzero()[0]
    if not len(idx):
        return
    s.d_spawn_timer[idx] = DIVER_SPAWN_SPEED
    right = rand_below(side_word[idx], 1 / 2)
    row = randint(row_word[idx], *SPAWN_ROWS)
    _push(s, idx, ("dv_x", "dv_y", "dv_right", "dv_timer", "dv_alive"),
          (np.where(right, 0, GRID - 1), row, right, DIVER_MOVE_INTERVAL, True))


def _push(s: State, idx: np.ndarray, names: tuple[str, ...], values: tuple) -> None:
    """Append an entity to a two-slot list kept in order (slot 0 older): slot 1's entity,
    if alive, moves to slot 0 (at most one is alive when a new one comes), the new one
    takes slot 1. The last name is the alive mask."""
    older = getattr(s, names[-1])[idx, 1]
    for name, value in zip(names, values):
        field = getattr(s, name)
        field[idx, 0] = np.where(older, field[idx, 1], field[idx, 0])
        field[idx, 1] = value


def resolve_action(s: State, a: np.ndarray) -> None:
    """``f`` with the gun cooled down fires a bullet from the submarine's cell, heading
    its way (the newer bullet, slot 1); ``l``/``r`` move a column and turn that way,
    ``u``/``d`` a row (rows 0-8)."""
    firing = (a == FIRE) & (s.shot_timer == 0)
    idx = firing.nonzero()[0]
    if len(idx):
        s.shot_timer[idx] = SHOT_COOL_DOWN
        _push(s, idx, ("fb_x", "fb_y", "fb_right", "fb_alive"),
              (s.sub_x[idx], s.sub_y[idx], s.sub_right[idx], True))
    s.sub_x += _DX[a]
    np.clip(s.sub_x, _ZERO, _NINE, out=s.sub_x)
    s.sub_y += _DY[a]
    np.clip(s.sub_y, _ZERO, _EIGHT, out=s.sub_y)
    facing = _FACING[a]
    np.copyto(s.sub_right, facing == 1, where=facing >= 0)


def move_friendly_bullets(s: State, en: Enemies, reward: np.ndarray) -> None:
    """Each friendly bullet, the newer first, moves a column; off the board it is gone,
    else it destroys the first fish in its cell (the oldest), else the first sub, and
    disappears (+1)."""
    for slot in (1, 0):
        alive = s.fb_alive[:, slot]
        x = s.fb_x[:, slot]
        x += alive * _STEP[s.fb_right[:, slot].view(np.int8)]
        alive &= (x >= 0) & (x < GRID)
        if not alive.any():
            continue
        idx = alive.nonzero()[0]
        here = (en.alive[idx] & (en.x[idx] == x[idx, None])
                & (en.y[idx] == s.fb_y[idx, slot, None]))
        if not here.any():
            continue
        key = np.where(here, en.stamp[idx] + en.sub[idx] * _SUB_KEY, np.iinfo(np.int64).max)
        victim = key.argmin(axis=1)
        hit = here[np.arange(len(idx)), victim]
        rows = idx[hit]
        en.alive[rows, victim[hit]] = False
        alive[rows] = False
        reward[rows] += 1.0


def move_divers(s: State) -> None:
    """Each diver, the newer first: in the submarine's cell with room on board (fewer
    than 6 divers) it is picked up; else when its move timer runs out it moves a column
    (leaving the board, or being picked up if it lands on the submarine with room), and
    its timer restarts at 5; else its timer counts down."""
    for slot in (1, 0):
        alive = s.dv_alive[:, slot]
        x = s.dv_x[:, slot]
        y = s.dv_y[:, slot]
        room = s.diver_count < MAX_DIVERS
        on_sub = (y == s.sub_y) & room
        picked = alive & on_sub & (x == s.sub_x)
        swimming = alive & ~picked
        timer = s.dv_timer[:, slot]
        moving = swimming & (timer == 0)
        timer -= swimming
        timer[moving] = DIVER_MOVE_INTERVAL
        x += moving * _STEP[s.dv_right[:, slot].view(np.int8)]
        gone = moving & ((x < 0) | (x >= GRID))
        picked |= moving & ~gone & on_sub & (x == s.sub_x)
        alive &= ~(picked | gone)
        s.diver_count += picked


def move_enemies(s: State, en: Enemies, terminated: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Each enemy in the submarine's cell ends the episode; an enemy whose move timer ran
    out moves a column (its timer restarts at the move interval; off the board it is
    gone, onto the submarine it ends the episode), else its timer counts down. Returns
    the enemies alive before the move (subs among them may fire) and those that moved
    within the board, not onto the submarine (they may run into a bullet)."""
    alive = en.alive.copy()
    x = en.x
    on_row = alive & (en.y == s.sub_y[:, None])
    terminated |= (on_row & (x == s.sub_x[:, None])).any(axis=1)
    timer = en.timer
    moving = alive & (timer == 0)
    timer -= alive
    np.copyto(timer, s.move_speed[:, None], where=moving)
    x += moving * _STEP[en.right.view(np.int8)]
    inside = (x >= 0) & (x < GRID)
    en.alive &= inside | ~moving
    landed = moving & inside & on_row & (x == s.sub_x[:, None])
    terminated |= landed.any(axis=1)
    return alive, moving & inside & ~landed


def capture_bullets(s: State, en: Enemies, moved: np.ndarray, reward: np.ndarray
                    ) -> None:
    """An enemy that moved into a friendly bullet's cell destroys it and is destroyed
    (+1). MinAtar goes through the subs (newest first), then the fish (newest first), each
    taking the first (older) bullet in its cell: so the older bullet goes to the first
    enemy in that order in its cell, the newer one to the first other enemy in its."""
    for slot in (0, 1):
        bullet = s.fb_alive[:, slot]
        if not bullet.any():
            continue
        idx = bullet.nonzero()[0]
        here = (moved[idx] & en.alive[idx] & (en.x[idx] == s.fb_x[idx, slot, None])
                & (en.y[idx] == s.fb_y[idx, slot, None]))
        if not here.any():
            continue
        key = np.where(here, en.stamp[idx] + en.sub[idx] * _SUB_KEY, -1)
        taker = key.argmax(axis=1)
        hit = here[np.arange(len(idx)), taker]
        rows = idx[hit]
        en.alive[rows, taker[hit]] = False
        bullet[rows] = False
        reward[rows] += 1.0


def enemy_subs_fire(s: State, en: Enemies, alive: np.ndarray) -> None:
    """Each sub alive before the move (even one shot or gone since) whose shot timer ran
    out fires a bullet from its cell, heading its way, and its timer restarts at 10; else
    its timer counts down."""
    subs = alive & en.sub
    shot = en.shot
    firing = subs & (shot == 0)
    shot -= subs
    if not firing.any():
        return
    shot[firing] = ENEMY_SHOT_INTERVAL
    rows, slots = firing.nonzero()
    x = en.x[rows, slots]
    inside = (x >= 0) & (x < GRID)  # a bullet fired off the board leaves it at once
    rows, slots, x = rows[inside], slots[inside], x[inside]
    cell = rows * GRID + en.y[rows, slots]
    right = en.right[rows, slots]
    np.bitwise_or.at(s.eb_right.reshape(-1), cell[right], _BIT[x[right]])
    np.bitwise_or.at(s.eb_left.reshape(-1), cell[~right], _BIT[x[~right]])


def move_enemy_bullets(s: State, terminated: np.ndarray) -> None:
    """Enemy bullets move a column their way, leaving the board at its sides; one in the
    submarine's cell before or after the move ends the episode."""
    rows = np.arange(len(s))
    y = s.sub_y
    me = _BIT[s.sub_x]
    left = s.eb_left
    right = s.eb_right
    before = (left[rows, y] | right[rows, y]) & me
    left >>= 1
    right <<= 1
    right &= _ROW_BITS
    after = (left[rows, y] | right[rows, y]) & me
    terminated |= (before | after) != 0


def count_down_timers(s: State) -> None:
    """The spawn timers and the gun's cool-down count down to 0."""
    for timer in (s.e_spawn_timer, s.d_spawn_timer, s.shot_timer):
        timer -= timer > 0


def breathe(s: State, reward: np.ndarray, terminated: np.ndarray, ramping: bool) -> None:
    """No oxygen left ends the episode. Under water the submarine uses a unit of oxygen.
    Reaching the surface (the first step there) with no diver ends the episode; else it
    refills the oxygen, pays ``oxygen * 10 // 200`` if 6 divers were on board (and sets
    the count to 0), then takes a diver, and ramps the difficulty (enemies spawn a step
    sooner, and every second time also move a step sooner)."""
    terminated |= s.oxygen <= 0
    under = s.sub_y > 0
    s.oxygen -= under
    s.surface &= ~under
    arriving = ~under & ~s.surface
    if not arriving.any():
        return
    idx = arriving.nonzero()[0]
    count = s.diver_count[idx]
    empty = count == 0
    terminated[idx[empty]] = True
    idx, count = idx[~empty], count[~empty]
    if not len(idx):
        return
    s.surface[idx] = True
    full = count == MAX_DIVERS
    reward[idx[full]] += s.oxygen[idx[full]] * 10 // MAX_OXYGEN
    s.oxygen[idx] = MAX_OXYGEN
    s.diver_count[idx] = np.where(full, 0, count) - 1
    if not ramping:
        return
    move, spawn = s.move_speed[idx], s.e_spawn_speed[idx]
    ramp = (spawn > FASTEST_SPAWN) | (move > FASTEST_MOVE)
    idx, move, spawn = idx[ramp], move[ramp], spawn[ramp]
    s.move_speed[idx] = move - ((move > FASTEST_MOVE) & (s.ramp_index[idx] % 2 == 1))
    s.e_spawn_speed[idx] = spawn - (spawn > FASTEST_SPAWN)
    s.ramp_index[idx] += 1
