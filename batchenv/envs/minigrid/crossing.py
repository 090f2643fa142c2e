"""MiniGrid LavaCrossing and SimpleCrossing: rivers of lava (or walls), one opening each.

## Description
``minigrid``'s ``CrossingEnv`` batched: an odd ``size`` room crossed by ``num_crossings``
full-length rivers (vertical or horizontal, at even rows / columns) of lava
(``LavaCrossing``) or wall (``SimpleCrossing``); one opening per river on a path from the
agent at ``(1, 1)`` (facing right) to the goal at ``(size - 2, size - 2)``.

## Action Space
``Discrete(7)``: 0 left, 1 right, 2 forward, 3 pickup, 4 drop, 5 toggle, 6 done.

## Observation Space
``Box(0, 255, (7, 7, 3), uint8)``: the egocentric partial view as ``ImgObsWrapper`` gives
it (``observation="full"``: ``FullyObsWrapper``'s ``(size, size, 3)`` grid encoding).

## Rewards
``1 - 0.9 * step_count / max_steps`` on reaching the goal, 0 otherwise (lava included).

## Starting State
``minigrid``'s ``_gen_grid`` step for step, from the env's own stream: a uniformly random
choice of ``num_crossings`` rivers among the candidate rows and columns (a partial
Fisher-Yates shuffle), a random order of the crossings along the path, a uniform opening
in each.

## Episode End
Terminated on the goal or in lava; truncated after ``max_steps = 4 * size * size``.

## Arguments
``size`` (odd, default 9), ``num_crossings`` (default 1), ``obstacle`` ("lava" | "wall"),
``observation`` ("image" | "full").

## Version History
- v0: as ``minigrid`` 3.x ``MiniGrid-LavaCrossingS*N*-v0`` / ``MiniGrid-SimpleCrossingS*N*-v0``.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from batchenv.envs.minigrid import common
from batchenv.envs.minigrid.base import BatchMiniGrid, Params

CrossingParams = namedtuple("CrossingParams", ["width", "height", "max_steps",
                                               "see_through_walls", "num_crossings", "lava"])
assert CrossingParams._fields[:len(Params._fields)] == Params._fields


class BatchCrossing(BatchMiniGrid):
    def __init__(self, num_envs: int | None = None, *, size: int = 9, num_crossings: int = 1,
                 obstacle: str = "lava", **kwargs: Any) -> None:
        if not isinstance(size, int) or size < 5 or size % 2 == 0:
            raise ValueError(f"size must be an odd int >= 5, got {size!r}")
        if obstacle not in ("lava", "wall"):
            raise ValueError(f"obstacle must be 'lava' or 'wall', got {obstacle!r}")
        candidates = 2 * len(range(2, size - 2, 2))
        if not isinstance(num_crossings, int) or not 1 <= num_crossings <= candidates:
            raise ValueError(f"num_crossings must be an int in [1, {candidates}] for size "
                             f"{size}, got {num_crossings!r}")
        self.size, self.num_crossings, self.obstacle = size, num_crossings, obstacle
        self.mission = ("avoid the lava and get to the green goal square" if obstacle == "lava"
                        else "find the opening and get to the green goal square")
        super().__init__(num_envs, width=size, height=size, max_steps=4 * size * size,
                         **kwargs)
        base = self.kernel_params
        self.kernel_params = CrossingParams(base.width, base.height, base.max_steps,
                                            base.see_through_walls, num_crossings,
                                            obstacle == "lava")

    @staticmethod
    def reset_env(p, s, i):  # type: ignore[no-untyped-def]
        w, h = p.width, p.height
        common.wall_rect(s, i, 0, 0, w, h)
        s.agent_x[i] = 1
        s.agent_y[i] = 1
        s.agent_dir[i] = 0
        common.put(s, i, w - 2, h - 2, common.GOAL, common.GREEN, 0)
        k = len(range(2, h - 2, 2))
        # candidates 0..k-1: vertical rivers at x = 2 + 2c; k..2k-1: horizontal at y
        cand = np.arange(2 * k)
        for a in range(p.num_crossings):  # the first num_crossings of a shuffle
            b = common.integers(s, i, a, 2 * k)
            cand[a], cand[b] = cand[b], cand[a]
        chosen = np.sort(cand[:p.num_crossings])
        n_v = 0
        for c in chosen:
            if c < k:
                n_v += 1
        limits_v = np.empty(n_v + 2, np.int64)  # [0, sorted vertical rivers..., h - 1]
        limits_h = np.empty(p.num_crossings - n_v + 2, np.int64)
        limits_v[0] = 0
        limits_h[0] = 0
        limits_v[n_v + 1] = h - 1
        limits_h[p.num_crossings - n_v + 1] = w - 1
        for a in range(p.num_crossings):
            c = chosen[a]
            if c < k:
                limits_v[a + 1] = 2 + 2 * c
            else:
                limits_h[a - n_v + 1] = 2 + 2 * (c - k)
        t = common.LAVA if p.lava else common.WALL
        col = common.RED if p.lava else common.GREY
        for a in range(1, p.num_crossings - n_v + 1):
            for x in range(1, w - 1):
                common.put(s, i, x, limits_h[a], t, col, 0)
        for a in range(1, n_v + 1):
            for y in range(1, h - 1):
                common.put(s, i, limits_v[a], y, t, col, 0)
        # the order in which the path crosses: n_v horizontal moves, the rest vertical
        path = np.zeros(p.num_crossings, np.int64)
        path[:n_v] = 1  # 1: cross a vertical river (minigrid's h step)
        for a in range(p.num_crossings - 1, 0, -1):
            b = common.integers(s, i, 0, a + 1)
            path[a], path[b] = path[b], path[a]
        room_i = 0
        room_j = 0
        for a in range(p.num_crossings):
            if path[a] == 1:
                x = limits_v[room_i + 1]
                y = common.integers(s, i, limits_h[room_j] + 1, limits_h[room_j + 1])
                room_i += 1
            else:
                x = common.integers(s, i, limits_v[room_i] + 1, limits_v[room_i + 1])
                y = limits_h[room_j + 1]
                room_j += 1
            common.put(s, i, x, y, common.EMPTY, 0, 0)
