"""The world's bookkeeping for one env: cells, object slots, chunks (crafter's
``engine.World``), as :func:`~batchenv.perenv.rule` helpers over the state ``s`` and row ``i``.

crafter keeps a material map, an object map (each cell's object index) and its objects in a
list in the order they were added (removed ones leave a hole), and a dict of chunks (12 x 12
cells) in the order they were first entered. Here: ``s.mat[i]`` is the material map,
``s.occ[i]`` the object map (0 nobody, 1 the player, ``2 + k`` object slot ``k``), the slots
``0 .. n_objects - 1`` hold the objects in crafter's order (``kind`` 0: removed during this
step; :func:`compact` closes the holes after the step, keeping the order), and
``chunk_order[:n_chunks]`` lists the chunks in the order crafter's dict has them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from batchenv import perenv
from batchenv.envs.crafter.data import (
    AREA,
    CHUNK,
    COW,
    GRASS,
    KIND_HEALTH,
    N_CHUNKS,
    NO_KIND,
    PATH,
    SKELETON,
    ZOMBIE,
)

__all__ = ["CAPACITY", "PLAYER", "CENSUS", "chunk_of", "enter_chunk", "add_object",
           "remove_object", "move_object", "compact", "is_free", "inside", "occupant",
           "set_mat", "census_column", "count_materials"]

#: Object slots per env. crafter has no cap; its balancing keeps creatures near
#: ``env._balance_chunk``'s targets (at most 3 zombies, 1 skeleton and 1 cow spawned per
#: chunk of 36), arrows and plants come on top. 254 is what a uint8 object map can number
#: besides "nobody" and the player; docs/crafter.md gives crafter's counts (the most seen:
#: 104 over 10,000-step episodes of an immortal random player).
CAPACITY = 254
PLAYER = 1  # the player's entry in the object map; object slot k is 2 + k
#: The kinds chunk balancing counts, and their columns of ``s.census``: zombies,
#: skeletons, cows (crafter counts them in each chunk's set of objects)
CENSUS = (ZOMBIE, SKELETON, COW)
_CENSUS_COLUMN = np.array([-1, 2, 0, 1, -1, -1], dtype=np.int64)  # by kind


@perenv.rule
def census_column(kind: int) -> int:
    """The column of ``s.census`` counting ``kind`` (-1: a kind not counted)."""
    return _CENSUS_COLUMN[kind]


@perenv.rule
def count(s: Any, i: int, kind: int, x: int, y: int, by: int) -> None:
    """An object of ``kind`` at (x, y) enters (``by`` 1) or leaves (-1) its chunk's census."""
    column = _CENSUS_COLUMN[kind]
    if column >= 0:
        c = chunk_of(x, y)
        s.census[i, c, column] += by


@perenv.rule
def set_mat(s: Any, i: int, x: int, y: int, material: int) -> None:
    """Cell (x, y) becomes ``material``, its chunk's count of grass and path cells kept."""
    c = chunk_of(x, y)
    old = s.mat[i, x, y]
    s.grass[i, c] += int(material == GRASS) - int(old == GRASS)
    s.path[i, c] += int(material == PATH) - int(old == PATH)
    s.mat[i, x, y] = material


@perenv.rule(inline=False)
def count_materials(s: Any, i: int) -> None:
    """Every chunk's count of grass and path cells, from the material map."""
    for c in range(N_CHUNKS * N_CHUNKS):
        s.grass[i, c] = 0
        s.path[i, c] = 0
    for x in range(AREA):
        for y in range(AREA):
            m = s.mat[i, x, y]
            c = chunk_of(x, y)
            s.grass[i, c] += int(m == GRASS)
            s.path[i, c] += int(m == PATH)


@perenv.rule
def inside(x: int, y: int) -> bool:
    """``engine._inside((0, 0), pos, area)``."""
    return 0 <= x < AREA and 0 <= y < AREA


@perenv.rule
def chunk_of(x: int, y: int) -> int:
    """The index of the chunk holding cell (x, y): ``(x // 12) * 6 + y // 12``
    (``World.chunk_key``'s key, numbered)."""
    return (x // CHUNK) * N_CHUNKS + y // CHUNK


@perenv.rule
def enter_chunk(s: Any, i: int, c: int) -> None:
    """Chunk ``c`` joins the chunk list if it is not in it yet: crafter's chunks are a
    ``defaultdict`` whose keys appear when an object is first added to or moved into the
    chunk, and balancing visits them in that order."""
    n = s.n_chunks[i]
    for j in range(n):
        if s.chunk_order[i, j] == c:
            return
    if n < N_CHUNKS * N_CHUNKS:  # (always, in a consistent state: check_state)
        s.chunk_order[i, n] = c
        s.n_chunks[i] = n + 1


@perenv.rule
def occupant(s: Any, i: int, x: int, y: int) -> int:
    """The object map at (x, y) (0 outside the world: ``World.__getitem__`` gives None)."""
    if 0 <= x < AREA and 0 <= y < AREA:
        return np.int64(s.occ[i, x, y])
    return 0


@perenv.rule
def is_free(s: Any, i: int, x: int, y: int, walkable: np.ndarray) -> bool:
    """``Object.is_free``: inside the world, no object there, and a material in
    ``walkable`` (a mask over materials)."""
    if 0 <= x < AREA and 0 <= y < AREA:
        return s.occ[i, x, y] == 0 and walkable[s.mat[i, x, y]]
    return False


@perenv.rule(inline=False)
def add_object(s: Any, i: int, kind: int, x: int, y: int, direction: int) -> bool:
    """``World.add``: a new object of ``kind`` at (x, y), last in crafter's order, with its
    kind's health. False (and nothing added) when all :data:`CAPACITY` slots are taken."""
    k = np.int64(s.n_objects[i])
    if k >= CAPACITY:
        return False
    s.n_objects[i] = k + 1
    s.kind[i, k] = kind
    s.obj_x[i, k] = x
    s.obj_y[i, k] = y
    s.obj_health[i, k] = KIND_HEALTH[kind]
    s.obj_timer[i, k] = 0
    s.obj_dir[i, k] = direction
    s.occ[i, x, y] = k + 2
    enter_chunk(s, i, chunk_of(x, y))
    count(s, i, kind, x, y, 1)
    return True


@perenv.rule
def remove_object(s: Any, i: int, k: int) -> None:
    """``World.remove``: slot ``k`` leaves the world (its cell frees at once; the slot's
    fields stay readable until :func:`compact`, as a removed crafter object's do)."""
    kind = s.kind[i, k]
    if kind != NO_KIND:
        s.kind[i, k] = NO_KIND
        x, y = np.int64(s.obj_x[i, k]), np.int64(s.obj_y[i, k])
        s.occ[i, x, y] = 0
        count(s, i, kind, x, y, -1)


@perenv.rule
def move_object(s: Any, i: int, k: int, x: int, y: int) -> None:
    """``World.move`` of slot ``k`` to the free cell (x, y); a removed object stays put."""
    if s.kind[i, k] == NO_KIND:
        return
    ox, oy = np.int64(s.obj_x[i, k]), np.int64(s.obj_y[i, k])
    s.occ[i, ox, oy] = 0
    s.occ[i, x, y] = k + 2
    s.obj_x[i, k] = x
    s.obj_y[i, k] = y
    c = chunk_of(x, y)
    if c != chunk_of(ox, oy):
        enter_chunk(s, i, c)
        kind = s.kind[i, k]
        count(s, i, kind, ox, oy, -1)
        count(s, i, kind, x, y, 1)


@perenv.rule(inline=False)
def compact(s: Any, i: int) -> None:
    """Close the holes removed objects left in the slots, keeping the order (crafter's
    list keeps its holes; only the order matters): after each step."""
    n = s.n_objects[i]
    j = 0
    for k in range(n):
        if s.kind[i, k] == NO_KIND:
            continue
        if j != k:
            s.kind[i, j] = s.kind[i, k]
            s.obj_x[i, j] = s.obj_x[i, k]
            s.obj_y[i, j] = s.obj_y[i, k]
            s.obj_health[i, j] = s.obj_health[i, k]
            s.obj_timer[i, j] = s.obj_timer[i, k]
            s.obj_dir[i, j] = s.obj_dir[i, k]
            s.occ[i, s.obj_x[i, j], s.obj_y[i, j]] = j + 2
        j += 1
    for k in range(j, n):
        s.kind[i, k] = NO_KIND
    s.n_objects[i] = j
