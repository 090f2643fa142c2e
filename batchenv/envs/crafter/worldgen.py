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

from collections import namedtuple
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
from batchenv.envs.crafter.world import PLAYER, add_object, count_materials

__all__ = ["generate_world", "terrain", "set_material", "set_object", "CENTER", "TUNNEL"]

CENTER = AREA // 2  # env.py's reset: the player starts at (area // 2, area // 2)
#: A flag on a path cell of ``s.mat`` while the world is made: crafter's ``tunnels`` array
#: (horizontal and vertical tunnels, where skeletons start), cleared by :func:`set_object`.
TUNNEL = np.uint8(0x80)
_MATERIAL_BITS = np.uint8(0x7F)


# A column's noise, field by field (the cells' fields one after another: a run of calls of
# one field is twice as fast as crafter's cell-by-cell mix, whose branches the processor
# cannot predict), kept per cell in 8 float64 slots of scratch: the object map's bytes,
# free while the terrain is made (4096 bytes: 64 cells x 8 slots).
(N_START, N_WATER, N_MOUNTAIN, N_CAVE, N_HTUNNEL, N_VTUNNEL, N_COAL,
 N_IRON) = range(8)
N_LAVA = N_START  # (read after the start area has decided the cell's class)
N_SAND, N_TREE = N_CAVE, N_HTUNNEL  # (lowland cells have no caves or tunnels)
#: each field's slot, by its index in FIELDS (the first five are combined)
_SLOT = np.array([N_START, N_WATER, N_WATER, N_MOUNTAIN, N_MOUNTAIN, N_CAVE, N_HTUNNEL,
                  N_VTUNNEL, N_COAL, N_IRON, N_LAVA, N_SAND, N_TREE], dtype=np.int64)
_LOWLAND = 0  # a cell's class in the material map until set_material: GRASS (start area), STONE
#               (mountain) or this


#: The noise fields crafter's ``_set_material`` reads, in the order :func:`column_noise`
#: makes them: ``noise3(x * mx / dx / ex, y * my / dy / ey, z)`` (crafter's ``_simplex``
#: divides its coordinates by the size; the tunnels' are stretched first, e.g.
#: ``simplex(2 * x, y / 5, 7, 3)``), one row of (mx, dx, ex, my, dy, ey, z) each
F_START, F_WATER15, F_WATER5, F_MOUNTAIN15, F_MOUNTAIN5, F_CAVE, F_HTUNNEL, F_VTUNNEL, \
    F_COAL, F_IRON, F_LAVA, F_SAND, F_TREE = range(13)
FIELDS = np.array([
    (1, 3, 1, 1, 3, 1, 8),  # start: simplex(x, y, 8, 3)
    (1, 15, 1, 1, 15, 1, 3),  # water: simplex(x, y, 3, {15: 1, 5: 0.15}, False)
    (1, 5, 1, 1, 5, 1, 3),
    (1, 15, 1, 1, 15, 1, 0),  # mountain: simplex(x, y, 0, {15: 1, 5: 0.3})
    (1, 5, 1, 1, 5, 1, 0),
    (1, 7, 1, 1, 7, 1, 6),  # cave: simplex(x, y, 6, 7)
    (2, 3, 1, 1, 5, 3, 7),  # horizontal tunnel: simplex(2 * x, y / 5, 7, 3)
    (1, 5, 3, 2, 3, 1, 7),  # vertical tunnel: simplex(x / 5, 2 * y, 7, 3)
    (1, 8, 1, 1, 8, 1, 1),  # coal: simplex(x, y, 1, 8)
    (1, 6, 1, 1, 6, 1, 2),  # iron: simplex(x, y, 2, 6)
    (1, 5, 1, 1, 5, 1, 6),  # lava: simplex(x, y, 6, 5)
    (1, 9, 1, 1, 9, 1, 4),  # sand: simplex(x, y, 4, 9)
    (1, 7, 1, 1, 7, 1, 5),  # tree: simplex(x, y, 5, 7)
], dtype=np.int64)


def _coordinates() -> np.ndarray:
    """Each field's noise coordinates of every column and row, ``(13, 2, 64)``: ``x * mx /
    dx / ex`` and ``y * my / dy / ey`` in float64 as crafter's ``_simplex`` computes them
    (``2 * x / 3``, ``x / 5 / 3``, ...: the same operations, so the same values); a table
    spares the kernel four divisions a call."""
    cells = np.arange(AREA, dtype=np.float64)
    out = np.empty((len(FIELDS), 2, AREA))
    for f, (mx, dx, ex, my, dy, ey, _) in enumerate(FIELDS.tolist()):
        out[f, 0] = cells * mx / dx / ex
        out[f, 1] = cells * my / dy / ey
    return out


#: :func:`_coordinates`
COORDINATES = _coordinates()


@perenv.rule
def needs(field: int, kind: int, water: float, mountain: float, cave: float,
          htunnel: float, vtunnel: float, sand: float) -> bool:
    """Whether crafter's chain of tests for a cell of class ``kind`` reads ``field``, given
    the values made before it: the start area, water and mountain for every cell (they
    decide its class), then the mountain's fields (:func:`mountain_needs`) or the
    lowland's (:func:`lowland_needs`). Each value is read only when the ``elif`` chain
    reaches it, and only those are made. (Values, not the column's arrays: numba counts
    references to an array passed to a helper, two atomic operations per cell.)"""
    if field <= F_MOUNTAIN5:
        return True
    if field <= F_LAVA:
        return kind == STONE and mountain_needs(field, mountain, cave, htunnel, vtunnel)
    return kind == _LOWLAND and lowland_needs(field, water, sand)


@perenv.rule
def mountain_needs(field: int, mountain: float, cave: float, htunnel: float,
                   vtunnel: float) -> bool:
    """:func:`needs` for a mountain cell: the cave, then each tunnel while no earlier test
    made the cell a path, then coal, iron and (where the mountain is high enough) lava
    (past a random draw: made for every such cell, read or not)."""
    if field == F_CAVE:
        return True
    if cave > 0.15 and mountain > 0.3:
        return False
    if field == F_HTUNNEL:
        return True
    if htunnel > 0.4:
        return False
    if field == F_VTUNNEL:
        return True
    if vtunnel > 0.4:
        return False
    return field != F_LAVA or mountain > 0.3


@perenv.rule
def lowland_needs(field: int, water: float, sand: float) -> bool:
    """:func:`needs` for a lowland cell: sand at the water's edge, trees on grassland."""
    if field == F_SAND:
        return 0.25 < water <= 0.35
    return not (0.25 < water <= 0.35 and sand > -0.2) and not 0.3 < water


@perenv.rule(inline=False)
def column_noise(perm: np.ndarray, mat: np.ndarray, x: int, v: np.ndarray) -> None:
    """Every noise value ``worldgen._set_material`` reads for the cells of column ``x``,
    into ``v[y, slot]``, and each cell's class into ``mat`` (the world's material map),
    field by field (:data:`FIELDS`, one place that calls the noise: many would each be a
    copy of it, too much code for the processor's instruction cache). The start area, water
    and mountain are combined as crafter's ``_set_material`` and ``_simplex`` compute them."""
    for field in range(len(FIELDS)):
        nx, z = COORDINATES[field, 0, x], FIELDS[field, 6]
        for y in range(AREA):
            if not needs(field, mat[x, y], v[y, N_WATER], v[y, N_MOUNTAIN], v[y, N_CAVE],
                         v[y, N_HTUNNEL], v[y, N_VTUNNEL], v[y, N_SAND]):
                continue
            n = noise3(perm, nx, COORDINATES[field, 1, y], z)
            if field == F_START:
                start = 4 - sqrt((x - CENTER) ** 2 + (y - CENTER) ** 2)
                start += 2 * n
                v[y, N_START] = 1 / (1 + exp(-start))
            elif field == F_WATER15:
                v[y, N_WATER] = n
            elif field == F_WATER5:
                v[y, N_WATER] = v[y, N_WATER] + 0.15 * n + 0.1
                v[y, N_WATER] -= 2 * v[y, N_START]
            elif field == F_MOUNTAIN15:
                v[y, N_MOUNTAIN] = n
            elif field == F_MOUNTAIN5:
                v[y, N_MOUNTAIN] = (v[y, N_MOUNTAIN] + 0.3 * n) / 1.3
                v[y, N_MOUNTAIN] -= 4 * v[y, N_START] + 0.3 * v[y, N_WATER]
                if v[y, N_START] > 0.5:
                    mat[x, y] = GRASS
                elif v[y, N_MOUNTAIN] > 0.15:
                    mat[x, y] = STONE
                else:
                    mat[x, y] = _LOWLAND
            else:
                v[y, _SLOT[field]] = n


#: The two fields of the state that ``perenv.random(stream, i)`` reads: what the per-cell
#: rules take instead of ``s``: numba carries every array of the state (32) into each of
#: the 4096 cells' calls of a helper taking ``s``, inlined or not (the cost:
#: docs/crafter.md, "What a call with ``s`` costs").
Stream = namedtuple("Stream", ("rng_counter", "rng_key"))


@perenv.rule
def stream_fields(s: Any) -> tuple[np.ndarray, np.ndarray]:
    """The fields of :class:`Stream`, from ``s``. (Apart from where the :class:`Stream` is
    made: batchenv's compile cache cannot hash a function that names both a namedtuple
    class and attributes of the same names as its fields.)"""
    return s.rng_counter, s.rng_key


@perenv.rule
def set_material(stream: Any, i: int, v: np.ndarray, kind: int, y: int) -> int:
    """``worldgen._set_material`` for cell y of the column in ``v`` (:func:`column_noise`),
    from its class ``kind``: grass in the start area, else :func:`mountain_material` or
    :func:`lowland_material`."""
    if kind == GRASS:  # the start area
        return GRASS
    if kind == STONE:
        return mountain_material(stream, i, v, y)
    return lowland_material(stream, i, v, y)


@perenv.rule
def mountain_material(stream: Any, i: int, v: np.ndarray, y: int) -> int:
    """A mountain cell's material: a cave or a tunnel's path (with :data:`TUNNEL`), coal,
    iron or diamond (each past a ``uniform()`` from row ``i``'s stream, drawn where crafter
    draws it), lava, or stone."""
    mountain = v[y, N_MOUNTAIN]
    if v[y, N_CAVE] > 0.15 and mountain > 0.3:  # cave
        return PATH
    if v[y, N_HTUNNEL] > 0.4:  # horizontal tunnel
        return PATH | TUNNEL
    if v[y, N_VTUNNEL] > 0.4:  # vertical tunnel
        return PATH | TUNNEL
    if v[y, N_COAL] > 0 and perenv.random(stream, i) > 0.85:
        return COAL
    if v[y, N_IRON] > 0.4 and perenv.random(stream, i) > 0.75:
        return IRON
    if mountain > 0.18 and perenv.random(stream, i) > 0.994:
        return DIAMOND
    if mountain > 0.3 and v[y, N_LAVA] > 0.35:
        return LAVA
    return STONE


@perenv.rule
def lowland_material(stream: Any, i: int, v: np.ndarray, y: int) -> int:
    """A lowland cell's material: sand at the water's edge, water, or grassland (a tree
    past a ``uniform()``, else grass)."""
    water = v[y, N_WATER]
    if 0.25 < water <= 0.35 and v[y, N_SAND] > -0.2:
        return SAND
    if 0.3 < water:
        return WATER
    # grassland
    if v[y, N_TREE] > 0 and perenv.random(stream, i) > 0.8:
        return TREE
    return GRASS


@perenv.rule
def terrain(perm: np.ndarray, stream: Any, i: int, mat: np.ndarray, v: np.ndarray) -> None:
    """Every cell's material into ``mat`` (the world's material map), column by column:
    :func:`column_noise`, then :func:`set_material` in crafter's order of cells and draws.
    ``v`` is scratch for a column's noise (64 x 8 float64)."""
    for x in range(AREA):
        column_noise(perm, mat, x, v)
        for y in range(AREA):
            mat[x, y] = set_material(stream, i, v, mat[x, y], y)


@perenv.rule
def set_object(stream: Any, i: int, mat: np.ndarray, x: int, y: int) -> int:
    """``worldgen._set_object`` for cell (x, y): the kind of creature crafter puts there
    (0 none): a cow (on grass, 3+ cells from the player), a zombie (10+ cells away) or a
    skeleton (in a tunnel); clears the cell's :data:`TUNNEL` flag."""
    cell = mat[x, y]
    material = cell & _MATERIAL_BITS
    tunnel = cell & TUNNEL
    mat[x, y] = material
    dist = sqrt((x - CENTER) ** 2 + (y - CENTER) ** 2)
    if not WALKABLE[material]:
        return 0
    if dist > 3 and material == GRASS and perenv.random(stream, i) > 0.985:
        return COW
    if dist > 10 and perenv.random(stream, i) > 0.993:
        return ZOMBIE
    if material == PATH and tunnel != 0 and perenv.random(stream, i) > 0.95:
        return SKELETON
    return 0


@perenv.rule(inline=False)
def generate_world(s: Any, i: int) -> None:
    """``worldgen.generate_world``: the noise's seed (the first draw), every cell's
    material (:func:`terrain`), then the creatures (:func:`set_object`, cell by cell). The
    player (at the centre) is in the object map when the creatures are placed (crafter adds
    it first)."""
    perm = s.noise_perm[i]
    init_perm(perenv.integers(s, i, 0, 2**31 - 1), perm)
    counter, key = stream_fields(s)
    stream = Stream(counter, key)
    mat = s.mat[i]
    terrain(perm, stream, i, mat, s.occ[i].view(np.float64))  # (the object map as scratch)
    s.occ[i] = 0
    s.occ[i, CENTER, CENTER] = PLAYER
    for x in range(AREA):
        for y in range(AREA):
            kind = set_object(stream, i, mat, x, y)
            if kind != 0:
                add_object(s, i, kind, x, y, 0)
    count_materials(s, i)
