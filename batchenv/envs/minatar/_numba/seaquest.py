"""BatchSeaquest's rules as compiled loops over the envs (the numba layer: see
:mod:`batchenv.envs.minatar._numba`). Each step follows ``seaquest.py``'s numpy kernels
decision for decision, per env, in their order: ``spawn_enemies`` (:func:`_spawn_enemy`),
``spawn_divers`` (:func:`_spawn_diver`), ``resolve_action``, ``move_friendly_bullets``,
``move_divers``, ``move_enemies``, ``capture_bullets``, ``enemy_subs_fire``,
``move_enemy_bullets``, ``count_down_timers`` (:func:`_count_down`) and ``breathe``, each
helper named as its kernel with a leading underscore unless named here; :func:`_reset` is
``start_games``, :func:`_observe` is ``BatchSeaquest.observe``.

The loops read and write the state's slot-major blocks (``seaquest.Slots``: ``fb``
``(3, 2, n)``, ``dv`` ``(4, 2, n)``, ``en`` ``(5, ENEMY_SLOTS, n)``, ...) in place. An
env's enemy slots from ``en_slots`` on are clear (the state's invariant) and a clear slot
changes nothing, so a loop visits an env's ``en_slots`` slots, or the slots any env uses.
Within a step, the enemies alive before the move and those that moved are bit masks over
the slots (``ENEMY_SLOTS`` <= 63; an int64 per env, scratch kept with the state:
:func:`_masks`). Values that the numpy kernels let drift in dead slots (a dead bullet's
column, a dead diver's timer, int8 arithmetic wrapping) drift here the same way: the state
is compared whole.

How the loops are made fast: a step is a few passes over the envs, each a group of rules,
rather than one (one env's slot-major rows are ``n`` bytes apart: at 4096 envs they all
fall in one set of the L1 cache, and a pass touches few of them); the enemies move and
fire slot by slot over every env (a slot's row is contiguous: crowded games stay fast);
decisions whose outcome is as good as random (timers running out, the heading, an enemy's
move) are written without branches; the spawns' step words are counted at once and
computed only when a spawn uses them; and the loops are compiled without reference
counting (:data:`jit`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from batchenv.envs.minatar._base import FIRE, GRID
from batchenv.envs.minatar._numba import (
    GOLDEN,
    cell,
    flat_cells,
    game_action,
    jit_borrowing,
    mix,
    randint,
    sticky_limit,
)
from batchenv.envs.minatar.seaquest import (
    _CHANNELS,
    _MOVE,
    _REACH,
    _ROW_BITS,
    _TURN,
    DEEPEST,
    DIVER,
    DIVER_GAUGE,
    DIVER_MOVE_INTERVAL,
    DIVER_SPAWN_SPEED,
    ENEMY_BULLET,
    ENEMY_FISH,
    ENEMY_SHOT_INTERVAL,
    ENEMY_SLOTS,
    FASTEST_MOVE,
    FASTEST_SPAWN,
    FRIENDLY_BULLET,
    INIT_MOVE_INTERVAL,
    INIT_SPAWN_SPEED,
    MAX_DIVERS,
    MAX_OXYGEN,
    OXYGEN_GAUGE,
    SHOT_COOL_DOWN,
    SPAWN_ROWS,
    SUB_BACK,
    SUB_FRONT,
    SUB_START_X,
    SUB_START_Y,
    TRAIL,
    BatchSeaquest,
)
from batchenv.random import BatchRandom

assert ENEMY_SLOTS <= 63  # the slot masks are int64

_LAST = GRID - 1  # the last row and column of the board
_LOW_ROW, _HIGH_ROW = SPAWN_ROWS
_HALF, _ = sticky_limit(1 / 2)  # rand() < 1/2: word < _HALF (the side of a spawn)
_THIRD, _ = sticky_limit(1 / 3)  # rand() < 1/3: a sub
_SUB_KEY = np.int64(1) << np.int64(32)  # an enemy's hit-order key: a sub's above any fish's
_ROW_MASK = np.uint16(_ROW_BITS)
_OXYGEN_PER_CELL = MAX_OXYGEN // GRID
_SPAWN_WORDS = np.uint64(BatchSeaquest.step_words - 1)  # step words 1-5: the spawns'

#: The decorator of this module's loops: ``_numba.jit_borrowing``, numba without reference
#: counting. The rule helpers below take the state's arrays as arguments; inlined into a
#: loop, each call with branches would otherwise count references to every array it takes
#: (an atomic increment and decrement per array, per env), which numba's pruning pass
#: leaves in place. The loops allocate nothing and only borrow their caller's arrays.
jit = jit_borrowing


def step_envs(env: Any, s: Any, action: np.ndarray, rng: BatchRandom
              ) -> tuple[np.ndarray, np.ndarray]:
    """``BatchSeaquest.step_envs``, compiled."""
    limit, always = _sticky(env.sticky_action_prob)
    reward, terminated = env.reward_buffer, env.terminated_buffer
    crowded = _step(action, env.action_set, limit, always, env.difficulty_ramping,
                    s.last_action, s.rng_key, s.rng_counter, s.awaiting_reset, *_game(s),
                    *_masks(s), reward, terminated)
    if crowded >= 0:
        raise RuntimeError(f"BatchSeaquest: more than {ENEMY_SLOTS} enemies in envs "
                           f"{[int(crowded)]} (ENEMY_SLOTS is too small)")
    return reward, terminated


def reset_rows(env: Any, s: Any, rows: np.ndarray | slice, rng: BatchRandom) -> None:
    """``BatchSeaquest.reset_rows`` (``start_games``), compiled; draws nothing."""
    if isinstance(rows, slice):
        rows = np.arange(len(s))[rows]
    _reset(rows, *_game(s))


def observe(env: Any, s: Any, out: np.ndarray) -> None:
    """``BatchSeaquest.observe``, compiled: writes every cell of ``out``."""
    _observe(*_game(s), flat_cells(out))


def _game(s: Any) -> tuple[np.ndarray, ...]:
    """The game's arrays of state ``s`` as the loops take them (fields, then the slot
    blocks of ``BatchSeaquest.slots``): made once per state object and kept on it, as
    the slots are (a copy or an unpickled state makes its own)."""
    arrays = s.__dict__.get("_seaquest_numba")
    if arrays is None:
        e = BatchSeaquest.slots(s)
        arrays = (s.sub_x, s.sub_y, s.sub_dx, s.shot_timer, s.e_spawn_timer, s.d_spawn_timer,
                  s.e_spawn_speed, s.move_speed, s.ramp_index, s.en_slots, s.surface,
                  s.oxygen, s.diver_count, s.spawn_count, e.fb, e.dv, e.fb_alive,
                  e.dv_alive, e.en, e.en_sub, e.en_alive, e.en_stamp, e.eb_left, e.eb_right)
        s._seaquest_numba = arrays
    return arrays


def _masks(s: Any) -> tuple[np.ndarray, np.ndarray]:
    """Scratch for a step of ``s``'s envs: two int64 masks over the enemy slots per env
    (``_move_enemies``' ``before`` and ``moved``), kept on ``s`` as :func:`_game`."""
    masks = s.__dict__.get("_seaquest_masks")
    if masks is None:
        masks = s._seaquest_masks = (np.zeros(len(s), dtype=np.int64),
                                     np.zeros(len(s), dtype=np.int64))
    return masks


_STICKY: dict[float, tuple[np.uint64, bool]] = {}


def _sticky(p: float) -> tuple[np.uint64, bool]:
    """:func:`sticky_limit` of ``p``, computed once per probability."""
    limit = _STICKY.get(p)
    if limit is None:
        limit = _STICKY[p] = sticky_limit(p)
    return limit


# ---------------------------------------------------------------- the step
@jit
def _step(action, action_set, limit, always, ramping, last_action, key, counter, awaiting,
          sub_x, sub_y, sub_dx, shot_timer, e_spawn_timer, d_spawn_timer, e_spawn_speed,
          move_speed, ramp_index, en_slots, surface, oxygen, diver_count, spawn_count,
          fb, dv, fb_alive, dv_alive, en, en_sub, en_alive, en_stamp, eb_left, eb_right,
          before, moved, reward, terminated):  # pragma: no cover (compiled)
    """Steps every env not awaiting a reset (a discarded step: no draw, no change, as
    ``MinAtarEnv.discarded_rows``); returns -1, or the first env that had no free enemy
    slot for a spawn (then stops). One pass over the envs per group of rules, in the
    numpy kernels' order (see the module's docstring)."""
    n = len(action)
    en_x, en_y, en_dx, en_timer, en_shot = en[0], en[1], en[2], en[3], en[4]
    for i in range(n):
        reward[i] = 0.0
        terminated[i] = False
        if awaiting[i]:
            continue
        a = game_action(i, action, action_set, last_action, key, counter, limit, always)
        # step words 1-5 are drawn whether used or not: their counter moves on at once,
        # and a word is computed (_word_at) only when a spawn uses it
        first = counter[i]
        counter[i] = first + _SPAWN_WORDS
        if e_spawn_timer[i] == 0:
            e_spawn_timer[i] = e_spawn_speed[i]
            if not _spawn_enemy(i, _word_at(key, i, first, 0), _word_at(key, i, first, 1),
                                _word_at(key, i, first, 2), move_speed, en_slots,
                                spawn_count, en_x, en_y, en_dx, en_timer, en_shot, en_sub,
                                en_alive, en_stamp):
                return i
        if d_spawn_timer[i] == 0:
            d_spawn_timer[i] = DIVER_SPAWN_SPEED
            _spawn_diver(i, _word_at(key, i, first, 3), _word_at(key, i, first, 4), dv,
                         dv_alive)
        _resolve_action(i, a, sub_x, sub_y, sub_dx, shot_timer, fb, fb_alive)
    for i in range(n):
        if not awaiting[i]:
            reward[i] += _move_friendly_bullets(i, en_slots[i], fb, fb_alive, en_x, en_y,
                                                en_sub, en_alive, en_stamp)
    for i in range(n):
        if not awaiting[i]:
            _move_divers(i, sub_x, sub_y, diver_count, dv, dv_alive)
    used = 0  # the enemy slots any env uses (the slots beyond are clear everywhere)
    for i in range(n):
        used = max(used, en_slots[i])
    _move_enemies(used, awaiting, sub_x, sub_y, move_speed, en_x, en_y, en_dx, en_timer,
                  en_alive, before, moved, terminated)
    for i in range(n):
        if moved[i]:
            reward[i] += _capture_bullets(i, en_slots[i], moved[i], fb, fb_alive, en_x, en_y,
                                          en_sub, en_alive, en_stamp)
    _enemy_subs_fire(used, before, en_x, en_y, en_dx, en_shot, en_sub, eb_left, eb_right)
    _move_enemy_bullets(awaiting, sub_x, sub_y, eb_left, eb_right, terminated)
    for i in range(n):
        if awaiting[i]:
            continue
        _count_down(i, shot_timer)
        _count_down(i, e_spawn_timer)
        _count_down(i, d_spawn_timer)
        bonus, drowned = _breathe(i, ramping, sub_y, surface, oxygen, diver_count,
                                  move_speed, e_spawn_speed, ramp_index)
        reward[i] += bonus
        terminated[i] |= drowned
    return -1


@njit(inline="always")
def _word_at(key, i, first, k):  # pragma: no cover (compiled)
    """Word ``first + k`` of row ``i``'s stream (``next_word`` at that counter)."""
    return mix(key[i] + (first + np.uint64(k)) * GOLDEN)


@njit(inline="always")
def _push(i, fields, alive):  # pragma: no cover (compiled)
    """Make room for a new entity in a two-slot list kept in order (``seaquest._push``):
    slot 1's entity, if alive, moves to slot 0; slot 1 is then the new one's (alive), its
    fields for the caller to write. ``fields``: the kind's ``(fields, 2, n)`` block."""
    if alive[1, i]:
        for f in range(fields.shape[0]):
            fields[f, 0, i] = fields[f, 1, i]
        alive[0, i] = True
    alive[1, i] = True


@njit(inline="always")
def _spawn_enemy(i, side_word, kind_word, row_word, move_speed, en_slots, spawn_count, en_x,
                 en_y, en_dx, en_timer, en_shot, en_sub, en_alive, en_stamp
                 ):  # pragma: no cover (compiled)
    """``spawn_enemies`` for env ``i`` (its timer already restarted): from the left edge
    heading right (``rand() < 1/2``) or the right edge heading left, a sub (``rand() <
    1/3``) or a fish, in row ``randint(1, 9)``, in the first free slot; lost if an enemy
    in that row heads the other way. False if no slot is free."""
    right = side_word < _HALF
    dx = 1 if right else -1
    row = randint(row_word, _LOW_ROW, _HIGH_ROW)
    used = en_slots[i]
    free = -1
    for j in range(min(used + 1, ENEMY_SLOTS)):
        if en_alive[j, i]:
            if en_y[j, i] == row and en_dx[j, i] != dx:
                return True  # blocked: the spawn is lost
        elif free < 0:
            free = j
    if free < 0:
        return False
    en_x[free, i] = 0 if right else _LAST
    en_y[free, i] = row
    en_dx[free, i] = dx
    en_timer[free, i] = move_speed[i]
    en_shot[free, i] = ENEMY_SHOT_INTERVAL
    en_sub[free, i] = kind_word < _THIRD
    en_alive[free, i] = True
    en_stamp[free, i] = spawn_count[i]
    spawn_count[i] += 1
    en_slots[i] = max(used, free + 1)
    return True


@njit(inline="always")
def _spawn_diver(i, side_word, row_word, dv, dv_alive):  # pragma: no cover (compiled)
    """``spawn_divers`` for env ``i`` (its timer already restarted): the newer diver
    (slot 1), from the left edge heading right (``rand() < 1/2``) or the right edge
    heading left, in row ``randint(1, 9)``."""
    right = side_word < _HALF
    _push(i, dv, dv_alive)
    dv[0, 1, i] = 0 if right else _LAST
    dv[1, 1, i] = randint(row_word, _LOW_ROW, _HIGH_ROW)
    dv[2, 1, i] = 1 if right else -1
    dv[3, 1, i] = DIVER_MOVE_INTERVAL


@njit(inline="always")
def _resolve_action(i, a, sub_x, sub_y, sub_dx, shot_timer, fb, fb_alive
                    ):  # pragma: no cover (compiled)
    """``resolve_action`` for env ``i``: fire (a newer bullet from the submarine's cell,
    its way) if the gun has cooled down; move within columns 0-9 and rows 0-8; turn."""
    if a == FIRE and shot_timer[i] == 0:
        shot_timer[i] = SHOT_COOL_DOWN
        _push(i, fb, fb_alive)
        fb[0, 1, i] = sub_x[i]
        fb[1, 1, i] = sub_y[i]
        fb[2, 1, i] = sub_dx[i]
    sub_x[i] = min(max(sub_x[i] + _MOVE[0, a], 0), _LAST)
    sub_y[i] = min(max(sub_y[i] + _MOVE[1, a], 0), DEEPEST)
    turn = _TURN[a]
    sub_dx[i] = turn if turn != 0 else sub_dx[i]


@njit(inline="always")
def _enemy_key(i, j, en_sub, en_stamp):  # pragma: no cover (compiled)
    """The hit order of enemy slot ``j``: spawn order, every fish before every sub."""
    return np.int64(en_stamp[j, i]) + (_SUB_KEY if en_sub[j, i] else np.int64(0))


@njit(inline="always")
def _move_friendly_bullets(i, used, fb, fb_alive, en_x, en_y, en_sub, en_alive, en_stamp
                           ):  # pragma: no cover (compiled)
    """``move_friendly_bullets`` for env ``i``: each bullet moves (dead ones drift too);
    off the board it is gone; then, the newer first, it destroys the first enemy in its
    cell (the oldest fish, else the oldest sub). Returns the enemies destroyed."""
    for b in range(2):
        fb[0, b, i] += fb[2, b, i]
        x = fb[0, b, i]
        fb_alive[b, i] &= (x >= 0) & (x <= _LAST)
    points = 0
    for b in (1, 0):
        if not fb_alive[b, i]:
            continue
        x, y = fb[0, b, i], fb[1, b, i]
        victim, best = -1, np.int64(0)
        for j in range(used):
            if en_alive[j, i] & (en_x[j, i] == x) & (en_y[j, i] == y):
                k = _enemy_key(i, j, en_sub, en_stamp)
                if victim < 0 or k < best:
                    victim, best = j, k
        if victim >= 0:
            en_alive[victim, i] = False
            fb_alive[b, i] = False
            points += 1
    return points


@njit(inline="always")
def _move_divers(i, sub_x, sub_y, diver_count, dv, dv_alive):  # pragma: no cover
    """``move_divers`` for env ``i``: each diver, the newer first, is picked up in the
    submarine's cell (room on board), else moves when its timer runs out (off the board
    it is gone; onto the submarine, with room, it is picked up), else counts down."""
    for slot in (1, 0):
        alive = dv_alive[slot, i]
        x = dv[0, slot, i]
        timer = dv[3, slot, i]
        on_sub = (dv[1, slot, i] == sub_y[i]) & (diver_count[i] < MAX_DIVERS)
        picked = alive & on_sub & (x == sub_x[i])
        moving = alive & (not picked) & (timer == 0)
        dv[3, slot, i] = timer - 1  # (dead divers' timers drift, as in the numpy kernel)
        gone = False
        if moving:
            dv[3, slot, i] = DIVER_MOVE_INTERVAL
            dv[0, slot, i] += dv[2, slot, i]
            x = dv[0, slot, i]
            gone = x < 0 or x > _LAST
            picked = on_sub and x == sub_x[i]
        if picked or gone:
            dv_alive[slot, i] = False
        if picked:
            diver_count[i] += 1


@njit(inline="always")
def _move_enemies(used, awaiting, sub_x, sub_y, move_speed, en_x, en_y, en_dx, en_timer,
                  en_alive, before, moved, terminated):  # pragma: no cover (compiled)
    """``move_enemies``, slot by slot over every env (a slot's rows are contiguous; a
    clear slot, or an env awaiting a reset, changes nothing): an enemy in the submarine's
    cell, or moving onto it, ends the episode; a due enemy moves (its timer restarts; off
    the board it is gone), the others count down. Writes ``before`` and ``moved``, each
    env's masks of the enemies alive before the move and of those that moved within the
    board, not onto the submarine. No branch: who is alive and due is as good as
    random."""
    n = len(awaiting)
    for i in range(n):
        before[i] = moved[i] = 0
    for j in range(used):
        xs, ys, dxs, timers, alives = en_x[j], en_y[j], en_dx[j], en_timer[j], en_alive[j]
        for i in range(n):
            alive = alives[i] & (not awaiting[i])
            due = alive & (timers[i] == 0)
            on_row = ys[i] == sub_y[i]
            caught = alive & on_row & (xs[i] == sub_x[i])
            timers[i] = move_speed[i] if due else timers[i] - alive
            xs[i] += dxs[i] * due
            x = xs[i]
            gone = due & ((x < 0) | (x > _LAST))
            landed = due & on_row & (x == sub_x[i])  # (off the board: never the sub's cell)
            terminated[i] |= caught | landed
            alives[i] &= not gone
            before[i] |= np.int64(alive) << j
            moved[i] |= np.int64(due & (not gone) & (not landed)) << j


@njit(inline="always")
def _capture_bullets(i, used, moved, fb, fb_alive, en_x, en_y, en_sub, en_alive, en_stamp
                     ):  # pragma: no cover (compiled)
    """``capture_bullets`` for env ``i``: the older bullet first, each goes to the last
    enemy in MinAtar's order (subs, then fish, newest first) that moved into its cell.
    Returns the enemies destroyed."""
    points = 0
    for b in range(2):
        if not fb_alive[b, i]:
            continue
        x, y = fb[0, b, i], fb[1, b, i]
        taker, best = -1, np.int64(0)
        for j in range(used):
            if ((moved >> j) & 1 != 0) & en_alive[j, i] & (en_x[j, i] == x) \
                    & (en_y[j, i] == y):
                k = _enemy_key(i, j, en_sub, en_stamp)
                if taker < 0 or k > best:
                    taker, best = j, k
        if taker >= 0:
            en_alive[taker, i] = False
            fb_alive[b, i] = False
            points += 1
    return points


@njit(inline="always")
def _enemy_subs_fire(used, before, en_x, en_y, en_dx, en_shot, en_sub, eb_left, eb_right
                     ):  # pragma: no cover (compiled)
    """``enemy_subs_fire``, slot by slot over every env: each sub alive before the move
    whose shot timer ran out fires from its cell, its way (off the board: the bullet is
    gone at once), and its timer restarts; the others count down."""
    n = len(before)
    for j in range(used):
        xs, ys, dxs, shots, subs = en_x[j], en_y[j], en_dx[j], en_shot[j], en_sub[j]
        for i in range(n):
            armed = ((before[i] >> j) & 1 != 0) & subs[i]  # a sub alive before the move
            if not (armed & (shots[i] == 0)):
                shots[i] -= armed
                continue
            shots[i] = ENEMY_SHOT_INTERVAL
            x = xs[i]
            if 0 <= x <= _LAST:
                bit = np.uint16(1 << x)
                if dxs[i] > 0:
                    eb_right[ys[i], i] |= bit
                else:
                    eb_left[ys[i], i] |= bit


@njit(inline="always")
def _move_enemy_bullets(awaiting, sub_x, sub_y, eb_left, eb_right, terminated
                        ):  # pragma: no cover (compiled)
    """``move_enemy_bullets``: a bullet in the submarine's cell, or about to move into it,
    ends the episode; then every bullet moves a column its way (board row by board row:
    contiguous)."""
    n = len(awaiting)
    for i in range(n):
        x, y = sub_x[i], sub_y[i]
        if (eb_left[y, i] & _REACH[0, x]) | (eb_right[y, i] & _REACH[1, x]) != 0:
            terminated[i] |= not awaiting[i]
    for row in range(GRID):
        left, right = eb_left[row], eb_right[row]
        for i in range(n):
            stay = awaiting[i]
            left[i] = left[i] if stay else left[i] >> 1
            right[i] = right[i] if stay else (right[i] << 1) & _ROW_MASK


@njit(inline="always")
def _count_down(i, timer):  # pragma: no cover (compiled)
    """``count_down_timers``: a timer counts down to 0."""
    timer[i] -= timer[i] > 0  # (no branch: the timers run out at random steps)


@njit(inline="always")
def _breathe(i, ramping, sub_y, surface, oxygen, diver_count, move_speed, e_spawn_speed,
             ramp_index):  # pragma: no cover (compiled)
    """``breathe`` for env ``i``. Returns the surfacing bonus and whether the episode
    ends (no oxygen left, or surfacing with no diver)."""
    drowned = oxygen[i] <= 0
    under = sub_y[i] > 0
    oxygen[i] -= under
    arriving = not (under | surface[i])
    surface[i] = surface[i] & (not under)
    bonus = 0
    if not arriving:
        return bonus, drowned
    count = diver_count[i]
    if count == 0:
        return bonus, True
    surface[i] = True
    if count == MAX_DIVERS:
        bonus = oxygen[i] * 10 // MAX_OXYGEN
        count = 0
    oxygen[i] = MAX_OXYGEN
    diver_count[i] = count - 1
    if ramping:
        move, spawn = move_speed[i], e_spawn_speed[i]
        if spawn > FASTEST_SPAWN or move > FASTEST_MOVE:
            if move > FASTEST_MOVE and ramp_index[i] % 2 == 1:
                move_speed[i] = move - 1
            if spawn > FASTEST_SPAWN:
                e_spawn_speed[i] = spawn - 1
            ramp_index[i] += 1
    return bonus, drowned


# ---------------------------------------------------------------- reset
@jit
def _reset(rows, sub_x, sub_y, sub_dx, shot_timer, e_spawn_timer, d_spawn_timer,
           e_spawn_speed, move_speed, ramp_index, en_slots, surface, oxygen, diver_count,
           spawn_count, fb, dv, fb_alive, dv_alive, en, en_sub, en_alive, en_stamp, eb_left,
           eb_right):  # pragma: no cover (compiled)
    for i in rows:
        sub_x[i] = SUB_START_X
        sub_y[i] = SUB_START_Y
        sub_dx[i] = -1
        surface[i] = True
        shot_timer[i] = 0
        e_spawn_speed[i] = e_spawn_timer[i] = INIT_SPAWN_SPEED
        d_spawn_timer[i] = DIVER_SPAWN_SPEED
        move_speed[i] = INIT_MOVE_INTERVAL
        ramp_index[i] = 0
        oxygen[i] = MAX_OXYGEN
        diver_count[i] = spawn_count[i] = 0
        for b in range(2):
            for f in range(fb.shape[0]):
                fb[f, b, i] = 0
            for f in range(dv.shape[0]):
                dv[f, b, i] = 0
            fb_alive[b, i] = dv_alive[b, i] = False
        for j in range(en_slots[i]):  # (the slots beyond are clear)
            for f in range(en.shape[0]):
                en[f, j, i] = 0
            en_sub[j, i] = en_alive[j, i] = False
            en_stamp[j, i] = 0
        en_slots[i] = 0
        for row in range(GRID):
            eb_left[row, i] = eb_right[row, i] = 0


# ---------------------------------------------------------------- the observation
@jit
def _observe(sub_x, sub_y, sub_dx, shot_timer, e_spawn_timer, d_spawn_timer, e_spawn_speed,
             move_speed, ramp_index, en_slots, surface, oxygen, diver_count, spawn_count,
             fb, dv, fb_alive, dv_alive, en, en_sub, en_alive, en_stamp, eb_left, eb_right,
             out):  # pragma: no cover (compiled)
    n = len(sub_x)
    size = GRID * GRID * _CHANNELS
    for i in range(n):
        # an env's cells cleared, then painted while they are in the L1 cache
        out[i * size:(i + 1) * size] = False
        _draw_gauges(i, oxygen, diver_count, out)
        x, y = sub_x[i], sub_y[i]
        out[cell(i, y, x, SUB_FRONT, _CHANNELS)] = True
        out[cell(i, y, x - sub_dx[i], SUB_BACK, _CHANNELS)] = True
        for b in range(2):
            if fb_alive[b, i]:
                out[cell(i, fb[1, b, i], fb[0, b, i], FRIENDLY_BULLET, _CHANNELS)] = True
            if dv_alive[b, i]:
                _draw_swimmer(i, dv[0, b, i], dv[1, b, i], dv[2, b, i], DIVER, out)
        for j in range(en_slots[i]):
            if en_alive[j, i]:
                _draw_swimmer(i, en[0, j, i], en[1, j, i], en[2, j, i],
                              ENEMY_FISH + en_sub[j, i], out)
    for row in range(GRID):  # the enemy bullets (few), board row by board row
        left, right = eb_left[row], eb_right[row]
        for i in range(n):
            bullets = left[i] | right[i]
            column = 0
            while bullets:
                if bullets & 1:
                    out[cell(i, row, column, ENEMY_BULLET, _CHANNELS)] = True
                bullets >>= 1
                column += 1


@njit(inline="always")
def _draw_gauges(i, oxygen, diver_count, out):  # pragma: no cover (compiled)
    """Row 9: the oxygen bar (a cell per 20 units, from column 0) and the diver bar (a
    cell per diver on board, from column 8 leftwards), every cell written."""
    level = max(oxygen[i], 0) // _OXYGEN_PER_CELL
    first_diver = _LAST - max(diver_count[i], 0)
    for x in range(GRID):
        out[cell(i, _LAST, x, OXYGEN_GAUGE, _CHANNELS)] = x < level
        out[cell(i, _LAST, x, DIVER_GAUGE, _CHANNELS)] = first_diver <= x < _LAST


@njit(inline="always")
def _draw_swimmer(i, x, y, dx, channel, out):  # pragma: no cover (compiled)
    """An enemy or a diver: its cell, and the cell behind it (its trail) if on the
    board."""
    out[cell(i, y, x, channel, _CHANNELS)] = True
    behind = x - dx
    if 0 <= behind <= _LAST:
        out[cell(i, y, behind, TRAIL, _CHANNELS)] = True
