"""World generation, as crafter 1.8.3's ``worldgen.py`` (``generate_world``) does it, for
row ``i``: terrain from OpenSimplex noise (:mod:`.noise`), then cows, zombies and skeletons.

crafter seeds the noise with the world's first random draw (``randint(0, 2**31 - 1)``), then
sets every cell's material (x-major), drawing ``uniform()`` where a rule asks for one, then
places the creatures in a second pass over the cells. Here the draws come from the env's
own stream in the same order and for the same conditions, so that, given the same draws,
a world is crafter's (``tests/test_crafter.py`` drives crafter's generator with the words
our stream gives and compares the worlds).
"""

from __future__ import annotations

from math import exp, sqrt
from typing import Any

import numpy as np

from batchenv import perenv
from batchenv.envs.crafter.data import (
    AREA,
    COAL,
    COW,
    DIAMOND,
    GRASS,
    IRON,
    LAVA,
    PATH,
    SAND,
    SKELETON,
    STONE,
    TREE,
    WALKABLE,
    WATER,
    ZOMBIE,
)
from batchenv.envs.crafter.noise import init_perm, noise3
from batchenv.envs.crafter.world import add_object, count_materials

__all__ = ["generate_world", "set_material", "set_object", "CENTER", "TUNNEL"]

CENTER = AREA // 2  # env.py's reset: the player starts at (area // 2, area // 2)
#: A flag on a path cell of ``s.mat`` while the world is made: crafter's ``tunnels`` array
#: (horizontal and vertical tunnels, where skeletons start), cleared by :func:`set_object`.
TUNNEL = np.uint8(0x80)
_MATERIAL_BITS = np.uint8(0x7F)


@perenv.rule
def set_material(perm: np.ndarray, s: Any, i: int, x: int, y: int) -> int:
    """``worldgen._set_material`` for cell (x, y): the material (and :data:`TUNNEL` on a
    tunnel's path). Each ``simplex(x, y, z, sizes)`` of crafter is written out as its
    ``_simplex`` computes it: ``noise3(x / size, y / size, z)`` per size, weighted, summed
    from 0 and divided by the weights' sum (``normalize``)."""
    # start area: 1 near the player, falling off with distance (a sigmoid)
    start = 4 - sqrt((x - CENTER) ** 2 + (y - CENTER) ** 2)
    start += 2 * noise3(perm, x / 3, y / 3, 8)
    start = 1 / (1 + exp(-start))
    water = noise3(perm, x / 15, y / 15, 3) + 0.15 * noise3(perm, x / 5, y / 5, 3) + 0.1
    water -= 2 * start
    mountain = (noise3(perm, x / 15, y / 15, 0) + 0.3 * noise3(perm, x / 5, y / 5, 0)) / 1.3
    mountain -= 4 * start + 0.3 * water
    if start > 0.5:
        return GRASS
    if mountain > 0.15:
        if noise3(perm, x / 7, y / 7, 6) > 0.15 and mountain > 0.3:  # cave
            return PATH
        if noise3(perm, 2 * x / 3, y / 5 / 3, 7) > 0.4:  # horizontal tunnel
            return PATH | TUNNEL
        if noise3(perm, x / 5 / 3, 2 * y / 3, 7) > 0.4:  # vertical tunnel
            return PATH | TUNNEL
        if noise3(perm, x / 8, y / 8, 1) > 0 and perenv.random(s, i) > 0.85:
            return COAL
        if noise3(perm, x / 6, y / 6, 2) > 0.4 and perenv.random(s, i) > 0.75:
            return IRON
        if mountain > 0.18 and perenv.random(s, i) > 0.994:
            return DIAMOND
        if mountain > 0.3 and noise3(perm, x / 5, y / 5, 6) > 0.35:
            return LAVA
        return STONE
    if 0.25 < water <= 0.35 and noise3(perm, x / 9, y / 9, 4) > -0.2:
        return SAND
    if 0.3 < water:
        return WATER
    # grassland
    if noise3(perm, x / 7, y / 7, 5) > 0 and perenv.random(s, i) > 0.8:
        return TREE
    return GRASS


@perenv.rule
def set_object(s: Any, i: int, x: int, y: int) -> None:
    """``worldgen._set_object`` for cell (x, y): maybe a cow (on grass, 3+ cells from the
    player), a zombie (10+ cells away) or a skeleton (in a tunnel); clears the cell's
    :data:`TUNNEL` flag."""
    cell = s.mat[i, x, y]
    material = cell & _MATERIAL_BITS
    tunnel = cell & TUNNEL
    s.mat[i, x, y] = material
    dist = sqrt((x - CENTER) ** 2 + (y - CENTER) ** 2)
    if not WALKABLE[material]:
        return
    if dist > 3 and material == GRASS and perenv.random(s, i) > 0.985:
        add_object(s, i, COW, x, y, 0)
    elif dist > 10 and perenv.random(s, i) > 0.993:
        add_object(s, i, ZOMBIE, x, y, 0)
    elif material == PATH and tunnel != 0 and perenv.random(s, i) > 0.95:
        add_object(s, i, SKELETON, x, y, 0)


@perenv.rule
def generate_world(s: Any, i: int) -> None:
    """``worldgen.generate_world``: the noise's seed (the first draw), every cell's
    material, then the creatures. The player must already be in the world (at the centre):
    crafter adds it first."""
    perm = s.noise_perm[i]
    init_perm(perenv.integers(s, i, 0, 2**31 - 1), perm)
    for x in range(AREA):
        for y in range(AREA):
            s.mat[i, x, y] = set_material(perm, s, i, x, y)
    for x in range(AREA):
        for y in range(AREA):
            set_object(s, i, x, y)
    count_materials(s, i)
