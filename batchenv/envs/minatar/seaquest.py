"""BatchSeaquest: MinAtar's Seaquest (``minatar/environments/seaquest.py``, MinAtar 1.0.15),
batched."""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np

from batchenv import perenv
from batchenv.entities import slot_columns, slot_names, slot_view
from batchenv.envs.minatar._base import (
    FIRE,
    GRID,
    LAST,
    ROW_MASKS,
    Coordinate,
    Heading,
    MinAtarEnv,
    MinAtarState,
    clear_board,
    sticky_action_env,
)
from batchenv.state import Field, Range, State

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
_ROW_MASK = np.uint16(ROW_MASKS - 1)
_BIT = (1 << np.arange(GRID)).astype(np.uint16)  # the row mask of column x
# The submarine's moves by MinAtar action (n, l, u, r, d, f): (dx, dy); its new heading
# (0: keeps its heading)
_MOVE = np.array([[0, -1, 0, 1, 0, 0], [0, 0, -1, 0, 1, 0]], dtype=np.int8)
_TURN = np.array([0, -1, 0, 1, 0, 0], dtype=np.int8)
#: An enemy bullet in the submarine's column x, or one column away and heading into it:
#: the masks of left-movers (x and x+1) and of right-movers (x and x-1) that hit it
_REACH = np.stack([(_BIT | (_BIT << 1)) & _ROW_MASK, _BIT | (_BIT >> 1)])  # (2, 10)
#: Hit order keys: a sub's key is above every fish's (see move_friendly_bullets)
_SUB_KEY = np.int64(1) << np.int64(32)

# channels (MinAtar's order)
SUB_FRONT, SUB_BACK, FRIENDLY_BULLET, TRAIL, ENEMY_BULLET, ENEMY_FISH, ENEMY_SUB, \
    OXYGEN_GAUGE, DIVER_GAUGE, DIVER = range(10)


class SeaquestState(MinAtarState):
    """One game per row: the submarine, the timers and the speeds. The entity slots
    follow in ``BatchSeaquest.state_dtype`` as slot columns (:data:`ENTITY_COLUMNS`)."""

    sub_x: Coordinate  # the submarine's front cell: column 0-9
    sub_y: Annotated[Field[np.int8], Range(0, DEEPEST)]  # row 0 (surface) to 8
    sub_dx: Heading  # heading: -1 left (its back is on the right), +1 right
    shot_timer: Annotated[Field[np.int8], Range(0, SHOT_COOL_DOWN)]  # the gun's cool-down
    # steps to the next enemy spawn (a spawn restarts it at e_spawn_speed) and diver spawn
    e_spawn_timer: Annotated[Field[np.int8], Range(0, INIT_SPAWN_SPEED)]
    d_spawn_timer: Annotated[Field[np.int8], Range(0, DIVER_SPAWN_SPEED)]
    # steps between enemy spawns: 20, one less per ramp (to 1); an enemy's move timer
    # restarts at move_speed: 5 down to 2
    e_spawn_speed: Annotated[Field[np.int8], Range(FASTEST_SPAWN, INIT_SPAWN_SPEED)]
    move_speed: Annotated[Field[np.int8], Range(FASTEST_MOVE, INIT_MOVE_INTERVAL)]
    ramp_index: Field[np.int8]  # surfacings that ramped the difficulty: a count the rules
    #                             read for its parity only, so any value is safe
    # enemy slots used this episode (one past the highest; the slots from here on are
    # clear, all zero: check_state); the rules visit slots 0 to en_slots - 1
    en_slots: Annotated[Field[np.int8], Range(0, ENEMY_SLOTS)]
    surface: Field[np.bool_]  # at the surface since the last surfacing (no new one)
    # 200 at the surface, one less per step under water; -1 only in a game that is over
    # (check_state)
    oxygen: Annotated[Field[np.int16], Range(-1, MAX_OXYGEN)]
    # divers on board, at most 6; below 0 after a full surfacing, one less at each
    # surfacing after it, with no lower end (as MinAtar's int)
    diver_count: Annotated[Field[np.int32], Range(None, MAX_DIVERS)]
    spawn_count: Field[np.int32]  # enemies spawned this episode: the next stamp (any value
    #                               is safe: stamps are only compared)


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
#: The slot columns' ranges (every slot of a field alike). A live entity is on the board
#: (check_state: observe_env draws it, in its row and column); where it left the board
#: its slot keeps the column it left to (-1 or 10), and a clear slot holds zeros. A dead
#: friendly bullet keeps drifting (as MinAtar's list no longer holds it, nothing reads its
#: column: any value), and so does a dead diver's timer. Rows are 0-8 (the submarine's,
#: where bullets start; 1-8, where enemies and divers spawn; 0 in a clear slot).
_SLOT_RANGES = {
    "fb_y": Range(0, DEEPEST), "fb_dx": Range(-1, 1),
    "dv_x": Range(-1, GRID), "dv_y": Range(0, DEEPEST), "dv_dx": Range(-1, 1),
    "en_x": Range(-1, GRID), "en_y": Range(0, DEEPEST), "en_dx": Range(-1, 1),
    "en_timer": Range(0, INIT_MOVE_INTERVAL),  # restarts at move_speed when 0
    "en_shot": Range(0, ENEMY_SHOT_INTERVAL),  # a sub's, restarts at 10 when 0
    # 10-bit row masks: observe_env draws a bit as a column of the board
    "eb_left": Range(0, ROW_MASKS - 1), "eb_right": Range(0, ROW_MASKS - 1),
}
_SLOTS_OF = {"fb": 2, "dv": 2, "en": ENEMY_SLOTS, "eb": GRID}


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
    :func:`~batchenv.envs.minatar._base.sticky_action_env`, :func:`spawn` (an enemy and a
    diver when their timers run out), :func:`resolve_action`,
    :func:`move_friendly_bullets`, :func:`move_divers`, :func:`move_enemies` with
    :func:`capture_bullets` and :func:`enemy_subs_fire`, :func:`move_enemy_bullets`,
    :func:`count_down_timers`, :func:`breathe`.

    **State.** MinAtar keeps Python lists of entities; here each kind is a fixed set of
    slots per env with an alive mask. Enemies (fish and subs in one set of
    :data:`ENEMY_SLOTS` slots, ``en_sub`` telling them apart) carry a spawn stamp, so that
    the order of MinAtar's lists (spawn order) decides who is hit first. Friendly bullets
    and divers have two slots kept in list order (slot 0 the older). The enemies' bullets
    only move and hit the player, so two bullets in one cell moving the same way are one:
    they are two 10 x 10 boards of row masks, one per direction. Headings are ``dx``
    (-1 left, +1 right; MinAtar's ``lr``/``sub_or`` is ``dx == 1``). The slots are stored
    slot-major (:func:`batchenv.entities.slot_columns`): slot ``j`` of ``en_x`` is the
    state column ``en_x_j``, row ``y`` of ``eb_left`` the column ``eb_left_y``; the
    kernels read them through views (``kernel_views``: ``s.en[f, j, i]`` is field ``f``
    of enemy slot ``j`` of env ``i``). An env's enemy slots from ``en_slots`` on are clear
    (all zero), so the rules visit ``en_slots`` slots.

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
    ``kernels="auto"`` (default): the rules compiled by numba when it is installed, else
    run as a Python loop (with a warning); ``"numba"`` or ``"python"`` to choose, and
    ``num_threads=`` for the compiled loop (identical results: docs/minatar.md).

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

    * v0 / v1: as MinAtar 1.0.15's ``MinAtar/Seaquest-v0`` / ``-v1``. Its rules are
      written once, as per-env kernels: ``kernels="numpy"`` (a second copy of the rules as
      numpy kernels) is gone; the results are the same.
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
    state_ranges = {column: bounds for name, bounds in _SLOT_RANGES.items()
                    for column in slot_names([name], _SLOTS_OF[name[:2]])}
    #: The slot blocks the kernels read as ``s.<name>`` (:meth:`state_views`)
    kernel_views = ("fb", "dv", "fb_alive", "dv_alive", "en", "en_sub", "en_alive",
                    "en_stamp", "eb_left", "eb_right")
    #: The slot columns, which the kernels read through the views only
    kernel_hidden_fields = tuple(name for name, _ in ENTITY_COLUMNS)

    @staticmethod
    def state_views(s: State) -> dict[str, np.ndarray]:
        """:data:`kernel_views`: slot-major views of the slot columns of ``s``: ``fb``
        ``(3, 2, n)`` (``_FB_FIELDS``), ``dv`` ``(4, 2, n)``, ``en`` ``(5, ENEMY_SLOTS,
        n)``, ``fb_alive``/``dv_alive`` ``(2, n)``, ``en_sub``/``en_alive``/``en_stamp``
        ``(ENEMY_SLOTS, n)``, ``eb_left``/``eb_right`` ``(10, n)``."""
        fb_alive, dv_alive = slot_view(s, ("fb_alive", "dv_alive"), 2)
        en_sub, en_alive = slot_view(s, ("en_sub", "en_alive"), ENEMY_SLOTS)
        eb_left, eb_right = slot_view(s, ("eb_left", "eb_right"), GRID)
        return {"fb": slot_view(s, _FB_FIELDS, 2), "dv": slot_view(s, _DV_FIELDS, 2),
                "fb_alive": fb_alive, "dv_alive": dv_alive,
                "en": slot_view(s, _EN_FIELDS, ENEMY_SLOTS), "en_sub": en_sub,
                "en_alive": en_alive, "en_stamp": slot_view(s, ("en_stamp",), ENEMY_SLOTS)[0],
                "eb_left": eb_left, "eb_right": eb_right}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        """As :meth:`BatchEnv.step`; a spawn that finds every enemy slot taken (beyond the
        bound of :data:`ENEMY_SLOTS`: only a set state gets there) is a RuntimeError naming
        the envs (the compiled kernels raise it without them)."""
        try:
            return super().step(actions)
        except RuntimeError as error:
            if str(error) != _CROWDED:
                raise
            alive = self.state_views(self.state)["en_alive"]
            envs = alive.all(axis=0).nonzero()[0].tolist()
            raise RuntimeError(f"BatchSeaquest: more than {ENEMY_SLOTS} enemies in envs "
                               f"{envs} (ENEMY_SLOTS is too small)") from None

    def check_state(self, states: np.ndarray) -> dict[str, np.ndarray]:
        """``set_state``'s check of what the ranges cannot say: an env's enemy slots from
        ``en_slots`` on are clear (all zero), as a reset clears only those below; live
        entities are on the board, heading -1 or +1 (the submarine too, its back on the
        board), a live diver's timer is 0-5; and a game over by drowning (oxygen -1) is
        awaiting its reset."""
        used = states["en_slots"]
        beyond = np.arange(ENEMY_SLOTS)[:, None] >= used
        junk = np.zeros(len(states), dtype=bool)
        for name in (*_EN_FIELDS, "en_sub", "en_alive", "en_stamp"):
            junk |= (beyond & (_slots(states, name) != 0)).any(axis=0)
        off_board = np.zeros(len(states), dtype=bool)
        heading = np.abs(states["sub_dx"]) != 1
        for kind in ("fb", "dv", "en"):
            alive = _slots(states, f"{kind}_alive")
            x = _slots(states, f"{kind}_x")
            off_board |= (alive & ((x < 0) | (x > LAST))).any(axis=0)
            heading |= (alive & (np.abs(_slots(states, f"{kind}_dx")) != 1)).any(axis=0)
        back = states["sub_x"] - states["sub_dx"]
        timer = _slots(states, "dv_timer")
        diver_timer = (_slots(states, "dv_alive")
                       & ((timer < 0) | (timer > DIVER_MOVE_INTERVAL))).any(axis=0)
        return {"an enemy slot from en_slots on is not clear (all zero)": junk,
                "a live bullet, diver or enemy off the board (column not 0-9)": off_board,
                "a heading (sub_dx, or a live entity's dx) not -1 or +1": heading,
                "the submarine's back off the board (column 0 facing right, or 9 facing "
                "left)": (back < 0) | (back > LAST),
                f"a live diver's timer outside [0, {DIVER_MOVE_INTERVAL}]": diver_timer,
                "oxygen -1 (the game is over) in an env not awaiting a reset":
                    (states["oxygen"] < 0) & ~states["awaiting_reset"]}

    # ------------------------------------------------------------ kernels (row i)
    # The entity slots are read through kernel_views: s.en[f, j, i] is field f (en_x,
    # en_y, en_dx, en_timer, en_shot) of enemy slot j. An env's enemy slots from en_slots
    # on are clear (the state's invariant) and a clear slot changes nothing, so the rules
    # visit en_slots[i] slots. A dead bullet's column and a dead diver's timer drift (as
    # nothing reads them, and int8 wraps).

    @staticmethod
    def reset_env(p: Any, s: Any, i: int) -> None:
        start_game(s, i)

    @staticmethod
    def step_env(p: Any, s: Any, i: int, action: int) -> tuple[float, bool]:
        a = sticky_action_env(p, s, i, action)
        spawn(s, i)
        resolve_action(s, i, a)
        points = move_friendly_bullets(s, i)
        move_divers(s, i)
        before, moved, terminated = move_enemies(s, i)
        if moved != 0:
            points += capture_bullets(s, i, moved)
        enemy_subs_fire(s, i, before)
        terminated |= move_enemy_bullets(s, i)
        count_down_timers(s, i)
        bonus, drowned = breathe(p, s, i)
        return float(points + bonus), terminated or drowned

    @staticmethod
    def observe_env(p: Any, s: Any, i: int, obs: np.ndarray) -> None:
        clear_board(obs)
        draw_gauges(s, i, obs)
        x, y = s.sub_x[i], s.sub_y[i]
        obs[y, x, SUB_FRONT] = True
        back = x - s.sub_dx[i]  # (on the board in every state check_state lets in)
        if 0 <= back <= LAST:
            obs[y, back, SUB_BACK] = True
        for b in range(2):
            if s.fb_alive[b, i]:
                obs[s.fb[1, b, i], s.fb[0, b, i], FRIENDLY_BULLET] = True
            if s.dv_alive[b, i]:
                draw_swimmer(obs, s.dv[0, b, i], s.dv[1, b, i], s.dv[2, b, i], DIVER)
        for j in range(s.en_slots[i]):
            if s.en_alive[j, i]:
                draw_swimmer(obs, s.en[0, j, i], s.en[1, j, i], s.en[2, j, i],
                             ENEMY_FISH + s.en_sub[j, i])
        for row in range(GRID):  # the enemy bullets (few)
            bullets = np.int64(s.eb_left[row, i] | s.eb_right[row, i])
            column = 0
            while bullets:
                if bullets & 1:
                    obs[row, column, ENEMY_BULLET] = True
                bullets >>= 1
                column += 1


def _slots(states: np.ndarray, name: str) -> np.ndarray:
    """The slot columns ``name_0, name_1, ..`` of records as one ``(slots, n)`` array."""
    return np.stack([states[column] for column in slot_names([name], _SLOTS_OF[name[:2]])])


# ---------------------------------------------------------------- rules (row i)
_U3, _U5 = np.uint64(3), np.uint64(5)
_OXYGEN_PER_CELL = MAX_OXYGEN // GRID
_CROWDED = (f"BatchSeaquest: more than {ENEMY_SLOTS} enemies in an env (ENEMY_SLOTS is too "
            f"small)")
_ONE64 = np.int64(1)
assert ENEMY_SLOTS <= 63  # a step's slot masks (before, moved) are int64


@perenv.rule
def start_game(s: Any, i: int) -> None:
    """MinAtar's ``reset()`` for row ``i``: the submarine at the surface in column 5 facing
    left, full oxygen, no divers, nothing on the board, the first spawns 20 and 30 steps
    away, the slowest speeds. (``last_action`` is not the game's: left alone.) Every slot
    is cleared, the enemy slots up to ``en_slots`` (those beyond are clear)."""
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
def spawn(s: Any, i: int) -> None:
    """An enemy and a diver spawn when their timers run out (each timer restarts). Step
    words 1-5 are drawn whether used or not (words 1-3 an enemy's, 4-5 a diver's), so the
    stream moves past all five and a spawn reads its words where they stand."""
    first = s.rng_counter[i]
    if s.e_spawn_timer[i] == 0:
        s.e_spawn_timer[i] = s.e_spawn_speed[i]
        spawn_enemy(s, i)  # words 1-3
    if s.d_spawn_timer[i] == 0:
        s.d_spawn_timer[i] = DIVER_SPAWN_SPEED
        s.rng_counter[i] = first + _U3
        spawn_diver(s, i)  # words 4-5
    s.rng_counter[i] = first + _U5


@perenv.rule
def spawn_enemy(s: Any, i: int) -> None:
    """An enemy spawns (its timer restarted): from the left edge heading right (``rand() <
    1/2``) or the right edge heading left, a sub (``rand() < 1/3``) or a fish, in row
    ``randint(1, 9)``, in the first free slot; lost if an enemy in that row heads the
    other way. It moves at the current move interval; a sub first shoots after 10
    steps."""
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
    s.en[0, free, i] = 0 if right else LAST
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
def spawn_diver(s: Any, i: int) -> None:
    """A diver spawns (its timer restarted): the newer diver (slot 1), from the left edge
    heading right (``rand() < 1/2``) or the right edge heading left, in row ``randint(1,
    9)``; the diver in slot 1, if any, becomes the older (slot 0)."""
    right = perenv.random(s, i) < 1 / 2
    row = perenv.integers(s, i, SPAWN_ROWS[0], SPAWN_ROWS[1])
    if s.dv_alive[1, i]:  # _push
        for f in range(len(_DV_FIELDS)):
            s.dv[f, 0, i] = s.dv[f, 1, i]
        s.dv_alive[0, i] = True
    s.dv_alive[1, i] = True
    s.dv[0, 1, i] = 0 if right else LAST
    s.dv[1, 1, i] = row
    s.dv[2, 1, i] = 1 if right else -1
    s.dv[3, 1, i] = DIVER_MOVE_INTERVAL


@perenv.rule
def resolve_action(s: Any, i: int, a: int) -> None:
    """``f`` with the gun cooled down fires a bullet from the submarine's cell, heading
    its way (the newer bullet, slot 1); ``l``/``r`` move a column and turn that way,
    ``u``/``d`` a row (rows 0-8)."""
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
    s.sub_x[i] = min(max(s.sub_x[i] + _MOVE[0, a], 0), LAST)
    s.sub_y[i] = min(max(s.sub_y[i] + _MOVE[1, a], 0), DEEPEST)
    if _TURN[a] != 0:
        s.sub_dx[i] = _TURN[a]


@perenv.rule
def enemy_key(s: Any, i: int, j: int) -> np.int64:
    """The hit order of enemy slot ``j``: spawn order, every fish before every sub
    (the key of :func:`move_friendly_bullets` and :func:`capture_bullets`)."""
    return np.int64(s.en_stamp[j, i]) + (_SUB_KEY if s.en_sub[j, i] else np.int64(0))


@perenv.rule
def move_friendly_bullets(s: Any, i: int) -> int:
    """Each friendly bullet moves a column (dead ones drift too: nothing reads them); off
    the board it is gone; then, the newer first, it destroys the first enemy in its cell
    (the oldest fish, else the oldest sub) and disappears. Returns the enemies destroyed
    (+1 each)."""
    for b in range(2):
        s.fb[0, b, i] += s.fb[2, b, i]
        x = s.fb[0, b, i]
        if x < 0 or x > LAST:
            s.fb_alive[b, i] = False
    points = 0
    for b in (1, 0):
        if not s.fb_alive[b, i]:
            continue
        x, y = s.fb[0, b, i], s.fb[1, b, i]
        victim, best = -1, np.int64(0)
        for j in range(s.en_slots[i]):
            if s.en_alive[j, i] and s.en[0, j, i] == x and s.en[1, j, i] == y:
                key = enemy_key(s, i, j)
                if victim < 0 or key < best:
                    victim, best = j, key
        if victim >= 0:
            s.en_alive[victim, i] = False
            s.fb_alive[b, i] = False
            points += 1
    return points


@perenv.rule
def move_divers(s: Any, i: int) -> None:
    """Each diver, the newer first: in the submarine's cell with room on board (fewer than
    6 divers) it is picked up; else when its move timer runs out it moves a column
    (leaving the board, or being picked up if it lands on the submarine with room), and
    its timer restarts at 5; else its timer counts down."""
    for slot in (1, 0):
        alive = s.dv_alive[slot, i]
        x = s.dv[0, slot, i]
        timer = s.dv[3, slot, i]
        on_sub = s.dv[1, slot, i] == s.sub_y[i] and s.diver_count[i] < MAX_DIVERS
        picked = alive and on_sub and x == s.sub_x[i]
        s.dv[3, slot, i] = timer - 1  # (dead divers' timers drift: nothing reads them)
        gone = False
        if alive and not picked and timer == 0:  # it moves
            s.dv[3, slot, i] = DIVER_MOVE_INTERVAL
            s.dv[0, slot, i] += s.dv[2, slot, i]
            x = s.dv[0, slot, i]
            gone = x < 0 or x > LAST
            picked = on_sub and x == s.sub_x[i]
        if picked or gone:
            s.dv_alive[slot, i] = False
        if picked:
            s.diver_count[i] += 1


@perenv.rule
def move_enemies(s: Any, i: int) -> tuple[np.int64, np.int64, bool]:
    """An enemy in the submarine's cell, or moving onto it, ends the episode; an enemy
    whose move timer ran out moves a column (its timer restarts at the move interval; off
    the board it is gone), the others count down. Returns the masks (bit j: slot j) of
    the enemies alive before the move (subs among them may fire) and of those that moved
    within the board, not onto the submarine (they may run into a bullet), and whether
    the episode ends."""
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
        if x < 0 or x > LAST:  # gone
            s.en_alive[j, i] = False
        elif on_row and x == s.sub_x[i]:  # landed on the submarine
            caught = True
        else:
            moved |= _ONE64 << j
    return before, moved, caught


@perenv.rule
def capture_bullets(s: Any, i: int, moved: np.int64) -> int:
    """An enemy that moved into a friendly bullet's cell destroys it and is destroyed.
    MinAtar goes through the subs (newest first), then the fish (newest first), each
    taking the first (older) bullet in its cell: so the older bullet goes to the first
    enemy in that order that moved into its cell (``moved``: the slots' mask), the newer
    one to the first other. Returns the enemies destroyed (+1 each)."""
    points = 0
    for b in range(2):
        if not s.fb_alive[b, i]:
            continue
        x, y = s.fb[0, b, i], s.fb[1, b, i]
        taker, best = -1, np.int64(0)
        for j in range(s.en_slots[i]):
            if (moved >> j) & _ONE64 != 0 and s.en_alive[j, i] and s.en[0, j, i] == x \
                    and s.en[1, j, i] == y:
                key = enemy_key(s, i, j)
                if taker < 0 or key > best:
                    taker, best = j, key
        if taker >= 0:
            s.en_alive[taker, i] = False
            s.fb_alive[b, i] = False
            points += 1
    return points


@perenv.rule
def enemy_subs_fire(s: Any, i: int, before: np.int64) -> None:
    """Each sub alive before the move (``before``: the slots' mask; even one shot or gone
    since) whose shot timer ran out fires from its cell, its way (off the board: the
    bullet is gone at once), and its timer restarts at 10; the others count down."""
    for j in range(s.en_slots[i]):
        if (before >> j) & _ONE64 == 0 or not s.en_sub[j, i]:
            continue
        if s.en[4, j, i] != 0:
            s.en[4, j, i] -= 1
            continue
        s.en[4, j, i] = ENEMY_SHOT_INTERVAL
        x, y = s.en[0, j, i], s.en[1, j, i]
        if 0 <= x <= LAST:
            if s.en[2, j, i] > 0:
                s.eb_right[y, i] |= _BIT[x]
            else:
                s.eb_left[y, i] |= _BIT[x]


@perenv.rule
def move_enemy_bullets(s: Any, i: int) -> bool:
    """Whether an enemy bullet is in the submarine's cell or about to move into it (the
    episode ends); then every enemy bullet moves a column its way, leaving the board at
    its sides."""
    x, y = s.sub_x[i], s.sub_y[i]
    hit = (s.eb_left[y, i] & _REACH[0, x]) | (s.eb_right[y, i] & _REACH[1, x]) != 0
    for row in range(GRID):
        s.eb_left[row, i] >>= 1
        s.eb_right[row, i] = (s.eb_right[row, i] << 1) & _ROW_MASK
    return hit


@perenv.rule
def count_down_timers(s: Any, i: int) -> None:
    """The gun's cool-down and the spawn timers count down to 0."""
    if s.shot_timer[i] > 0:
        s.shot_timer[i] -= 1
    if s.e_spawn_timer[i] > 0:
        s.e_spawn_timer[i] -= 1
    if s.d_spawn_timer[i] > 0:
        s.d_spawn_timer[i] -= 1


@perenv.rule
def breathe(p: Any, s: Any, i: int) -> tuple[int, bool]:
    """No oxygen left ends the episode. Under water the submarine uses a unit of oxygen.
    Reaching the surface (the first step there) with no diver ends the episode; else it
    refills the oxygen, pays ``oxygen * 10 // 200`` if 6 divers were on board (and sets
    the count to 0), then takes a diver, and ramps the difficulty (enemies spawn a step
    sooner, and every second time also move a step sooner). Returns the surfacing bonus
    and whether the episode ends."""
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
def draw_gauges(s: Any, i: int, obs: np.ndarray) -> None:
    """Row 9: the oxygen bar (a cell per 20 units, from column 0) and the diver bar (a
    cell per diver on board, from column 8 leftwards)."""
    level = max(s.oxygen[i], 0) // _OXYGEN_PER_CELL
    first_diver = LAST - max(s.diver_count[i], 0)
    for x in range(GRID):
        obs[LAST, x, OXYGEN_GAUGE] = x < level
        obs[LAST, x, DIVER_GAUGE] = first_diver <= x < LAST


@perenv.rule
def draw_swimmer(obs: np.ndarray, x: int, y: int, dx: int, channel: int) -> None:
    """An enemy or a diver: its cell, and the cell behind it (its trail) if on the
    board."""
    obs[y, x, channel] = True
    behind = x - dx
    if 0 <= behind <= LAST:
        obs[y, behind, TRAIL] = True
