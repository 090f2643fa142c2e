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

from typing import Any

import numpy as np

from batchenv import perenv
from batchenv.envs.minigrid import common
from batchenv.envs.minigrid.base import BatchMiniGrid

#: the most candidate rivers a size may have: the chosen ones are bits of one int64
MAX_CANDIDATES = 62


class BatchCrossing(BatchMiniGrid):
    kernel_params = (*BatchMiniGrid.kernel_params, "num_crossings", "lava")

    def __init__(self, num_envs: int | None = None, *, size: int = 9, num_crossings: int = 1,
                 obstacle: str = "lava", **kwargs: Any) -> None:
        if not isinstance(size, int) or size < 5 or size % 2 == 0 \
                or 2 * len(range(2, size - 2, 2)) > MAX_CANDIDATES:
            raise ValueError(f"size must be an odd int in [5, {2 * (MAX_CANDIDATES // 2) + 3}], "
                             f"got {size!r}")
        if obstacle not in ("lava", "wall"):
            raise ValueError(f"obstacle must be 'lava' or 'wall', got {obstacle!r}")
        candidates = 2 * len(range(2, size - 2, 2))
        if not isinstance(num_crossings, int) or not 1 <= num_crossings <= candidates:
            raise ValueError(f"num_crossings must be an int in [1, {candidates}] for size "
                             f"{size}, got {num_crossings!r}")
        self.size, self.num_crossings, self.obstacle = size, num_crossings, obstacle
        self.candidates = candidates
        self.lava = obstacle == "lava"
        self.mission = ("avoid the lava and get to the green goal square" if self.lava
                        else "find the opening and get to the green goal square")
        super().__init__(num_envs, width=size, height=size, max_steps=4 * size * size,
                         **kwargs)

    def family_fields(self) -> list[tuple[Any, ...]]:
        # the generator's work array: the candidate rivers, partly shuffled
        return [("rivers", np.int64, (self.candidates,))]

    @staticmethod
    def reset_env(p, s, i):  # type: ignore[no-untyped-def]
        common.clear_grid(s, i)
        w, h = p.width, p.height
        common.wall_rect(s, i, 0, 0, w, h)
        s.agent_x[i] = 1
        s.agent_y[i] = 1
        s.agent_dir[i] = 0
        common.put(s, i, w - 2, h - 2, common.GOAL, common.GREEN, 0)
        k = (h - 3) // 2  # len(range(2, h - 2, 2))
        # candidates 0..k-1: vertical rivers at x = 2 + 2c; k..2k-1: horizontal at y
        n = p.num_crossings
        for a in range(2 * k):
            s.rivers[i, a] = a
        for a in range(n):  # the first num_crossings of a shuffle
            b = common.integers(s, i, a, 2 * k)
            c = s.rivers[i, a]
            s.rivers[i, a] = s.rivers[i, b]
            s.rivers[i, b] = c
        chosen = 0  # bit c: candidate c is a river
        for a in range(n):
            chosen |= 1 << s.rivers[i, a]
        n_v = 0
        for c in range(k):
            n_v += (chosen >> c) & 1
        t = common.LAVA if p.lava else common.WALL
        col = common.RED if p.lava else common.GREY
        for a in range(1, n - n_v + 1):
            y = river_limit(chosen, k, k, a, w - 1)
            for x in range(1, w - 1):
                common.put(s, i, x, y, t, col, 0)
        for a in range(1, n_v + 1):
            x = river_limit(chosen, 0, k, a, h - 1)
            for y in range(1, h - 1):
                common.put(s, i, x, y, t, col, 0)
        # the order in which the path crosses: n_v moves across vertical rivers (bit 1,
        # minigrid's h step), the rest across horizontal ones, shuffled (Fisher-Yates)
        path = (1 << n_v) - 1
        for a in range(n - 1, 0, -1):
            b = common.integers(s, i, 0, a + 1)
            if ((path >> a) & 1) != ((path >> b) & 1):
                path ^= (1 << a) | (1 << b)
        room_i = 0
        room_j = 0
        for a in range(n):
            if (path >> a) & 1:
                x = river_limit(chosen, 0, k, room_i + 1, h - 1)
                y = common.integers(s, i, river_limit(chosen, k, k, room_j, w - 1) + 1,
                                    river_limit(chosen, k, k, room_j + 1, w - 1))
                room_i += 1
            else:
                x = common.integers(s, i, river_limit(chosen, 0, k, room_i, h - 1) + 1,
                                    river_limit(chosen, 0, k, room_i + 1, h - 1))
                y = river_limit(chosen, k, k, room_j + 1, w - 1)
                room_j += 1
            common.put(s, i, x, y, common.EMPTY, 0, 0)


@perenv.rule(inline=False)
def river_limit(chosen, first, k, m, last):  # type: ignore[no-untyped-def]
    """The ``m``-th limit of one direction's rooms: 0, then the chosen rivers among
    candidates ``[first, first + k)`` in order (candidate ``first + c`` at ``2 + 2c``),
    then ``last`` (the far wall)."""
    if m == 0:
        return 0
    seen = 0
    for c in range(k):
        if (chosen >> (first + c)) & 1:
            seen += 1
            if seen == m:
                return 2 + 2 * c
    return last
