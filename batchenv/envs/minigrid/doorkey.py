"""MiniGrid DoorKey: fetch the key, unlock the door, reach the goal.

## Description
``minigrid``'s ``DoorKeyEnv`` batched: a ``size`` x ``size`` room split by a vertical wall
with a locked yellow door; the yellow key lies on the agent's side, the goal in the far
corner of the other.

## Action Space
``Discrete(7)``: 0 left, 1 right, 2 forward, 3 pickup, 4 drop, 5 toggle, 6 done.

## Observation Space
``Box(0, 255, (7, 7, 3), uint8)``: the egocentric partial view as ``ImgObsWrapper`` gives
it (``observation="full"``: ``FullyObsWrapper``'s ``(size, size, 3)`` grid encoding).

## Rewards
``1 - 0.9 * step_count / max_steps`` on reaching the goal, 0 otherwise.

## Starting State
``minigrid``'s ``_gen_grid`` draw for draw, from the env's own stream (so the layouts
follow minigrid's distribution, not its exact sequence): the wall's column in
``[2, size - 2)``, the agent (x, y, direction) left of it, the door's row in
``[1, size - 2)``, the key left of the wall.

## Episode End
Terminated on the goal; truncated after ``max_steps = 10 * size * size`` steps.

## Arguments
``size`` (default 8), ``observation`` ("image" | "full").

## Version History
- v0: as ``minigrid`` 3.x ``MiniGrid-DoorKey-*-v0``.
"""

from __future__ import annotations

from typing import Any

from batchenv.envs.minigrid import common
from batchenv.envs.minigrid.base import BatchMiniGrid


class BatchDoorKey(BatchMiniGrid):
    mission = "use the key to open the door and then get to the goal"

    def __init__(self, num_envs: int | None = None, *, size: int = 8, **kwargs: Any) -> None:
        self.size = size
        super().__init__(num_envs, width=size, height=size, max_steps=10 * size * size,
                         **kwargs)

    @staticmethod
    def reset_env(p, s, i):  # type: ignore[no-untyped-def]
        common.clear_grid(s, i)
        w, h = p.width, p.height
        common.wall_rect(s, i, 0, 0, w, h)
        common.put(s, i, w - 2, h - 2, common.GOAL, common.GREEN, 0)
        split = common.integers(s, i, 2, w - 2)
        common.vert_wall(s, i, split, 0, h)
        common.place_agent(s, i, w, h, 0, 0, split, h)
        door = common.integers(s, i, 1, w - 2)
        common.put(s, i, split, door, common.DOOR, common.YELLOW, common.LOCKED)
        xy = common.place_obj(s, i, w, h, 0, 0, split, h)
        common.put(s, i, xy // 65536, xy % 65536, common.KEY, common.YELLOW, 0)
