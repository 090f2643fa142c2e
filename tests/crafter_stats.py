"""Statistics of worlds and episodes, BatchCrafter's and the ``crafter`` package's own (its
own random streams: no state or draw shared), and the two-sample z-scores that compare them.

World statistics: per world, the cells of each material and the cows, zombies and
skeletons it starts with. Episode statistics: per episode of a policy, its length, its
return and whether it unlocked each achievement. A policy sees what both games show the
same way: the materials around the player, the facing cell, the inventory (:class:`View`).
"""

from __future__ import annotations

from dataclasses import dataclass

import crafter
import numpy as np
from crafter import objects

from batchenv.envs.crafter import BatchCrafter
from batchenv.envs.crafter.data import ACHIEVEMENTS, DIR_X, DIR_Y, ITEMS, MATERIALS

WORLD_METRICS = (*MATERIALS[1:], "cows", "zombies", "skeletons")
_KINDS = {"cows": (objects.Cow, 1), "zombies": (objects.Zombie, 2),
          "skeletons": (objects.Skeleton, 3)}


def crafter_worlds(count: int, seed: int = 0) -> np.ndarray:
    """``(count, metrics)``: crafter's own worlds (``Env(seed=...).reset()``)."""
    out = np.zeros((count, len(WORLD_METRICS)))
    for k in range(count):
        env = crafter.Env(seed=seed + k)
        env._obs = lambda: None  # (the image is not needed)
        env.reset()
        world = env._world
        out[k, :len(MATERIALS) - 1] = np.bincount(world._mat_map.ravel(),
                                                  minlength=len(MATERIALS))[1:]
        for j, name in enumerate(("cows", "zombies", "skeletons")):
            out[k, len(MATERIALS) - 1 + j] = sum(isinstance(o, _KINDS[name][0])
                                                 for o in world.objects)
    return out


def our_worlds(count: int, seed: int = 0) -> np.ndarray:
    """``(count, metrics)``: BatchCrafter's worlds, seeds ``seed .. seed + count - 1``."""
    env = BatchCrafter(count)  # (the class the other tests compile: pixels)
    env.reset(seed=seed)
    st = env.get_state()
    out = np.zeros((count, len(WORLD_METRICS)))
    for k in range(count):
        out[k, :len(MATERIALS) - 1] = np.bincount(st["mat"][k].ravel(),
                                                  minlength=len(MATERIALS))[1:]
        kinds = st["kind"][k][:st["n_objects"][k]]
        for j, name in enumerate(("cows", "zombies", "skeletons")):
            out[k, len(MATERIALS) - 1 + j] = (kinds == _KINDS[name][1]).sum()
    return out


def z_scores(a: np.ndarray, b: np.ndarray, rates: slice = slice(0, 0)) -> np.ndarray:
    """Two-sample z of the means, per column (0 where both columns are constant): Welch's,
    and for the columns ``rates`` (0/1 outcomes: achievements unlocked) the two-proportion
    test's, with the pooled rate (a rare outcome never seen in the smaller sample would
    make Welch's z large by chance: its variance there is 0)."""
    se = np.sqrt(a.var(axis=0, ddof=1) / len(a) + b.var(axis=0, ddof=1) / len(b))
    pooled = (a[:, rates].sum(axis=0) + b[:, rates].sum(axis=0)) / (len(a) + len(b))
    se[rates] = np.sqrt(pooled * (1 - pooled) * (1 / len(a) + 1 / len(b)))
    diff = a.mean(axis=0) - b.mean(axis=0)
    return np.divide(diff, se, out=np.zeros_like(diff), where=se > 0)


# ----------------------------------------------------------------------------- episodes
@dataclass
class View:
    """What a policy sees of each game, the same in both: the material map around the
    player (``(9, 9)``, [dx + 4, dy + 4], 0 outside), the facing cell's material, whether
    an object is there, the inventory (data.ITEMS' order)."""

    near: np.ndarray
    facing: int
    blocked: bool
    inventory: np.ndarray


def scripted(view: View, rng: np.random.Generator) -> int:
    """A simple crafter player: collects what it faces (trees, water, stone and coal with a
    pickaxe), places a table with wood, makes pickaxes and swords at a table, sleeps when
    tired, eats and fights what it faces, else walks (mostly toward trees)."""
    m = MATERIALS.index
    inv = dict(zip(ITEMS, view.inventory))
    table_near = (view.near[3:6, 3:6] == m("table")).any()
    if view.blocked:
        return 5  # do: hit or eat
    if view.facing in (m("tree"), m("water")) or (
            view.facing in (m("stone"), m("coal")) and inv["wood_pickaxe"]) or (
            view.facing == m("iron") and inv["stone_pickaxe"]):
        return 5
    if inv["energy"] < 3:
        return 6
    if table_near:
        if not inv["wood_pickaxe"] and inv["wood"] >= 1:
            return 11
        if not inv["wood_sword"] and inv["wood"] >= 1:
            return 14
        if not inv["stone_pickaxe"] and inv["wood"] >= 1 and inv["stone"] >= 1:
            return 12
    elif inv["wood"] >= 2 and view.facing in (m("grass"), m("sand"), m("path")):
        return 8  # place a table
    if inv["sapling"] and view.facing == m("grass") and rng.random() < 0.3:
        return 10
    if rng.random() < 0.15:
        return 5
    trees = np.argwhere(view.near == m("tree"))
    if len(trees) and rng.random() < 0.7:
        dx, dy = trees[rng.integers(len(trees))] - 4
        if abs(dx) >= abs(dy):
            return 1 if dx < 0 else 2
        return 3 if dy < 0 else 4
    return int(rng.integers(1, 5))


def random_policy(view: View, rng: np.random.Generator) -> int:
    return int(rng.integers(0, 17))


def _near(mat: np.ndarray, x: int, y: int) -> np.ndarray:
    out = np.zeros((9, 9), dtype=np.int64)
    x0, y0 = max(x - 4, 0), max(y - 4, 0)
    x1, y1 = min(x + 5, 64), min(y + 5, 64)
    out[x0 - x + 4:x1 - x + 4, y0 - y + 4:y1 - y + 4] = mat[x0:x1, y0:y1]
    return out


def crafter_episodes(policy, count: int, seed: int = 0) -> np.ndarray:
    """``(count, 2 + 22)``: length, return and unlocked achievements (0/1) of crafter's own
    episodes under ``policy``."""
    rng = np.random.default_rng(seed)
    out = np.zeros((count, 2 + len(ACHIEVEMENTS)))
    env = crafter.Env(seed=seed)
    env._obs = lambda: None
    for k in range(count):
        env.reset()
        done, ret, length = False, 0.0, 0
        while not done:
            p = env._player
            (fx, fy) = p.pos + p.facing
            material, obj = env._world[fx, fy]
            view = View(_near(env._world._mat_map, *p.pos),
                        MATERIALS.index(material) if material else 0, obj is not None,
                        np.array([p.inventory[name] for name in ITEMS]))
            _, reward, done, info = env.step(policy(view, rng))
            ret += reward
            length += 1
        out[k, 0], out[k, 1] = length, ret
        out[k, 2:] = [info["achievements"][name] > 0 for name in ACHIEVEMENTS]
    return out


def our_episodes(policy, count: int, seed: int = 0, **kwargs) -> np.ndarray:
    """The same for BatchCrafter: the first episode of each of ``count`` envs."""
    rng = np.random.default_rng(seed + 1)
    env = BatchCrafter(count, **kwargs)
    env.reset(seed=seed)
    out = np.zeros((count, 2 + len(ACHIEVEMENTS)))
    ret = np.zeros(count)
    length = np.zeros(count, dtype=int)
    finished = np.zeros(count, dtype=bool)
    st = env.state  # (the arrays themselves: read only)
    while not finished.all():
        actions = np.zeros(count, dtype=np.int64)
        for i in np.flatnonzero(~finished):
            x, y, f = int(st.player_x[i]), int(st.player_y[i]), int(st.facing[i])
            fx, fy = x + DIR_X[f], y + DIR_Y[f]
            inside = 0 <= fx < 64 and 0 <= fy < 64
            view = View(_near(st.mat[i], x, y), int(st.mat[i, fx, fy]) if inside else 0,
                        inside and st.occ[i, fx, fy] != 0, st.inventory[i].copy())
            actions[i] = policy(view, rng)
        _, reward, term, trunc, info = env.step(actions)
        live = ~finished
        ret[live] += reward[live]
        length[live] += 1
        ended = live & (term | trunc)
        out[ended, 0], out[ended, 1] = length[ended], ret[ended]
        out[ended, 2:] = info["achievements"][ended] > 0
        finished |= ended
    return out
