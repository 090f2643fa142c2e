"""BatchSeaquest: MinAtar's Seaquest (``minatar/environments/seaquest.py``, MinAtar 1.0.15),
batched."""

from __future__ import annotations

from typing import Any

import numpy as np

from batchenv import perenv
from batchenv.entities import Grid, slot_columns, slot_names, slot_view
from batchenv.envs.minatar._base import (
    FIRE,
    GRID,
    MinAtarEnv,
    MinAtarState,
    clear_board,
    rand_below,
    randint,
    sticky_action_env,
)
from batchenv.envs.minatar._rows import BIT as _BIT  # row masks: bit x is column x
from batchenv.envs.minatar._rows import set_bits
from batchenv.random import BatchRandom
from batchenv.state import Field, State, fields_view

__all__ = ["BatchSeaquest", "SeaquestState", "ENEMY_SLOTS"]

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
# The submarine's moves by MinAtar action (n, l, u, r, d, f): (dx, dy); its new heading
# (0: keeps its heading)
_MOVE = np.array([[0, -1, 0, 1, 0, 0], [0, 0, -1, 0, 1, 0]], dtype=np.int8)
_TURN = np.array([0, -1, 0, 1, 0, 0], dtype=np.int8)
_LOWEST = np.array([[GRID - 1], [DEEPEST]], dtype=np.int8)  # the submarine's (x, y) bounds
_HEADING = np.array([-1, 1], dtype=np.int8)  # dx of a spawn heading right (False, True)
_EDGE = np.array([GRID - 1, 0], dtype=np.int8)  # its first column
#: An enemy bullet in the submarine's column x, or one column away and heading into it:
#: the masks of left-movers (x and x+1) and of right-movers (x and x-1) that hit it
_REACH = np.stack([(_BIT | (_BIT << 1)) & _ROW_BITS, _BIT | (_BIT >> 1)])  # (2, 10)
#: Row 9's gauges: the oxygen bar (cells 0 .. level-1) and the diver bar (cells 9-c .. 8)
_OXYGEN_BAR = np.arange(GRID)[None, :] < np.arange(GRID + 1)[:, None]  # (11, 10)
_DIVER_BAR = ((np.arange(GRID)[None, :] >= GRID - 1 - np.arange(MAX_DIVERS + 1)[:, None])
              & (np.arange(GRID)[None, :] < GRID - 1))  # (7, 10)
#: Bullet-capture order keys: a sub's key is above every fish's (see capture_bullets)
_SUB_KEY = np.int64(1) << np.int64(32)
_NO_KEY = np.iinfo(np.int64).max

# channels (MinAtar's order)
SUB_FRONT, SUB_BACK, FRIENDLY_BULLET, TRAIL, ENEMY_BULLET, ENEMY_FISH, ENEMY_SUB, \
    OXYGEN_GAUGE, DIVER_GAUGE, DIVER = range(10)
_CHANNELS = 10
#: A board row of an observation (10 cells x 10 channels) as one 100-byte item, so that a
#: row is copied whole (numpy copies a strided 2-D block element by element)
_ROW = np.dtype((np.void, GRID * _CHANNELS))
#: The bottom row (row 9) by gauge levels: oxygen level o (0-10) and divers c (0-6) are
#: entry o * 7 + c
_BOTTOM = np.zeros((GRID + 1, MAX_DIVERS + 1, GRID, _CHANNELS), dtype=bool)
_BOTTOM[..., OXYGEN_GAUGE] = _OXYGEN_BAR[:, None]
_BOTTOM[..., DIVER_GAUGE] = _DIVER_BAR[None]
_BOTTOM_ROWS = _BOTTOM.reshape(-1, GRID * _CHANNELS).view(_ROW).reshape(-1)


class SeaquestState(MinAtarState):
    """One game per row: the submarine, the timers and the speeds. The entity slots
    follow in ``BatchSeaquest.state_dtype`` as slot columns (:data:`ENTITY_COLUMNS`)."""

    sub_x: Field[np.int8]  # the submarine's front cell: column 0-9
    sub_y: Field[np.int8]  # row 0 (surface) to 8
    sub_dx: Field[np.int8]  # heading: -1 left (its back is on the right), +1 right
    shot_timer: Field[np.int8]  # the gun's cool-down
    e_spawn_timer: Field[np.int8]  # steps to the next enemy spawn
    d_spawn_timer: Field[np.int8]  # steps to the next diver spawn
    e_spawn_speed: Field[np.int8]  # steps between enemy spawns: 20, one less per ramp
    move_speed: Field[np.int8]  # an enemy's move timer restarts at this: 5 down to 2
    ramp_index: Field[np.int8]  # surfacings that ramped the difficulty
    en_slots: Field[np.int8]  # enemy slots used this episode (one past the highest;
    #                           the slots from here on are clear: all zero)
    surface: Field[np.bool_]  # at the surface since the last surfacing (no new one)
    oxygen: Field[np.int16]  # 200 at the surface, one less per step under water
    diver_count: Field[np.int32]  # divers on board; below 0 after a full surfacing
    spawn_count: Field[np.int32]  # enemies spawned this episode: the next stamp


_FB_FIELDS = ("fb_x", "fb_y", "fb_dx")  # friendly bullets (f_bullets), slot 0 the older
_DV_FIELDS = ("dv_x", "dv_y", "dv_dx", "dv_timer")  # divers, slot 0 the older
_EN_FIELDS = ("en_x", "en_y", "en_dx", "en_timer", "en_shot")  # e_fish and e_subs (shot:
#                                                                subs only)
#: The slot columns, after SeaquestState's fields; each group of one dtype is one block
ENTITY_COLUMNS = [
    *slot_columns([(name, np.int8) for name in _FB_FIELDS], 2),
    *slot_columns([(name, np.int8) for name in _DV_FIELDS], 2),
    *slot_columns([(name, np.int8) for name in _EN_FIELDS], ENEMY_SLOTS),
    *slot_columns([("fb_alive", np.bool_), ("dv_alive", np.bool_)], 2),
    *slot_columns([("en_sub", np.bool_), ("en_alive", np.bool_)], ENEMY_SLOTS),
    *slot_columns([("en_stamp", np.int32)], ENEMY_SLOTS),  # spawn order: the lists' order
    # enemy bullets (e_bullets) as row masks (bit x of row y), by heading
    *slot_columns([("eb_left", np.uint16), ("eb_right", np.uint16)], GRID),
]


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
    they are two 10 x 10 boards of row masks, one per direction. Headings are ``dx``
    (-1 left, +1 right; MinAtar's ``lr``/``sub_or`` is ``dx == 1``). The slots are stored
    slot-major (:func:`batchenv.entities.slot_columns`): slot ``j`` of ``en_x`` is the
    state column ``en_x_j``, row ``y`` of ``eb_left`` the column ``eb_left_y``.

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
    ``kernels="auto"`` (default): the per-env kernels compiled when numba is installed,
    else the numpy kernels; ``"numpy"``, ``"numba"`` or ``"python"`` (the per-env kernels
    as a Python loop) to choose, and ``num_threads=`` for the compiled loop (identical
    results: docs/minatar.md).

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
    state_type = SeaquestState
    state_dtype = np.dtype(SeaquestState.schema().descr + ENTITY_COLUMNS)
    #: The slot blocks the per-env kernels read as ``s.<name>`` (:meth:`state_views`)
    kernel_views = ("fb", "dv", "fb_alive", "dv_alive", "en", "en_sub", "en_alive",
                    "en_stamp", "eb_left", "eb_right")
    #: The slot columns, which the kernels read through the views only
    kernel_hidden_fields = tuple(name for name, _ in ENTITY_COLUMNS)

    @staticmethod
    def state_views(s: State) -> dict[str, np.ndarray]:
        """:data:`kernel_views`: the :class:`Slots` views of ``s``, slot-major: ``fb``
        ``(3, 2, n)`` (``_FB_FIELDS``), ``dv`` ``(4, 2, n)``, ``en`` ``(5, ENEMY_SLOTS,
        n)``, ``fb_alive``/``dv_alive`` ``(2, n)``, ``en_sub``/``en_alive``/``en_stamp``
        ``(ENEMY_SLOTS, n)``, ``eb_left``/``eb_right`` ``(10, n)``."""
        e = BatchSeaquest.slots(s)
        return {name: getattr(e, name) for name in BatchSeaquest.kernel_views}

    @staticmethod
    def slots(s: State) -> Slots:
        """The :class:`Slots` views of ``s``, made once per state object and kept on it (a
        copy or an unpickled state makes its own)."""
        views = s.__dict__.get("_seaquest_slots")
        if views is None:
            views = Slots(s)
            s._seaquest_slots = views
        return views

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        """As :meth:`BatchEnv.step`; a spawn that finds every enemy slot taken (beyond the
        bound of :data:`ENEMY_SLOTS`: only a set state gets there) is a RuntimeError naming
        the envs (the compiled per-env kernels raise it without them)."""
        try:
            return super().step(actions)
        except RuntimeError as error:
            if str(error) != _CROWDED:
                raise
            alive = self.slots(self.state).en_alive
            envs = alive.all(axis=0).nonzero()[0].tolist()
            raise RuntimeError(f"BatchSeaquest: more than {ENEMY_SLOTS} enemies in envs "
                               f"{envs} (ENEMY_SLOTS is too small)") from None

    def check_state(self, states: np.ndarray) -> dict[str, np.ndarray]:
        """``set_state``'s check of the slots' invariant: an env's enemy slots from
        ``en_slots`` on are clear (all zero), as a reset clears only those below."""
        used = states["en_slots"]
        beyond = np.arange(ENEMY_SLOTS)[:, None] >= used
        junk = np.zeros(len(states), dtype=bool)
        for name in (*_EN_FIELDS, "en_sub", "en_alive", "en_stamp"):
            slots = np.stack([states[column] for column in slot_names([name], ENEMY_SLOTS)])
            junk |= (beyond & (slots != 0)).any(axis=0)
        return {f"en_slots outside [0, {ENEMY_SLOTS}]": (used < 0) | (used > ENEMY_SLOTS),
                "an enemy slot from en_slots on is not clear (all zero)": junk}

    def reset_envs(self, s: SeaquestState, rng: BatchRandom) -> None:
        start_games(s, slice(None))

    def reset_rows(self, s: SeaquestState, rows: np.ndarray, rng: BatchRandom) -> None:
        start_games(s, rows)  # in place: no copy of the rows out and back

    def step_envs(self, s: SeaquestState, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        words = self.step_draws(s, rng)
        a = self.game_actions(s, action, words[0])
        reward = self.reward_buffer
        terminated = self.terminated_buffer
        reward.fill(0.0)
        terminated.fill(False)
        e = self.slots(s)
        spawn_enemies(s, e, words)
        spawn_divers(s, e, words)
        resolve_action(s, e, a)
        en = e.enemies(s)
        move_friendly_bullets(e, en, reward)
        move_divers(s, e)
        enemy_alive, moved = move_enemies(s, en, terminated)
        capture_bullets(e, en, moved, reward)
        enemy_subs_fire(e, en, enemy_alive)
        move_enemy_bullets(s, e, terminated)
        count_down_timers(s)
        breathe(s, reward, terminated, self.difficulty_ramping)
        return reward, terminated

    def observe(self, s: SeaquestState, out: np.ndarray) -> None:
        n = len(s)
        out.fill(False)  # (a memset: cheaper than leaving out row 9, which the gauges fill)
        level = np.maximum(s.oxygen, 0)
        level //= MAX_OXYGEN // GRID
        gauges = np.maximum(s.diver_count, 0)  # (at most 6)
        gauges += level * (MAX_DIVERS + 1)
        rows = out.reshape(n * GRID, -1).view(_ROW).reshape(n, GRID)
        rows[:, GRID - 1] = _BOTTOM_ROWS.take(gauges)
        e = self.slots(s)
        en = e.enemies(s)
        grid = self.grid(n)
        front = grid.cells(s.sub_y, s.sub_x, SUB_FRONT)
        back = front + (SUB_BACK - SUB_FRONT)
        back -= s.sub_dx * np.intp(grid.x_stride)
        painted = [front, back, enemy_bullet_cells(e, grid)]
        base = e.flat_env(grid.row_base)  # the first cell of each slot's env
        flat, (x, y) = _alive(e.fb_alive, e.fb_x, e.fb_y)
        painted.append(_cells(base, flat, y, x) + FRIENDLY_BULLET)
        for alive, kind in ((en.alive, (en.x, en.y, en.dx, en.sub)),
                            (e.dv_alive, (e.dv_x, e.dv_y, e.dv_dx))):
            flat, (x, y, dx, *sub) = _alive(alive, *kind)
            cell = _cells(base, flat, y, x)
            painted.append(cell + (sub[0] + ENEMY_FISH if sub else DIVER))
            trail = cell + TRAIL  # the cell behind, if on the board
            trail -= dx * np.intp(grid.x_stride)
            x -= dx
            painted.append(trail[x.view(np.uint8) < GRID])
        out.reshape(-1)[np.concatenate(painted)] = True


    # ------------------------------------------------------------ per-env kernels
    # The same rules for one env, row i (batchenv.perenv: compiled by numba into one loop
    # over the batch), decision for decision and draw for draw as the numpy kernels above.
    # The entity slots are read through kernel_views: s.en[f, j, i] is field f (en_x,
    # en_y, en_dx, en_timer, en_shot) of enemy slot j. An env's enemy slots from en_slots
    # on are clear (the state's invariant) and a clear slot changes nothing, so the rules
    # visit en_slots[i] slots. Values that the numpy kernels let drift in dead slots (a
    # dead bullet's column, a dead diver's timer, int8 wrapping) drift here the same way:
    # the tests compare the state whole.

    @staticmethod
    def reset_env(p: Any, s: Any, i: int) -> None:
        start_game_env(s, i)

    @staticmethod
    def step_env(p: Any, s: Any, i: int, action: int) -> tuple[float, bool]:
        a = sticky_action_env(p, s, i, action)
        spawn_env(s, i)
        resolve_action_env(s, i, a)
        points = move_friendly_bullets_env(s, i)
        move_divers_env(s, i)
        before, moved, terminated = move_enemies_env(s, i)
        if moved != 0:
            points += capture_bullets_env(s, i, moved)
        enemy_subs_fire_env(s, i, before)
        terminated |= move_enemy_bullets_env(s, i)
        count_down_timers_env(s, i)
        bonus, drowned = breathe_env(p, s, i)
        return float(points + bonus), terminated or drowned

    @staticmethod
    def observe_env(p: Any, s: Any, i: int, obs: np.ndarray) -> None:
        clear_board(obs)
        draw_gauges_env(s, i, obs)
        x, y = s.sub_x[i], s.sub_y[i]
        obs[y, x, SUB_FRONT] = True
        back_x, back_y = x - s.sub_dx[i], y  # (off the side, the numpy kernel's flat index
        if back_x < 0:  # lands in the row above or below: a state no game reaches)
            back_x, back_y = back_x + GRID, back_y - 1
        elif back_x >= GRID:
            back_x, back_y = back_x - GRID, back_y + 1
        if 0 <= back_y < GRID:
            obs[back_y, back_x, SUB_BACK] = True
        for b in range(2):
            if s.fb_alive[b, i]:
                obs[s.fb[1, b, i], s.fb[0, b, i], FRIENDLY_BULLET] = True
            if s.dv_alive[b, i]:
                draw_swimmer_env(obs, s.dv[0, b, i], s.dv[1, b, i], s.dv[2, b, i], DIVER)
        for j in range(s.en_slots[i]):
            if s.en_alive[j, i]:
                draw_swimmer_env(obs, s.en[0, j, i], s.en[1, j, i], s.en[2, j, i],
                                 ENEMY_FISH + s.en_sub[j, i])
        for row in range(GRID):  # the enemy bullets (few)
            bullets = np.int64(s.eb_left[row, i] | s.eb_right[row, i])
            column = 0
            while bullets:
                if bullets & 1:
                    obs[row, column, ENEMY_BULLET] = True
                bullets >>= 1
                column += 1


def _alive(alive: np.ndarray, *fields: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """The live entities of slot-major ``(slots, n)`` fields: their flat indices
    ``slot * n + env``, and each field's values for them (copies)."""
    flat = alive.reshape(-1).nonzero()[0]
    return flat, [field.reshape(-1).take(flat) for field in fields]


def _cells(base: np.ndarray, flat: np.ndarray, y: np.ndarray, x: np.ndarray
           ) -> np.ndarray:
    """Flat observation indices of channel 0 of cells ``(y, x)`` of the entities at flat
    slot indices ``flat`` (``base``: :meth:`Slots.flat_env` of the grid's ``row_base``)."""
    within = np.multiply(y, GRID * _CHANNELS, dtype=np.int16)
    within += np.multiply(x, _CHANNELS, dtype=np.int16)
    return base.take(flat) + within


def enemy_bullet_cells(e: Slots, grid: Grid) -> np.ndarray:
    """Flat observation indices of the enemy bullets (few: painted cell by cell)."""
    row, env, column = set_bits(e.eb_left | e.eb_right)  # boards are (rows, envs)
    return (grid.row_base[env] + row * grid.y_stride + column * grid.x_stride
            + ENEMY_BULLET)


class Slots:
    """Slot-major views ``(slots, n)`` of the entity columns of one state: ``fb_*``
    (friendly bullets, 2 slots), ``dv_*`` (divers, 2), ``en_*`` (enemies,
    :data:`ENEMY_SLOTS`), ``eb_left``/``eb_right`` (enemy bullets, one row mask per board
    row); ``fb``, ``dv`` and ``en`` are each kind's int8 fields as one
    ``(fields, slots, n)`` array, in ``_*_FIELDS`` order."""

    def __init__(self, s: State) -> None:
        self.fb = slot_view(s, _FB_FIELDS, 2)
        self.dv = slot_view(s, _DV_FIELDS, 2)
        self.en = slot_view(s, _EN_FIELDS, ENEMY_SLOTS)
        self.en_x, self.en_y, self.en_dx, self.en_timer, self.en_shot = self.en
        self.fb_x, self.fb_y, self.fb_dx = self.fb
        self.dv_x, self.dv_y, self.dv_dx, self.dv_timer = self.dv
        self.pairs = fields_view(s, slot_names(_FB_FIELDS + _DV_FIELDS, 2))
        self.pair_alive = fields_view(s, slot_names(("fb_alive", "dv_alive"), 2))
        self.fb_alive, self.dv_alive = self.pair_alive.reshape(2, 2, len(s))
        self.en_flags = slot_view(s, ("en_sub", "en_alive"), ENEMY_SLOTS)
        self.en_sub, self.en_alive = self.en_flags
        self.en_stamp = slot_view(s, ("en_stamp",), ENEMY_SLOTS)[0]
        self.eb = slot_view(s, ("eb_left", "eb_right"), GRID)
        self.eb_left, self.eb_right = self.eb
        self._flat_env: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.env_index = np.arange(len(s))

    def flat_env(self, per_env: np.ndarray) -> np.ndarray:
        """``per_env`` ``(n,)`` repeated for every enemy slot, so that entry ``slot * n +
        env`` is ``per_env[env]`` (flat slot indices to envs without a division; made
        once per array)."""
        entry = self._flat_env.get(id(per_env))
        if entry is None or entry[0] is not per_env:
            if len(self._flat_env) > 4:
                self._flat_env.clear()
            small = np.int32 if per_env.max(initial=0) < 2**31 else np.intp  # (less memory)
            entry = self._flat_env[id(per_env)] = (
                per_env, np.tile(per_env.astype(small), ENEMY_SLOTS))
        return entry[1]

    def enemies(self, s: SeaquestState) -> Enemies:
        """The enemy slots any env has used this episode."""
        return Enemies(self, int(s.en_slots.max()) if len(s) else 0)


class Enemies:
    """The enemy slots in use, ``(width, n)`` views: slots beyond the last one used this
    episode in any env are dead everywhere, so the rules skip them (enemies fill the
    first free slot: few slots are in use unless the game is crowded)."""

    __slots__ = ("x", "y", "dx", "timer", "shot", "sub", "alive", "stamp")

    def __init__(self, e: Slots, width: int) -> None:
        self.x, self.y, self.dx, self.timer, self.shot = e.en[:, :width]
        self.sub = e.en_sub[:width]
        self.alive = e.en_alive[:width]
        self.stamp = e.en_stamp[:width]


#: reset(): each column's start value (the columns not listed start at 0)
_START = {"sub_x": SUB_START_X, "sub_y": SUB_START_Y, "sub_dx": -1, "surface": True,
          "e_spawn_speed": INIT_SPAWN_SPEED, "e_spawn_timer": INIT_SPAWN_SPEED,
          "d_spawn_timer": DIVER_SPAWN_SPEED, "move_speed": INIT_MOVE_INTERVAL,
          "oxygen": MAX_OXYGEN}


def _scalar_blocks() -> list[tuple[tuple[str, ...], np.ndarray]]:
    """SeaquestState's fields (all but ``last_action``, which is not the game's) grouped
    by dtype, each group with its start values as a column: one write per group."""
    dtype = SeaquestState.schema()
    groups: dict[str, list[str]] = {}
    for name in dtype.names or ():
        if name != "last_action":
            groups.setdefault(dtype[name].str, []).append(name)
    return [(tuple(names), np.array([_START.get(n, 0) for n in names],
                                    dtype=dtype[names[0]])[:, None])
            for names in groups.values()]


_SCALAR_BLOCKS = _scalar_blocks()


def start_games(s: SeaquestState, rows: np.ndarray | slice) -> None:
    """MinAtar's ``reset()`` at ``rows``: the submarine at the surface in column 5 facing
    left, full oxygen, no divers, nothing on the board, the first spawns 20 and 30 steps
    away, the slowest speeds. (``last_action`` is not the game's: left alone.) Every slot
    is cleared; the enemy slots only up to ``en_slots`` (those beyond are clear)."""
    e = BatchSeaquest.slots(s)
    used = slice(None)
    if not isinstance(rows, slice):
        used = slice(0, int(s.en_slots[rows].max()) if len(rows) else 0)
    for names, start in _SCALAR_BLOCKS:
        fields_view(s, names)[:, rows] = start
    e.pairs[:, rows] = 0
    e.pair_alive[:, rows] = False
    e.en[:, used, rows] = 0
    e.en_flags[:, used, rows] = False
    e.en_stamp[used, rows] = 0
    e.eb[:, :, rows] = 0


def _push(fields: np.ndarray, alive: np.ndarray, idx: np.ndarray, values: list) -> None:
    """Append an entity to a two-slot list kept in order (slot 0 older) at envs ``idx``:
    slot 1's entity, if alive, moves to slot 0 (at most one is alive when a new one
    comes), the new one takes slot 1. ``fields`` is the kind's ``(fields, 2, n)`` block,
    ``values`` one value (or one per env) per field."""
    older = alive[1, idx].view(np.int8)  # the slot of the entity that becomes slot 0
    fields[:, 0, idx] = fields[:, older, idx]
    for field, value in zip(fields, values):
        field[1, idx] = value
    alive[0, idx] = alive[older, idx]
    alive[1, idx] = True


def spawn_enemies(s: SeaquestState, e: Slots, words: np.ndarray) -> None:
    """Envs whose spawn timer ran out restart it and spawn an enemy: from the left edge
    heading right (``rand() < 1/2``) or the right edge heading left, a sub (``rand() <
    1/3``) or a fish, in row ``randint(1, 9)``; not spawned if an enemy in that row heads
    the other way. It moves at the current move interval; a sub first shoots after 10
    steps. It takes the first free slot."""
    idx = (s.e_spawn_timer == 0).nonzero()[0]
    if not len(idx):
        return
    s.e_spawn_timer[idx] = s.e_spawn_speed[idx]
    side_word, kind_word, row_word = words[1:4, idx]
    right = rand_below(side_word, 1 / 2).view(np.int8)
    sub = rand_below(kind_word, 1 / 3)
    row = randint(row_word, *SPAWN_ROWS).astype(np.int8)
    dx = _HEADING[right]
    width = min(int(s.en_slots[idx].max()) + 1, ENEMY_SLOTS)  # one free slot at least
    alive = e.en_alive[:width, idx]
    blocked = (alive & (e.en_y[:width, idx] == row) & (e.en_dx[:width, idx] != dx)).any(axis=0)
    if blocked.any():
        keep = ~blocked
        idx, right, dx, sub, row = idx[keep], right[keep], dx[keep], sub[keep], row[keep]
        alive = alive[:, keep]
        if not len(idx):
            return
    slot = alive.argmin(axis=0)
    if width == ENEMY_SLOTS:  # (only then may an env have no free slot)
        full = alive[slot, np.arange(len(idx))]
        if full.any():
            raise RuntimeError(f"BatchSeaquest: more than {ENEMY_SLOTS} enemies in envs "
                               f"{idx[full].tolist()} (ENEMY_SLOTS is too small)")
    e.en[:, slot, idx] = (_EDGE[right], row, dx, s.move_speed[idx],
                          np.full(len(idx), ENEMY_SHOT_INTERVAL, dtype=np.int8))
    e.en_sub[slot, idx] = sub
    e.en_alive[slot, idx] = True
    e.en_stamp[slot, idx] = s.spawn_count[idx]
    s.spawn_count[idx] += 1
    s.en_slots[idx] = np.maximum(s.en_slots[idx], slot + 1)


def spawn_divers(s: SeaquestState, e: Slots, words: np.ndarray) -> None:
    """Every 30 steps a diver spawns: from the left edge heading right (``rand() <
    1/2``) or the right edge heading left, in row ``randint(1, 9)``. It becomes the newer
    diver (slot 1); the diver already there, if any, becomes the older (slot 0)."""
    idx = (s.d_spawn_timer == 0).nonzero()[0]
    if not len(idx):
        return
    s.d_spawn_timer[idx] = DIVER_SPAWN_SPEED
    side_word, row_word = words[4:6, idx]
    right = rand_below(side_word, 1 / 2).view(np.int8)
    row = randint(row_word, *SPAWN_ROWS)
    _push(e.dv, e.dv_alive, idx, [_EDGE[right], row, _HEADING[right], DIVER_MOVE_INTERVAL])


def resolve_action(s: SeaquestState, e: Slots, a: np.ndarray) -> None:
    """``f`` with the gun cooled down fires a bullet from the submarine's cell, heading
    its way (the newer bullet, slot 1); ``l``/``r`` move a column and turn that way,
    ``u``/``d`` a row (rows 0-8)."""
    firing = (a == FIRE) & (s.shot_timer == 0)
    if firing.any():
        idx = firing.nonzero()[0]
        s.shot_timer[idx] = SHOT_COOL_DOWN
        _push(e.fb, e.fb_alive, idx, [s.sub_x[idx], s.sub_y[idx], s.sub_dx[idx]])
    position = fields_view(s, ("sub_x", "sub_y"))
    position += _MOVE.take(a, axis=1)
    np.maximum(position, 0, out=position)
    np.minimum(position, _LOWEST, out=position)
    turn = _TURN.take(a)
    np.copyto(s.sub_dx, turn, where=turn != 0)


def move_friendly_bullets(e: Slots, en: Enemies, reward: np.ndarray) -> None:
    """Each friendly bullet, the newer first, moves a column; off the board it is gone,
    else it destroys the first fish in its cell (the oldest), else the first sub, and
    disappears (+1)."""
    alive, x, y = e.fb_alive, e.fb_x, e.fb_y
    x += e.fb_dx  # (dead bullets drift too: nothing reads them)
    alive &= x.view(np.uint8) < GRID  # (-1 is 255)
    here = (en.x == x[:, None]) & (en.y == y[:, None])  # (bullet, enemy, env)
    here &= alive[:, None]
    here &= en.alive
    if not here.any():
        return
    idx = here.any(axis=(0, 1)).nonzero()[0]  # the envs where a bullet hits: few
    key = en.stamp[:, idx] + en.sub[:, idx] * _SUB_KEY
    for b in (1, 0):
        candidate = here[b][:, idx] & en.alive[:, idx]
        hit = candidate.any(axis=0)
        victim = np.where(candidate, key, _NO_KEY).argmin(axis=0)[hit]
        rows = idx[hit]
        en.alive[victim, rows] = False
        alive[b, rows] = False
        reward[rows] += 1.0


def move_divers(s: SeaquestState, e: Slots) -> None:
    """Each diver, the newer first: in the submarine's cell with room on board (fewer
    than 6 divers) it is picked up; else when its move timer runs out it moves a column
    (leaving the board, or being picked up if it lands on the submarine with room), and
    its timer restarts at 5; else its timer counts down."""
    for slot in (1, 0):
        alive = e.dv_alive[slot]
        x = e.dv_x[slot]
        timer = e.dv_timer[slot]
        on_sub = (e.dv_y[slot] == s.sub_y) & (s.diver_count < MAX_DIVERS)
        picked = alive & on_sub & (x == s.sub_x)
        swimming = alive ^ picked
        moving = swimming & (timer == 0)
        timer -= 1  # (dead divers' timers drift: nothing reads them)
        np.copyto(timer, DIVER_MOVE_INTERVAL, where=moving)
        np.add(x, e.dv_dx[slot], out=x, where=moving)
        gone = moving & (x.view(np.uint8) >= GRID)
        picked |= moving & on_sub & (x == s.sub_x)
        alive &= ~(picked | gone)
        s.diver_count += picked


def move_enemies(s: SeaquestState, en: Enemies, terminated: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Each enemy in the submarine's cell ends the episode; an enemy whose move timer ran
    out moves a column (its timer restarts at the move interval; off the board it is
    gone, onto the submarine it ends the episode), else its timer counts down. Returns
    the enemies alive before the move (subs among them may fire) and those that moved
    within the board, not onto the submarine (they may run into a bullet)."""
    alive = en.alive
    before = alive.copy()
    on_row = en.y == s.sub_y
    at_sub = on_row & (en.x == s.sub_x)
    at_sub &= alive
    moving = alive & (en.timer == 0)
    en.timer -= alive
    np.copyto(en.timer, s.move_speed, where=moving)
    np.add(en.x, en.dx, out=en.x, where=moving)
    gone = moving & (en.x.view(np.uint8) >= GRID)  # (-1 is 255)
    alive ^= gone
    landed = moving & on_row & (en.x == s.sub_x)  # (off the board: never the sub's)
    at_sub |= landed
    terminated |= at_sub.any(axis=0)
    moving ^= gone
    moving ^= landed
    return before, moving


def capture_bullets(e: Slots, en: Enemies, moved: np.ndarray, reward: np.ndarray
                    ) -> None:
    """An enemy that moved into a friendly bullet's cell destroys it and is destroyed
    (+1). MinAtar goes through the subs (newest first), then the fish (newest first), each
    taking the first (older) bullet in its cell: so the older bullet goes to the first
    enemy in that order in its cell, the newer one to the first other enemy in its."""
    here = (en.x == e.fb_x[:, None]) & (en.y == e.fb_y[:, None])  # (bullet, enemy, env)
    here &= moved
    here &= e.fb_alive[:, None]
    if not here.any():
        return
    idx = here.any(axis=(0, 1)).nonzero()[0]
    key = en.stamp[:, idx] + en.sub[:, idx] * _SUB_KEY
    for b in (0, 1):
        candidate = here[b][:, idx] & en.alive[:, idx]
        hit = candidate.any(axis=0)
        taker = np.where(candidate, key, -1).argmax(axis=0)[hit]
        rows = idx[hit]
        en.alive[taker, rows] = False
        e.fb_alive[b, rows] = False
        reward[rows] += 1.0


def enemy_subs_fire(e: Slots, en: Enemies, alive: np.ndarray) -> None:
    """Each sub alive before the move (even one shot or gone since) whose shot timer ran
    out fires a bullet from its cell, heading its way, and its timer restarts at 10; else
    its timer counts down."""
    subs = alive & en.sub
    firing = subs & (en.shot == 0)
    en.shot -= subs
    if not firing.any():
        return
    en.shot[firing] = ENEMY_SHOT_INTERVAL
    flat, (x, y, dx) = _alive(firing, en.x, en.y, en.dx)
    inside = x.view(np.uint8) < GRID  # a bullet fired off the board leaves it at once
    board = (dx > 0).view(np.int8)[inside] * np.intp(GRID)  # 0 left, 1 right
    board += y[inside]  # the row of eb's (2 * GRID, n) rows
    env = e.flat_env(e.env_index).take(flat[inside])
    # (eb's rows are apart by more than n: not a flat array, batchenv.state._new_block)
    np.bitwise_or.at(e.eb.reshape(2 * GRID, -1), (board, env), _BIT.take(x[inside]))


def move_enemy_bullets(s: SeaquestState, e: Slots, terminated: np.ndarray) -> None:
    """Enemy bullets move a column their way, leaving the board at its sides; one in the
    submarine's cell before or after the move ends the episode."""
    near = e.eb[:, s.sub_y, e.env_index]  # the submarine's row: (left-, right-movers)
    near &= _REACH.take(s.sub_x, axis=1)
    terminated |= (near[0] | near[1]) != 0
    e.eb_left >>= 1
    e.eb_right <<= 1
    e.eb_right &= _ROW_BITS


def count_down_timers(s: SeaquestState) -> None:
    """The gun's cool-down and the spawn timers count down to 0."""
    timers = fields_view(s, ("shot_timer", "e_spawn_timer", "d_spawn_timer"))
    timers -= timers > 0


def breathe(s: SeaquestState, reward: np.ndarray, terminated: np.ndarray, ramping: bool
            ) -> None:
    """No oxygen left ends the episode. Under water the submarine uses a unit of oxygen.
    Reaching the surface (the first step there) with no diver ends the episode; else it
    refills the oxygen, pays ``oxygen * 10 // 200`` if 6 divers were on board (and sets
    the count to 0), then takes a diver, and ramps the difficulty (enemies spawn a step
    sooner, and every second time also move a step sooner)."""
    terminated |= s.oxygen <= 0
    under = s.sub_y > 0
    s.oxygen -= under
    arriving = ~(under | s.surface)
    np.greater(s.surface, under, out=s.surface)  # surface and not under water
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


# ---------------------------------------------------------------- per-env rules (row i)
_U3, _U5 = np.uint64(3), np.uint64(5)
_OXYGEN_PER_CELL = MAX_OXYGEN // GRID
_LAST = GRID - 1  # the last row and column of the board
_CROWDED = (f"BatchSeaquest: more than {ENEMY_SLOTS} enemies in an env (ENEMY_SLOTS is too "
            f"small)")
_ONE64 = np.int64(1)
_ROW_MASK = np.uint16(_ROW_BITS)
assert ENEMY_SLOTS <= 63  # a step's slot masks (before, moved) are int64


@perenv.rule
def start_game_env(s: Any, i: int) -> None:
    """:func:`start_games` for row ``i`` (the enemy slots up to ``en_slots``: those
    beyond are clear)."""
    s.sub_x[i] = SUB_START_X
    s.sub_y[i] = SUB_START_Y
    s.sub_dx[i] = -1
    s.surface[i] = True
    s.shot_timer[i] = 0
    s.e_spawn_speed[i] = INIT_SPAWN_SPEED
    s.e_spawn_timer[i] = INIT_SPAWN_SPEED
    s.d_spawn_timer[i] = DIVER_SPAWN_SPEED
    s.move_speed[i] = INIT_MOVE_INTERVAL
    s.ramp_index[i] = 0
    s.oxygen[i] = MAX_OXYGEN
    s.diver_count[i] = 0
    s.spawn_count[i] = 0
    for b in range(2):
        for f in range(len(_FB_FIELDS)):
            s.fb[f, b, i] = 0
        for f in range(len(_DV_FIELDS)):
            s.dv[f, b, i] = 0
        s.fb_alive[b, i] = False
        s.dv_alive[b, i] = False
    for j in range(s.en_slots[i]):
        for f in range(len(_EN_FIELDS)):
            s.en[f, j, i] = 0
        s.en_sub[j, i] = False
        s.en_alive[j, i] = False
        s.en_stamp[j, i] = 0
    s.en_slots[i] = 0
    for y in range(GRID):
        s.eb_left[y, i] = 0
        s.eb_right[y, i] = 0


@perenv.rule
def spawn_env(s: Any, i: int) -> None:
    """:func:`spawn_enemies` and :func:`spawn_divers` for row ``i``: step words 1-5 are
    drawn whether used or not (words 1-3 an enemy's, 4-5 a diver's), so the stream moves
    past all five and a spawn reads its words where they stand."""
    first = s.rng_counter[i]
    if s.e_spawn_timer[i] == 0:
        s.e_spawn_timer[i] = s.e_spawn_speed[i]
        spawn_enemy_env(s, i)  # words 1-3
    if s.d_spawn_timer[i] == 0:
        s.d_spawn_timer[i] = DIVER_SPAWN_SPEED
        s.rng_counter[i] = first + _U3
        spawn_diver_env(s, i)  # words 4-5
    s.rng_counter[i] = first + _U5


@perenv.rule
def spawn_enemy_env(s: Any, i: int) -> None:
    """:func:`spawn_enemies` for row ``i`` (its timer restarted): from the left edge
    heading right (``rand() < 1/2``) or the right edge heading left, a sub (``rand() <
    1/3``) or a fish, in row ``randint(1, 9)``, in the first free slot; lost if an enemy
    in that row heads the other way."""
    right = perenv.random(s, i) < 1 / 2
    sub = perenv.random(s, i) < 1 / 3
    row = perenv.integers(s, i, SPAWN_ROWS[0], SPAWN_ROWS[1])
    dx = 1 if right else -1
    used = s.en_slots[i]
    free = -1
    for j in range(min(used + 1, ENEMY_SLOTS)):
        if s.en_alive[j, i]:
            if s.en[1, j, i] == row and s.en[2, j, i] != dx:
                return  # blocked: the spawn is lost
        elif free < 0:
            free = j
    if free < 0:
        raise RuntimeError(_CROWDED)
    s.en[0, free, i] = 0 if right else _LAST
    s.en[1, free, i] = row
    s.en[2, free, i] = dx
    s.en[3, free, i] = s.move_speed[i]
    s.en[4, free, i] = ENEMY_SHOT_INTERVAL
    s.en_sub[free, i] = sub
    s.en_alive[free, i] = True
    s.en_stamp[free, i] = s.spawn_count[i]
    s.spawn_count[i] += 1
    s.en_slots[i] = max(used, free + 1)


@perenv.rule
def spawn_diver_env(s: Any, i: int) -> None:
    """:func:`spawn_divers` for row ``i`` (its timer restarted): the newer diver (slot
    1), from the left edge heading right (``rand() < 1/2``) or the right edge heading
    left, in row ``randint(1, 9)``; the diver in slot 1, if any, becomes the older."""
    right = perenv.random(s, i) < 1 / 2
    row = perenv.integers(s, i, SPAWN_ROWS[0], SPAWN_ROWS[1])
    if s.dv_alive[1, i]:  # _push
        for f in range(len(_DV_FIELDS)):
            s.dv[f, 0, i] = s.dv[f, 1, i]
        s.dv_alive[0, i] = True
    s.dv_alive[1, i] = True
    s.dv[0, 1, i] = 0 if right else _LAST
    s.dv[1, 1, i] = row
    s.dv[2, 1, i] = 1 if right else -1
    s.dv[3, 1, i] = DIVER_MOVE_INTERVAL


@perenv.rule
def resolve_action_env(s: Any, i: int, a: int) -> None:
    """:func:`resolve_action` for row ``i``: fire (a newer bullet from the submarine's
    cell, its way) if the gun has cooled down; move within columns 0-9 and rows 0-8;
    turn."""
    if a == FIRE and s.shot_timer[i] == 0:
        s.shot_timer[i] = SHOT_COOL_DOWN
        if s.fb_alive[1, i]:  # _push
            for f in range(len(_FB_FIELDS)):
                s.fb[f, 0, i] = s.fb[f, 1, i]
            s.fb_alive[0, i] = True
        s.fb_alive[1, i] = True
        s.fb[0, 1, i] = s.sub_x[i]
        s.fb[1, 1, i] = s.sub_y[i]
        s.fb[2, 1, i] = s.sub_dx[i]
    s.sub_x[i] = min(max(s.sub_x[i] + _MOVE[0, a], 0), _LAST)
    s.sub_y[i] = min(max(s.sub_y[i] + _MOVE[1, a], 0), DEEPEST)
    if _TURN[a] != 0:
        s.sub_dx[i] = _TURN[a]


@perenv.rule
def enemy_key_env(s: Any, i: int, j: int) -> np.int64:
    """The hit order of enemy slot ``j``: spawn order, every fish before every sub
    (:func:`move_friendly_bullets`' key)."""
    return np.int64(s.en_stamp[j, i]) + (_SUB_KEY if s.en_sub[j, i] else np.int64(0))


@perenv.rule
def move_friendly_bullets_env(s: Any, i: int) -> int:
    """:func:`move_friendly_bullets` for row ``i``: each bullet moves (dead ones drift
    too); off the board it is gone; then, the newer first, it destroys the first enemy
    in its cell (the oldest fish, else the oldest sub). Returns the enemies destroyed."""
    for b in range(2):
        s.fb[0, b, i] += s.fb[2, b, i]
        x = s.fb[0, b, i]
        if x < 0 or x > _LAST:
            s.fb_alive[b, i] = False
    points = 0
    for b in (1, 0):
        if not s.fb_alive[b, i]:
            continue
        x, y = s.fb[0, b, i], s.fb[1, b, i]
        victim, best = -1, np.int64(0)
        for j in range(s.en_slots[i]):
            if s.en_alive[j, i] and s.en[0, j, i] == x and s.en[1, j, i] == y:
                key = enemy_key_env(s, i, j)
                if victim < 0 or key < best:
                    victim, best = j, key
        if victim >= 0:
            s.en_alive[victim, i] = False
            s.fb_alive[b, i] = False
            points += 1
    return points


@perenv.rule
def move_divers_env(s: Any, i: int) -> None:
    """:func:`move_divers` for row ``i``: each diver, the newer first, is picked up in
    the submarine's cell (room on board), else moves when its timer runs out (off the
    board it is gone; onto the submarine, with room, it is picked up), else counts
    down."""
    for slot in (1, 0):
        alive = s.dv_alive[slot, i]
        x = s.dv[0, slot, i]
        timer = s.dv[3, slot, i]
        on_sub = s.dv[1, slot, i] == s.sub_y[i] and s.diver_count[i] < MAX_DIVERS
        picked = alive and on_sub and x == s.sub_x[i]
        s.dv[3, slot, i] = timer - 1  # (dead divers' timers drift, as in the numpy kernel)
        gone = False
        if alive and not picked and timer == 0:  # it moves
            s.dv[3, slot, i] = DIVER_MOVE_INTERVAL
            s.dv[0, slot, i] += s.dv[2, slot, i]
            x = s.dv[0, slot, i]
            gone = x < 0 or x > _LAST
            picked = on_sub and x == s.sub_x[i]
        if picked or gone:
            s.dv_alive[slot, i] = False
        if picked:
            s.diver_count[i] += 1


@perenv.rule
def move_enemies_env(s: Any, i: int) -> tuple[np.int64, np.int64, bool]:
    """:func:`move_enemies` for row ``i``: an enemy in the submarine's cell, or moving
    onto it, ends the episode; a due enemy moves (its timer restarts; off the board it is
    gone), the others count down. Returns the masks (bit j: slot j) of the enemies alive
    before the move and of those that moved within the board, not onto the submarine,
    and whether the episode ends."""
    before = moved = np.int64(0)
    caught = False
    for j in range(s.en_slots[i]):
        if not s.en_alive[j, i]:
            continue
        before |= _ONE64 << j
        on_row = s.en[1, j, i] == s.sub_y[i]
        caught |= on_row and s.en[0, j, i] == s.sub_x[i]
        if s.en[3, j, i] != 0:
            s.en[3, j, i] -= 1
            continue
        s.en[3, j, i] = s.move_speed[i]
        s.en[0, j, i] += s.en[2, j, i]
        x = s.en[0, j, i]
        if x < 0 or x > _LAST:  # gone
            s.en_alive[j, i] = False
        elif on_row and x == s.sub_x[i]:  # landed on the submarine
            caught = True
        else:
            moved |= _ONE64 << j
    return before, moved, caught


@perenv.rule
def capture_bullets_env(s: Any, i: int, moved: np.int64) -> int:
    """:func:`capture_bullets` for row ``i``: the older bullet first, each goes to the
    last enemy in MinAtar's order (subs, then fish, newest first) that moved into its
    cell (``moved``: the slots' mask). Returns the enemies destroyed."""
    points = 0
    for b in range(2):
        if not s.fb_alive[b, i]:
            continue
        x, y = s.fb[0, b, i], s.fb[1, b, i]
        taker, best = -1, np.int64(0)
        for j in range(s.en_slots[i]):
            if (moved >> j) & _ONE64 != 0 and s.en_alive[j, i] and s.en[0, j, i] == x \
                    and s.en[1, j, i] == y:
                key = enemy_key_env(s, i, j)
                if taker < 0 or key > best:
                    taker, best = j, key
        if taker >= 0:
            s.en_alive[taker, i] = False
            s.fb_alive[b, i] = False
            points += 1
    return points


@perenv.rule
def enemy_subs_fire_env(s: Any, i: int, before: np.int64) -> None:
    """:func:`enemy_subs_fire` for row ``i``: each sub alive before the move (``before``:
    the slots' mask) whose shot timer ran out fires from its cell, its way (off the
    board: the bullet is gone at once), and its timer restarts; the others count down."""
    for j in range(s.en_slots[i]):
        if (before >> j) & _ONE64 == 0 or not s.en_sub[j, i]:
            continue
        if s.en[4, j, i] != 0:
            s.en[4, j, i] -= 1
            continue
        s.en[4, j, i] = ENEMY_SHOT_INTERVAL
        x, y = s.en[0, j, i], s.en[1, j, i]
        if 0 <= x <= _LAST:
            if s.en[2, j, i] > 0:
                s.eb_right[y, i] |= _BIT[x]
            else:
                s.eb_left[y, i] |= _BIT[x]


@perenv.rule
def move_enemy_bullets_env(s: Any, i: int) -> bool:
    """:func:`move_enemy_bullets` for row ``i``: whether a bullet is in the submarine's
    cell or about to move into it (the episode ends); then every bullet moves a column
    its way."""
    x, y = s.sub_x[i], s.sub_y[i]
    hit = (s.eb_left[y, i] & _REACH[0, x]) | (s.eb_right[y, i] & _REACH[1, x]) != 0
    for row in range(GRID):
        s.eb_left[row, i] >>= 1
        s.eb_right[row, i] = (s.eb_right[row, i] << 1) & _ROW_MASK
    return hit


@perenv.rule
def count_down_timers_env(s: Any, i: int) -> None:
    """:func:`count_down_timers` for row ``i``."""
    if s.shot_timer[i] > 0:
        s.shot_timer[i] -= 1
    if s.e_spawn_timer[i] > 0:
        s.e_spawn_timer[i] -= 1
    if s.d_spawn_timer[i] > 0:
        s.d_spawn_timer[i] -= 1


@perenv.rule
def breathe_env(p: Any, s: Any, i: int) -> tuple[int, bool]:
    """:func:`breathe` for row ``i``. Returns the surfacing bonus and whether the episode
    ends (no oxygen left, or surfacing with no diver)."""
    drowned = s.oxygen[i] <= 0
    under = s.sub_y[i] > 0
    if under:
        s.oxygen[i] -= 1
    arriving = not (under or s.surface[i])
    s.surface[i] = s.surface[i] and not under
    if not arriving:
        return 0, drowned
    count = s.diver_count[i]
    if count == 0:
        return 0, True
    s.surface[i] = True
    bonus = 0
    if count == MAX_DIVERS:
        bonus = s.oxygen[i] * 10 // MAX_OXYGEN
        count = 0
    s.oxygen[i] = MAX_OXYGEN
    s.diver_count[i] = count - 1
    if p.difficulty_ramping:
        move, spawn = s.move_speed[i], s.e_spawn_speed[i]
        if spawn > FASTEST_SPAWN or move > FASTEST_MOVE:
            if move > FASTEST_MOVE and s.ramp_index[i] % 2 == 1:
                s.move_speed[i] = move - 1
            if spawn > FASTEST_SPAWN:
                s.e_spawn_speed[i] = spawn - 1
            s.ramp_index[i] += 1
    return bonus, drowned


@perenv.rule
def draw_gauges_env(s: Any, i: int, obs: np.ndarray) -> None:
    """Row 9: the oxygen bar (a cell per 20 units, from column 0) and the diver bar (a
    cell per diver on board, from column 8 leftwards)."""
    level = max(s.oxygen[i], 0) // _OXYGEN_PER_CELL
    first_diver = _LAST - max(s.diver_count[i], 0)
    for x in range(GRID):
        obs[_LAST, x, OXYGEN_GAUGE] = x < level
        obs[_LAST, x, DIVER_GAUGE] = first_diver <= x < _LAST


@perenv.rule
def draw_swimmer_env(obs: np.ndarray, x: int, y: int, dx: int, channel: int) -> None:
    """An enemy or a diver: its cell, and the cell behind it (its trail) if on the
    board."""
    obs[y, x, channel] = True
    behind = x - dx
    if 0 <= behind <= _LAST:
        obs[y, behind, TRAIL] = True
