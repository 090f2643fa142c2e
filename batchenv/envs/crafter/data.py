"""Crafter's game data (``crafter/data.yaml``, crafter 1.8.3) as numbered tables the kernels
index, and the names they number.

Everything here is a copy of ``data.yaml`` (and of the class constants of
``crafter/objects.py`` and ``crafter/env.py``) in the form compiled code reads: ids instead
of names, arrays instead of dicts. ``tests/test_crafter.py::test_data_is_crafters`` compares
every table with the installed ``crafter.constants``; BatchCrafter itself does not need the
``crafter`` package for its rules (only for its textures: ``render.py``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["MATERIALS", "ITEMS", "ACTIONS", "ACHIEVEMENTS", "KINDS", "AREA", "VIEW",
           "LOCAL_VIEW", "CHUNK", "N_CHUNKS", "UPDATE_DISTANCE", "LENGTH"]

# --------------------------------------------------------------------------- names
#: ``data.yaml``'s ``materials``, numbered as ``engine.World`` numbers them: id 0 is None (a
#: cell never set), then the list in order.
MATERIALS = ("none", "water", "grass", "stone", "path", "sand", "tree", "lava", "coal",
             "iron", "diamond", "table", "furnace")
(NONE, WATER, GRASS, STONE, PATH, SAND, TREE, LAVA, COAL, IRON, DIAMOND, TABLE,
 FURNACE) = range(13)
#: ``data.yaml``'s ``items`` (the player's inventory, vitals first), in its order: the
#: inventory's index and the item view's order (``engine.ItemView``).
ITEMS = ("health", "food", "drink", "energy", "sapling", "wood", "stone", "coal", "iron",
         "diamond", "wood_pickaxe", "stone_pickaxe", "iron_pickaxe", "wood_sword",
         "stone_sword", "iron_sword")
(HEALTH, FOOD, DRINK, ENERGY, SAPLING, WOOD, I_STONE, I_COAL, I_IRON, I_DIAMOND,
 WOOD_PICKAXE, STONE_PICKAXE, IRON_PICKAXE, WOOD_SWORD, STONE_SWORD, IRON_SWORD) = range(16)
ITEM_MAX = 9  # every item's ``max`` in data.yaml
#: each item's ``initial`` in data.yaml
ITEM_INITIAL = np.array([9, 9, 9, 9] + [0] * 12, dtype=np.int8)
#: ``data.yaml``'s ``actions``: the action space's order
ACTIONS = ("noop", "move_left", "move_right", "move_up", "move_down", "do", "sleep",
           "place_stone", "place_table", "place_furnace", "place_plant",
           "make_wood_pickaxe", "make_stone_pickaxe", "make_iron_pickaxe", "make_wood_sword",
           "make_stone_sword", "make_iron_sword")
(NOOP, MOVE_LEFT, MOVE_RIGHT, MOVE_UP, MOVE_DOWN, DO, SLEEP, PLACE_STONE, PLACE_TABLE,
 PLACE_FURNACE, PLACE_PLANT, MAKE_WOOD_PICKAXE, MAKE_STONE_PICKAXE, MAKE_IRON_PICKAXE,
 MAKE_WOOD_SWORD, MAKE_STONE_SWORD, MAKE_IRON_SWORD) = range(17)
#: ``data.yaml``'s ``achievements`` (sorted by name, as ``sorted(crafter.constants
#: .achievements)``): the order of ``info["achievements"]``
ACHIEVEMENTS = ("collect_coal", "collect_diamond", "collect_drink", "collect_iron",
                "collect_sapling", "collect_stone", "collect_wood", "defeat_skeleton",
                "defeat_zombie", "eat_cow", "eat_plant", "make_iron_pickaxe",
                "make_iron_sword", "make_stone_pickaxe", "make_stone_sword",
                "make_wood_pickaxe", "make_wood_sword", "place_furnace", "place_plant",
                "place_stone", "place_table", "wake_up")
(A_COLLECT_COAL, A_COLLECT_DIAMOND, A_COLLECT_DRINK, A_COLLECT_IRON, A_COLLECT_SAPLING,
 A_COLLECT_STONE, A_COLLECT_WOOD, A_DEFEAT_SKELETON, A_DEFEAT_ZOMBIE, A_EAT_COW,
 A_EAT_PLANT, A_MAKE_IRON_PICKAXE, A_MAKE_IRON_SWORD, A_MAKE_STONE_PICKAXE,
 A_MAKE_STONE_SWORD, A_MAKE_WOOD_PICKAXE, A_MAKE_WOOD_SWORD, A_PLACE_FURNACE,
 A_PLACE_PLANT, A_PLACE_STONE, A_PLACE_TABLE, A_WAKE_UP) = range(22)

#: The objects besides the player (``objects.py``), as a slot's ``kind``; 0 is a free
#: slot. The order of ``env.py``'s semantic view after the player (Cow, Zombie, Skeleton,
#: Arrow, Plant). ``Fence`` is left out: no action places one in crafter 1.8.3.
KINDS = ("none", "cow", "zombie", "skeleton", "arrow", "plant")
NO_KIND, COW, ZOMBIE, SKELETON, ARROW, PLANT = range(6)
#: Each kind's health when made (``Cow``/``Zombie``/``Skeleton``/``Plant.__init__``;
#: an arrow's is ``Object``'s 0).
KIND_HEALTH = np.array([0, 3, 5, 3, 0, 1], dtype=np.int8)

# --------------------------------------------------------------------------- geometry
AREA = 64  # env.py: Env(area=(64, 64))
VIEW = 9  # env.py: Env(view=(9, 9)): the 9x9 grid of the image
LOCAL_VIEW = (9, 7)  # the world's part of it (9 - ceil(16 items / 9) rows)
CHUNK = 12  # env.py: engine.World(area, materials, (12, 12))
N_CHUNKS = -(-AREA // CHUNK)  # 6 chunks a side (the last ones 4 cells wide)
#: env.py's step: an object is updated while its distance (L1) to the player is below
#: ``2 * max(view)``
UPDATE_DISTANCE = 2 * VIEW
LENGTH = 10000  # env.py: Env(length=10000)
#: ``Object.all_dirs`` / the player's facings, as an index: left, right, up, down
DIR_X = np.array([-1, 1, 0, 0], dtype=np.int64)
DIR_Y = np.array([0, 0, -1, 1], dtype=np.int64)
LEFT, RIGHT, UP, DOWN = range(4)

# --------------------------------------------------------------------------- walking
#: ``data.yaml``'s ``walkable`` (grass, sand, path): where creatures move
WALKABLE = np.zeros(13, dtype=np.bool_)
WALKABLE[[GRASS, SAND, PATH]] = True
#: ``Player.walkable``: walkable and lava (where it dies)
PLAYER_WALKABLE = WALKABLE.copy()
PLAYER_WALKABLE[LAVA] = True
#: ``Arrow.walkable``: walkable, water and lava
ARROW_WALKABLE = WALKABLE.copy()
ARROW_WALKABLE[[WATER, LAVA]] = True

# --------------------------------------------------------------------------- collect
#: ``data.yaml``'s ``collect``, per material (row: a material id; -1 / 0: none):
#: the item it needs (and how many), the item it gives, what it leaves, the probability,
#: and the achievement (``collect_<item>``)
COLLECT_NEEDS = np.full(13, -1, dtype=np.int64)
COLLECT_NEEDS_AMOUNT = np.zeros(13, dtype=np.int64)
COLLECT_GIVES = np.full(13, -1, dtype=np.int64)
COLLECT_LEAVES = np.zeros(13, dtype=np.int64)
COLLECT_PROB = np.ones(13, dtype=np.float64)
COLLECT_ACHIEVEMENT = np.zeros(13, dtype=np.int64)
for _m, _need, _gives, _leaves, _prob, _ach in (
        (TREE, -1, WOOD, GRASS, 1.0, A_COLLECT_WOOD),
        (STONE, WOOD_PICKAXE, I_STONE, PATH, 1.0, A_COLLECT_STONE),
        (COAL, WOOD_PICKAXE, I_COAL, PATH, 1.0, A_COLLECT_COAL),
        (IRON, STONE_PICKAXE, I_IRON, PATH, 1.0, A_COLLECT_IRON),
        (DIAMOND, IRON_PICKAXE, I_DIAMOND, PATH, 1.0, A_COLLECT_DIAMOND),
        (WATER, -1, DRINK, WATER, 1.0, A_COLLECT_DRINK),
        (GRASS, -1, SAPLING, GRASS, 0.1, A_COLLECT_SAPLING)):
    COLLECT_NEEDS[_m], COLLECT_GIVES[_m], COLLECT_LEAVES[_m] = _need, _gives, _leaves
    COLLECT_NEEDS_AMOUNT[_m] = 1 if _need >= 0 else 0
    COLLECT_PROB[_m], COLLECT_ACHIEVEMENT[_m] = _prob, _ach

# --------------------------------------------------------------------------- place
#: ``data.yaml``'s ``place``, per place action (0 stone, 1 table, 2 furnace, 3 plant): the
#: item used and how many, where (a mask over materials), the material it becomes (-1: an
#: object, the plant) and the achievement
PLACE_USES = np.array([I_STONE, WOOD, I_STONE, SAPLING], dtype=np.int64)
PLACE_AMOUNT = np.array([1, 2, 4, 1], dtype=np.int64)
PLACE_WHERE = np.zeros((4, 13), dtype=np.bool_)
PLACE_WHERE[0, [GRASS, SAND, PATH, WATER, LAVA]] = True
PLACE_WHERE[1, [GRASS, SAND, PATH]] = True
PLACE_WHERE[2, [GRASS, SAND, PATH]] = True
PLACE_WHERE[3, [GRASS]] = True
PLACE_MATERIAL = np.array([STONE, TABLE, FURNACE, -1], dtype=np.int64)
PLACE_ACHIEVEMENT = np.array([A_PLACE_STONE, A_PLACE_TABLE, A_PLACE_FURNACE, A_PLACE_PLANT],
                             dtype=np.int64)

# --------------------------------------------------------------------------- make
#: ``data.yaml``'s ``make``, per make action (wood/stone/iron pickaxe, wood/stone/iron
#: sword): the items used (wood, stone, coal, iron amounts), whether a furnace must be near
#: too (a table always), the item made and the achievement
MAKE_USES = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 1],
                      [1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 1]], dtype=np.int64)
MAKE_USED_ITEMS = np.array([WOOD, I_STONE, I_COAL, I_IRON], dtype=np.int64)
MAKE_NEEDS_FURNACE = np.array([False, False, True, False, False, True])
MAKE_GIVES = np.array([WOOD_PICKAXE, STONE_PICKAXE, IRON_PICKAXE, WOOD_SWORD, STONE_SWORD,
                       IRON_SWORD], dtype=np.int64)
MAKE_ACHIEVEMENT = np.array([A_MAKE_WOOD_PICKAXE, A_MAKE_STONE_PICKAXE,
                             A_MAKE_IRON_PICKAXE, A_MAKE_WOOD_SWORD, A_MAKE_STONE_SWORD,
                             A_MAKE_IRON_SWORD], dtype=np.int64)
del _m, _need, _gives, _leaves, _prob, _ach
