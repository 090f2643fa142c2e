"""MiniGrid LavaGap: cross a column of lava through its one gap.

## Description
``minigrid``'s ``LavaGapEnv`` batched: a ``size`` x ``size`` room with a vertical strip
of lava that has one gap; the agent starts at ``(1, 1)`` facing right, the goal is at
``(size - 2, size - 2)``. Stepping into lava ends the episode with reward 0.

## Action Space
``Discrete(7)``: 0 left, 1 right, 2 forward, 3 pickup, 4 drop, 5 toggle, 6 done.

## Observation Space
``Box(0, 255, (7, 7, 3), uint8)``: the egocentric partial view as ``ImgObsWrapper`` gives
it (``observation="full"``: ``FullyObsWrapper``'s ``(size, size, 3)`` grid encoding).

## Rewards
``1 - 0.9 * step_count / max_steps`` on reaching the goal, 0 otherwise (lava included).

## Starting State
The gap's column in ``[2, size - 2)`` and row in ``[1, size - 1)``, drawn from the env's
own stream in ``minigrid``'s order.

## Episode End
Terminated on the goal or in lava; truncated after ``max_steps = 4 * size * size``.

## Arguments
``size`` (default 5), ``observation`` ("image" | "full").

## Version History
- v0: as ``minigrid`` 3.x ``MiniGrid-LavaGapS*-v0``.
"""

from __future__ import annotations

from typing import Any

from batchenv.envs.minigrid import common
from batchenv.envs.minigrid.base import BatchMiniGrid


class BatchLavaGap(BatchMiniGrid):
    mission = "avoid the lava and get to the green goal square"

    def __init__(self, num_envs: int | None = None, *, size: int = 5, **kwargs: Any) -> None:
        if not isinstance(size, int) or size < 5:
            raise ValueError(f"size must be an int >= 5, got {size!r}")
        self.size = size
        super().__init__(num_envs, width=size, height=size, max_steps=4 * size * size,
                         **kwargs)

    @staticmethod
    def reset_env(p, s, i):  # type: ignore[no-untyped-def]
        common.clear_grid(s, i)
        w, h = p.width, p.height
        common.wall_rect(s, i, 0, 0, w, h)
        s.agent_x[i] = 1
        s.agent_y[i] = 1
        s.agent_dir[i] = 0
        common.put(s, i, w - 2, h - 2, common.GOAL, common.GREEN, 0)
        gap_x = common.integers(s, i, 2, w - 2)
        gap_y = common.integers(s, i, 1, h - 1)
        for y in range(1, h - 1):
            common.put(s, i, gap_x, y, common.LAVA, common.RED, 0)
        common.put(s, i, gap_x, gap_y, common.EMPTY, 0, 0)
