"""MiniGrid Empty: an empty room, a goal in the far corner.

## Description
``minigrid``'s ``EmptyEnv`` batched: a ``size`` x ``size`` room walled round, the goal at
``(size - 2, size - 2)``; the agent starts at ``(1, 1)`` facing right, or (``-Random-``
ids) at a random empty cell and direction.

## Action Space
``Discrete(7)``: 0 left, 1 right, 2 forward, 3 pickup, 4 drop, 5 toggle, 6 done
(``minigrid``'s ``Actions``; only turning and moving forward do anything here).

## Observation Space
(Empty sees through walls, as ``minigrid``'s ``EmptyEnv``.)
``Box(0, 255, (7, 7, 3), uint8)``: the egocentric partial view as ``ImgObsWrapper`` gives
it (``observation="full"``: ``FullyObsWrapper``'s ``(size, size, 3)`` grid encoding).

## Rewards
``1 - 0.9 * step_count / max_steps`` on reaching the goal, 0 otherwise.

## Starting State
As above; ``Random`` ids draw the position (x then y, rejection sampling over the room)
and the direction from the env's own stream.

## Episode End
Terminated on the goal; truncated after ``max_steps = 4 * size * size`` steps.

## Arguments
``size`` (default 8), ``random_start`` (default False), ``observation`` ("image" | "full").

## Version History
- v0: as ``minigrid`` 3.x ``MiniGrid-Empty-*-v0``.
"""

from __future__ import annotations

from typing import Any

from batchenv.envs.minigrid import common
from batchenv.envs.minigrid.base import BatchMiniGrid


class BatchEmpty(BatchMiniGrid):
    mission = "get to the green goal square"
    kernel_params = (*BatchMiniGrid.kernel_params, "random_start")

    def __init__(self, num_envs: int | None = None, *, size: int = 8,
                 random_start: bool = False, **kwargs: Any) -> None:
        self.size = size
        self.random_start = bool(random_start)
        super().__init__(num_envs, width=size, height=size, max_steps=4 * size * size,
                         see_through_walls=True, **kwargs)

    @staticmethod
    def reset_env(p, s, i):  # type: ignore[no-untyped-def]
        common.clear_grid(s, i)
        common.wall_rect(s, i, 0, 0, p.width, p.height)
        common.put(s, i, p.width - 2, p.height - 2, common.GOAL, common.GREEN, 0)
        if p.random_start:
            common.place_agent(s, i, p.width, p.height, 0, 0, p.width, p.height)
        else:
            s.agent_x[i] = 1
            s.agent_y[i] = 1
            s.agent_dir[i] = 0
