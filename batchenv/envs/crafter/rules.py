"""Crafter's rules for one env (row ``i`` of the state ``s``), as crafter 1.8.3's
``objects.py`` and ``env.py`` have them: the player, cows, zombies, skeletons, arrows,
plants, chunk balancing, daylight, the reward.

Every function is a :func:`~batchenv.perenv.rule` named after the crafter method it is,
in crafter's order of statements and of random draws: each ``self.random.uniform()`` is a
:func:`~batchenv.perenv.random` (``(word >> 11) * 2**-53``), each ``randint(a, b)`` a
:func:`~batchenv.perenv.integers` (``a + word % (b - a)``), drawn only where and when crafter
draws, so that given the same draws a step is crafter's (``tests/crafter_parity.py``).
Directions are ``(dx, dy)`` pairs; facings and arrows store an index into
:data:`~.data.DIR_X`/:data:`~.data.DIR_Y` (left, right, up, down).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from batchenv import perenv
from batchenv.envs.crafter.data import (
    A_DEFEAT_SKELETON,
    A_DEFEAT_ZOMBIE,
    A_EAT_COW,
    A_EAT_PLANT,
    A_WAKE_UP,
    ARROW,
    ARROW_WALKABLE,
    CHUNK,
    COLLECT_ACHIEVEMENT,
    COLLECT_GIVES,
    COLLECT_LEAVES,
    COLLECT_NEEDS,
    COLLECT_NEEDS_AMOUNT,
    COLLECT_PROB,
    COW,
    DIR_X,
    DIR_Y,
    DO,
    DRINK,
    ENERGY,
    FOOD,
    FURNACE,
    GRASS,
    HEALTH,
    IRON_SWORD,
    ITEM_MAX,
    LAVA,
    LENGTH,
    MAKE_ACHIEVEMENT,
    MAKE_GIVES,
    MAKE_NEEDS_FURNACE,
    MAKE_USED_ITEMS,
    MAKE_USES,
    MAKE_WOOD_PICKAXE,
    MOVE_DOWN,
    MOVE_LEFT,
    N_CHUNKS,
    NOOP,
    PATH,
    PLACE_ACHIEVEMENT,
    PLACE_AMOUNT,
    PLACE_MATERIAL,
    PLACE_PLANT,
    PLACE_STONE,
    PLACE_USES,
    PLACE_WHERE,
    PLANT,
    PLAYER_WALKABLE,
    SKELETON,
    SLEEP,
    STONE_SWORD,
    TABLE,
    UPDATE_DISTANCE,
    WALKABLE,
    WATER,
    WOOD_SWORD,
    ZOMBIE,
)
from batchenv.envs.crafter.world import (
    AREA,
    add_object,
    census_column,
    chunk_of,
    compact,
    enter_chunk,
    inside,
    is_free,
    move_object,
    occupant,
    remove_object,
    set_mat,
)

__all__ = ["daylight", "DAYLIGHT", "step_world", "update_player", "update_cow",
           "update_zombie", "update_skeleton", "update_arrow", "update_plant",
           "balance_chunk", "toward"]


def _daylight_table() -> np.ndarray:
    """``Env._update_time``'s daylight at steps 0 to 10,000, computed as crafter computes it
    (numpy's ``cos`` and power on a float64 scalar: the compiled formula could differ in
    the last bit)."""
    out = np.empty(LENGTH + 1)
    for step in range(LENGTH + 1):
        progress = (step / 300) % 1 + 0.3
        out[step] = 1 - np.abs(np.cos(np.pi * progress)) ** 3
    return out


#: Daylight by step (0 night, 1 day; a 300-step cycle starting in the morning)
DAYLIGHT = _daylight_table()


@perenv.rule(inline=False)
def daylight(step: int) -> float:
    """``Env._update_time``: ``1 - |cos(pi * ((step / 300) % 1 + 0.3))| ** 3``; from
    :data:`DAYLIGHT` up to crafter's length, the formula past it."""
    if 0 <= step <= LENGTH:
        return DAYLIGHT[step]
    progress = (step / 300) % 1 + 0.3
    return 1 - abs(math.cos(math.pi * progress)) ** 3


@perenv.rule
def sign(v: int) -> int:
    # (int(...): numpy refuses to subtract its bools, so the Python form would raise)
    return int(v > 0) - int(v < 0)


@perenv.rule
def toward(x: int, y: int, tx: int, ty: int, long_axis: bool) -> tuple[int, int]:
    """``Object.toward``: a unit step from (x, y) toward (tx, ty) along the longer axis
    (``long_axis``) or the shorter one; ``(0, 0)`` when the chosen axis has no offset."""
    ox, oy = tx - x, ty - y
    if (abs(ox) > abs(oy)) if long_axis else (abs(ox) <= abs(oy)):
        return sign(ox), 0
    return 0, sign(oy)


@perenv.rule
def distance_to_player(s: Any, i: int, x: int, y: int) -> int:
    """``Object.distance``: the L1 distance from (x, y) to the player."""
    return abs(np.int64(s.player_x[i]) - x) + abs(np.int64(s.player_y[i]) - y)


@perenv.rule
def hurt(s: Any, i: int, who: int, damage: int) -> None:
    """``obj.health -= damage`` on the object map's entry ``who`` (the player or a slot);
    ``Object.health``'s setter keeps it at 0 or above."""
    if who == 1:
        s.inventory[i, HEALTH] = max(0, s.inventory[i, HEALTH] - damage)
    elif who >= 2:
        k = who - 2
        s.obj_health[i, k] = max(0, s.obj_health[i, k] - damage)


@perenv.rule
def move(s: Any, i: int, k: int, dx: int, dy: int, walkable: np.ndarray) -> bool:
    """``Object.move``: step slot ``k`` by (dx, dy) if the cell is free; True when it was
    free (also for a removed object, which stays where it was: ``World.move`` ignores it)."""
    x, y = np.int64(s.obj_x[i, k]) + dx, np.int64(s.obj_y[i, k]) + dy
    if is_free(s, i, x, y, walkable):
        move_object(s, i, k, x, y)
        return True
    return False


# ----------------------------------------------------------------------------- the player
@perenv.rule(inline=False)
def player_move(s: Any, i: int, d: int) -> None:
    """``Player._move``: face direction ``d``, step if the cell is free (lava too), die on
    lava."""
    s.facing[i] = d
    x, y = np.int64(s.player_x[i]), np.int64(s.player_y[i])
    tx, ty = x + DIR_X[d], y + DIR_Y[d]
    if is_free(s, i, tx, ty, PLAYER_WALKABLE):
        s.occ[i, x, y] = 0
        s.occ[i, tx, ty] = 1
        s.player_x[i] = tx
        s.player_y[i] = ty
        c = chunk_of(tx, ty)
        if c != chunk_of(x, y):
            enter_chunk(s, i, c)
    if s.mat[i, s.player_x[i], s.player_y[i]] == LAVA:
        s.inventory[i, HEALTH] = 0


@perenv.rule(inline=False)
def do_object(s: Any, i: int, k: int) -> None:
    """``Player._do_object`` on slot ``k``: eat a ripe plant, hit a zombie, skeleton or cow
    (1 damage, 2 with a wood sword, 3 stone, 5 iron), eat a cow it kills."""
    damage = 1
    if s.inventory[i, WOOD_SWORD] > 0:
        damage = max(damage, 2)
    if s.inventory[i, STONE_SWORD] > 0:
        damage = max(damage, 3)
    if s.inventory[i, IRON_SWORD] > 0:
        damage = max(damage, 5)
    kind = s.kind[i, k]
    if kind == PLANT:
        if s.obj_timer[i, k] > 300:  # Plant.ripe
            s.obj_timer[i, k] = 0
            s.inventory[i, FOOD] += 4
            s.achievements[i, A_EAT_PLANT] += 1
    elif kind == ZOMBIE or kind == SKELETON or kind == COW:
        health = max(0, s.obj_health[i, k] - damage)
        s.obj_health[i, k] = health
        if health <= 0:
            if kind == ZOMBIE:
                s.achievements[i, A_DEFEAT_ZOMBIE] += 1
            elif kind == SKELETON:
                s.achievements[i, A_DEFEAT_SKELETON] += 1
            else:
                s.inventory[i, FOOD] += 6
                s.achievements[i, A_EAT_COW] += 1
                s.hunger[i] = 0


@perenv.rule(inline=False)
def do_material(s: Any, i: int, x: int, y: int, material: int) -> None:
    """``Player._do_material``: drinking resets thirst; collect the material (``data.yaml``'s
    ``collect``) if the player has what it needs: the cell becomes what it leaves, and with
    the rule's probability (a draw even when it is 1) the item and its achievement."""
    if material == WATER:
        s.thirst[i] = 0
    gives = COLLECT_GIVES[material]
    if gives < 0:
        return
    needs = COLLECT_NEEDS[material]
    if needs >= 0 and s.inventory[i, needs] < COLLECT_NEEDS_AMOUNT[material]:
        return
    set_mat(s, i, x, y, COLLECT_LEAVES[material])
    if perenv.random(s, i) <= COLLECT_PROB[material]:
        s.inventory[i, gives] += 1
        s.achievements[i, COLLECT_ACHIEVEMENT[material]] += 1


@perenv.rule(inline=False)
def place(s: Any, i: int, what: int, x: int, y: int, material: int) -> None:
    """``Player._place`` of ``what`` (0 stone, 1 table, 2 furnace, 3 plant) on the facing
    cell: no object there, a material it may go on, the items it uses."""
    if occupant(s, i, x, y) != 0:
        return
    if not PLACE_WHERE[what, material]:
        return
    uses = PLACE_USES[what]
    if s.inventory[i, uses] < PLACE_AMOUNT[what]:
        return
    s.inventory[i, uses] -= PLACE_AMOUNT[what]
    if PLACE_MATERIAL[what] >= 0:
        set_mat(s, i, x, y, PLACE_MATERIAL[what])
    elif not add_object(s, i, PLANT, x, y, 0):
        return  # (no free slot: the sapling is used, no plant appears; docs/crafter.md)
    s.achievements[i, PLACE_ACHIEVEMENT[what]] += 1


@perenv.rule(inline=False)
def near(s: Any, i: int, material: int) -> bool:
    """``material in World.nearby(player.pos, 1)[0]``: the 3x3 cells around the player, as
    numpy slices them (``x - 1: x + 2``): at x = 0 the start -1 counts from the end and the
    slice is empty, so nothing is near a player on the world's first row or column."""
    x, y = np.int64(s.player_x[i]), np.int64(s.player_y[i])
    if x < 1 or y < 1:
        return False
    for u in range(x - 1, min(x + 2, AREA)):
        for v in range(y - 1, min(y + 2, AREA)):
            if s.mat[i, u, v] == material:
                return True
    return False


@perenv.rule(inline=False)
def make(s: Any, i: int, what: int) -> None:
    """``Player._make`` of ``what`` (wood, stone, iron pickaxe; wood, stone, iron sword):
    a table nearby (and a furnace for iron), the items it uses."""
    if not near(s, i, TABLE):
        return
    if MAKE_NEEDS_FURNACE[what] and not near(s, i, FURNACE):
        return
    for j in range(4):
        if s.inventory[i, MAKE_USED_ITEMS[j]] < MAKE_USES[what, j]:
            return
    for j in range(4):
        s.inventory[i, MAKE_USED_ITEMS[j]] -= MAKE_USES[what, j]
    s.inventory[i, MAKE_GIVES[what]] += 1
    s.achievements[i, MAKE_ACHIEVEMENT[what]] += 1


@perenv.rule
def update_life_stats(s: Any, i: int) -> None:
    """``Player._update_life_stats``: hunger, thirst and fatigue count up (half as fast for
    hunger and thirst while asleep; fatigue down while asleep) and cost food, drink or
    energy (or give energy) when they pass their limits."""
    sleeping = s.sleeping[i]
    s.hunger[i] += 0.5 if sleeping else 1.0
    if s.hunger[i] > 25:
        s.hunger[i] = 0
        s.inventory[i, FOOD] -= 1
    s.thirst[i] += 0.5 if sleeping else 1.0
    if s.thirst[i] > 20:
        s.thirst[i] = 0
        s.inventory[i, DRINK] -= 1
    if sleeping:
        s.fatigue[i] = min(s.fatigue[i] - 1, 0)
    else:
        s.fatigue[i] += 1
    if s.fatigue[i] < -10:
        s.fatigue[i] = 0
        s.inventory[i, ENERGY] += 1
    if s.fatigue[i] > 30:
        s.fatigue[i] = 0
        s.inventory[i, ENERGY] -= 1


@perenv.rule
def degen_or_regen_health(s: Any, i: int) -> None:
    """``Player._degen_or_regen_health``: with food, drink and energy (or sleep) the player
    recovers a health point every 26 steps (13 asleep), without one of them it loses one
    every 16 (31 asleep)."""
    sleeping = s.sleeping[i]
    if (s.inventory[i, FOOD] > 0 and s.inventory[i, DRINK] > 0
            and (s.inventory[i, ENERGY] > 0 or sleeping)):
        s.recover[i] += 2.0 if sleeping else 1.0
    else:
        s.recover[i] -= 0.5 if sleeping else 1.0
    if s.recover[i] > 25:
        s.recover[i] = 0
        s.inventory[i, HEALTH] += 1
    if s.recover[i] < -15:
        s.recover[i] = 0
        s.inventory[i, HEALTH] = max(0, s.inventory[i, HEALTH] - 1)


@perenv.rule(inline=False)
def update_player(s: Any, i: int, action: int) -> None:
    """``Player.update``: the action on the facing cell (or waking up), then vitals,
    inventory caps (0-9), and waking when hurt. (The chain of actions stays here: a helper
    taking ``s``, inlined or not, adds a pass over the state's arrays to every step;
    docs/crafter.md, "What a call with ``s`` costs".)"""
    f = s.facing[i]
    tx, ty = np.int64(s.player_x[i]) + DIR_X[f], np.int64(s.player_y[i]) + DIR_Y[f]
    material = who = 0  # (World.__getitem__ outside the world)
    if inside(tx, ty):
        material, who = np.int64(s.mat[i, tx, ty]), np.int64(s.occ[i, tx, ty])
    if s.sleeping[i]:
        if s.inventory[i, ENERGY] < ITEM_MAX:
            action = SLEEP
        else:
            s.sleeping[i] = False
            s.achievements[i, A_WAKE_UP] += 1
    if action == NOOP:
        pass
    elif MOVE_LEFT <= action <= MOVE_DOWN:
        player_move(s, i, action - MOVE_LEFT)
    elif action == DO:
        if who >= 2:
            do_object(s, i, who - 2)
        else:
            do_material(s, i, tx, ty, material)
    elif action == SLEEP:
        if s.inventory[i, ENERGY] < ITEM_MAX:
            s.sleeping[i] = True
    elif PLACE_STONE <= action <= PLACE_PLANT:
        place(s, i, action - PLACE_STONE, tx, ty, material)
    elif action >= MAKE_WOOD_PICKAXE:
        make(s, i, action - MAKE_WOOD_PICKAXE)
    update_life_stats(s, i)
    degen_or_regen_health(s, i)
    for j in range(s.inventory.shape[1]):
        s.inventory[i, j] = max(0, min(s.inventory[i, j], ITEM_MAX))
    if s.inventory[i, HEALTH] < s.last_health[i]:  # Player._wake_up_when_hurt
        s.sleeping[i] = False
    s.last_health[i] = s.inventory[i, HEALTH]


# ----------------------------------------------------------------------------- creatures
@perenv.rule
def update_cow(s: Any, i: int, k: int) -> None:
    """``Cow.update``: gone when dead; a random step half the time."""
    if s.obj_health[i, k] <= 0:
        remove_object(s, i, k)
    if perenv.random(s, i) < 0.5:
        d = perenv.integers(s, i, 0, 4)
        move(s, i, k, DIR_X[d], DIR_Y[d], WALKABLE)


@perenv.rule
def update_zombie(s: Any, i: int, k: int) -> None:
    """``Zombie.update``: gone when dead (its step still runs: a zombie killed this step
    may still strike); within 8 cells it walks toward the player 90% of the time, else at
    random; next to the player it strikes (2 damage, 7 on a sleeper) every 6th step."""
    if s.obj_health[i, k] <= 0:
        remove_object(s, i, k)
    x, y = np.int64(s.obj_x[i, k]), np.int64(s.obj_y[i, k])
    px, py = np.int64(s.player_x[i]), np.int64(s.player_y[i])
    if distance_to_player(s, i, x, y) <= 8 and perenv.random(s, i) < 0.9:
        dx, dy = toward(x, y, px, py, perenv.random(s, i) < 0.8)
    else:
        d = perenv.integers(s, i, 0, 4)
        dx, dy = DIR_X[d], DIR_Y[d]
    move(s, i, k, dx, dy, WALKABLE)
    if distance_to_player(s, i, np.int64(s.obj_x[i, k]), np.int64(s.obj_y[i, k])) <= 1:
        if s.obj_timer[i, k] > 0:  # cooldown
            s.obj_timer[i, k] -= 1
        else:
            hurt(s, i, 1, 7 if s.sleeping[i] else 2)
            s.obj_timer[i, k] = 5


@perenv.rule
def shoot(s: Any, i: int, k: int, dx: int, dy: int) -> None:
    """``Skeleton._shoot``: an arrow on the next cell toward the player, when reloaded."""
    if s.obj_timer[i, k] > 0:
        return
    if dx == 0 and dy == 0:
        return
    x, y = np.int64(s.obj_x[i, k]) + dx, np.int64(s.obj_y[i, k]) + dy
    if is_free(s, i, x, y, ARROW_WALKABLE):
        # facing index: (-1, 0) left 0, (1, 0) right 1, (0, -1) up 2, (0, 1) down 3
        d = (0 if dx < 0 else 1) if dx != 0 else (2 if dy < 0 else 3)
        add_object(s, i, ARROW, x, y, d)
        s.obj_timer[i, k] = 4  # reload


@perenv.rule
def update_skeleton(s: Any, i: int, k: int) -> None:
    """``Skeleton.update``: gone when dead (its step still runs); backs away within 3
    cells, shoots within 5 (half the time), walks toward the player within 8 (30%),
    wanders (20%)."""
    if s.obj_health[i, k] <= 0:
        remove_object(s, i, k)
    s.obj_timer[i, k] = max(0, s.obj_timer[i, k] - 1)  # reload
    x, y = np.int64(s.obj_x[i, k]), np.int64(s.obj_y[i, k])
    px, py = np.int64(s.player_x[i]), np.int64(s.player_y[i])
    dist = distance_to_player(s, i, x, y)
    if dist <= 3:
        dx, dy = toward(x, y, px, py, perenv.random(s, i) < 0.6)
        if move(s, i, k, -dx, -dy, WALKABLE):
            return
    if dist <= 5 and perenv.random(s, i) < 0.5:
        dx, dy = toward(x, y, px, py, True)
        shoot(s, i, k, dx, dy)
    elif dist <= 8 and perenv.random(s, i) < 0.3:
        dx, dy = toward(x, y, px, py, perenv.random(s, i) < 0.6)
        move(s, i, k, dx, dy, WALKABLE)
    elif perenv.random(s, i) < 0.2:
        d = perenv.integers(s, i, 0, 4)
        move(s, i, k, DIR_X[d], DIR_Y[d], WALKABLE)


@perenv.rule
def update_arrow(s: Any, i: int, k: int) -> None:
    """``Arrow.update``: hits what is on the next cell (2 damage) and is gone, or is gone on
    a material it cannot fly over (breaking a table or furnace to path), or flies on."""
    d = s.obj_dir[i, k]
    x, y = np.int64(s.obj_x[i, k]) + DIR_X[d], np.int64(s.obj_y[i, k]) + DIR_Y[d]
    who = occupant(s, i, x, y)
    if who != 0:
        hurt(s, i, who, 2)
        remove_object(s, i, k)
        return
    material = np.int64(s.mat[i, x, y]) if 0 <= x < AREA and 0 <= y < AREA else 0
    if not ARROW_WALKABLE[material]:
        remove_object(s, i, k)
        if material == TABLE or material == FURNACE:
            set_mat(s, i, x, y, PATH)
    else:
        move_object(s, i, k, x, y)


@perenv.rule
def update_plant(s: Any, i: int, k: int) -> None:
    """``Plant.update``: grows (ripe after 300 steps); a zombie, skeleton or cow next to
    it eats it (1 damage: a sapling has 1 health)."""
    s.obj_timer[i, k] += 1  # grown
    x, y = np.int64(s.obj_x[i, k]), np.int64(s.obj_y[i, k])
    eaten = False
    for d in range(4):
        who = occupant(s, i, x + DIR_X[d], y + DIR_Y[d])
        if who >= 2:
            kind = s.kind[i, who - 2]
            if kind == ZOMBIE or kind == SKELETON or kind == COW:
                eaten = True
    if eaten:
        s.obj_health[i, k] = max(0, s.obj_health[i, k] - 1)
    if s.obj_health[i, k] <= 0:
        remove_object(s, i, k)


@perenv.rule(inline=False)
def update_object(s: Any, i: int, k: int) -> None:
    kind = s.kind[i, k]
    if kind == COW:
        update_cow(s, i, k)
    elif kind == ZOMBIE:
        update_zombie(s, i, k)
    elif kind == SKELETON:
        update_skeleton(s, i, k)
    elif kind == ARROW:
        update_arrow(s, i, k)
    elif kind == PLANT:
        update_plant(s, i, k)


# ----------------------------------------------------------------------------- balancing
@perenv.rule(inline=False)
def balance_object(s: Any, i: int, c: int, kind: int, material: int, space: int,
                   span_dist: int, despan_dist: int, spawn_prob: float, despawn_prob: float,
                   target_min: float, target_max: float) -> None:
    """``Env._balance_object`` for chunk ``c``: below ``target_min`` creatures of ``kind``,
    maybe one more (:func:`spawn`); above ``target_max``, maybe one fewer
    (:func:`despawn`). The counts are the chunk's census (``s.census``, ``s.grass``,
    ``s.path``)."""
    count = np.int64(s.census[i, c, census_column(kind)])
    if count < int(target_min) and perenv.random(s, i) < spawn_prob:
        spawn(s, i, c, kind, material, space, span_dist)
    elif count > int(target_max) and perenv.random(s, i) < despawn_prob:
        despawn(s, i, c, kind, count, despan_dist)


@perenv.rule
def chunk_bounds(c: int) -> tuple[int, int, int, int]:
    """Chunk ``c``'s cells: ``xmin, xmax, ymin, ymax`` (the last chunks are cut by the
    world's edge)."""
    xmin, ymin = (c // N_CHUNKS) * CHUNK, (c % N_CHUNKS) * CHUNK
    return xmin, min(xmin + CHUNK, AREA), ymin, min(ymin + CHUNK, AREA)


@perenv.rule
def spawn(s: Any, i: int, c: int, kind: int, material: int, space: int,
          span_dist: int) -> None:
    """A creature of ``kind`` on a random cell of chunk ``c`` among its ``space`` cells of
    ``material``, if the cell has no object and is ``span_dist`` from the player."""
    xmin, xmax, ymin, ymax = chunk_bounds(c)
    j = perenv.integers(s, i, 0, space)  # the j-th cell of `material`, x-major
    for x in range(xmin, xmax):
        for y in range(ymin, ymax):
            if s.mat[i, x, y] == material:
                if j == 0:
                    if s.occ[i, x, y] == 0 and distance_to_player(s, i, x, y) >= span_dist:
                        add_object(s, i, kind, x, y, 0)
                    return
                j -= 1


@perenv.rule
def despawn(s: Any, i: int, c: int, kind: int, count: int, despan_dist: int) -> None:
    """One of the ``count`` creatures of ``kind`` in chunk ``c``, at random, is removed if
    it is ``despan_dist`` from the player. crafter picks it from a Python set (an order
    that changes from run to run); here the chunk's creatures are taken in crafter's
    object order."""
    xmin, xmax, ymin, ymax = chunk_bounds(c)
    j = perenv.integers(s, i, 0, count)
    for k in range(s.n_objects[i]):
        if (s.kind[i, k] == kind and xmin <= s.obj_x[i, k] < xmax
                and ymin <= s.obj_y[i, k] < ymax):
            if j == 0:
                x, y = np.int64(s.obj_x[i, k]), np.int64(s.obj_y[i, k])
                if distance_to_player(s, i, x, y) >= despan_dist:
                    remove_object(s, i, k)
                return
            j -= 1


@perenv.rule
def balance_chunk(s: Any, i: int, c: int, light: float) -> None:
    """``Env._balance_chunk``: zombies on grass (more at night), skeletons on paths, cows
    on grass, each toward its targets."""
    grass = np.int64(s.grass[i, c])
    path = np.int64(s.path[i, c])
    balance_object(s, i, c, ZOMBIE, GRASS, grass, 6, 0, 0.3, 0.4,
                   0.0 if grass < 50 else 3.5 - 3 * light, 3.5 - 3 * light)
    balance_object(s, i, c, SKELETON, PATH, path, 7, 7, 0.1, 0.1,
                   0.0 if path < 6 else 1.0, 2.0)
    balance_object(s, i, c, COW, GRASS, grass, 5, 5, 0.01, 0.1,
                   0.0 if grass < 30 else 1.0, 1.5 + light)


# ----------------------------------------------------------------------------- the step
@perenv.rule(inline=False)
def step_world(s: Any, i: int, action: int) -> None:
    """``Env.step`` up to the observation: the clock, the player then every object within
    ``2 * 9`` cells (L1) of it in crafter's order (objects added during the step wait for
    the next one), every 10th step the chunks' balance, then the night noise's draw (the
    draw crafter's ``render`` makes at night: ``LocalView._noise``)."""
    s.step[i] += 1
    light = daylight(s.step[i])
    n = s.n_objects[i]
    update_player(s, i, action)
    for k in range(n):
        if s.kind[i, k] != 0 and distance_to_player(
                s, i, np.int64(s.obj_x[i, k]), np.int64(s.obj_y[i, k])) < UPDATE_DISTANCE:
            update_object(s, i, k)
    if s.step[i] % 10 == 0:
        for j in range(s.n_chunks[i]):
            balance_chunk(s, i, np.int64(s.chunk_order[i, j]), light)
    compact(s, i)
    s.noise_key[i] = perenv.bits(s, i) if light < 0.5 else np.uint64(0)
