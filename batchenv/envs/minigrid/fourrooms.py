"""MiniGrid FourRooms: four rooms joined by one gap in each inner wall.

## Description
``minigrid``'s ``FourRoomsEnv`` batched: a 19x19 grid split into four rooms; each of the
four inner wall segments has one gap at a random place; the agent and the goal are placed
at random empty cells.

## Action Space
``Discrete(7)``: 0 left, 1 right, 2 forward, 3 pickup, 4 drop, 5 toggle, 6 done.

## Observation Space
``Box(0, 255, (7, 7, 3), uint8)``: the egocentric partial view as ``ImgObsWrapper`` gives
it (``observation="full"``: ``FullyObsWrapper``'s ``(19, 19, 3)`` grid encoding).

## Rewards
``1 - 0.9 * step_count / max_steps`` on reaching the goal, 0 otherwise.

## Starting State
``minigrid``'s ``_gen_grid`` draw for draw, from the env's own stream: the gaps, the
agent (x, y, direction), then the goal.

## Episode End
Terminated on the goal; truncated after ``max_steps = 100`` steps.

## Arguments
``max_steps`` (default 100), ``observation`` ("image" | "full").

## Version History
- v0: as ``minigrid`` 3.x ``MiniGrid-FourRooms-v0``.
"""

from __future__ import annotations

from typing import Any

from batchenv.envs.minigrid import common
from batchenv.envs.minigrid.base import BatchMiniGrid


class BatchFourRooms(BatchMiniGrid):
    mission = "reach the goal"

    def __init__(self, num_envs: int | None = None, *, max_steps: int = 100,
                 **kwargs: Any) -> None:
        super().__init__(num_envs, width=19, height=19, max_steps=max_steps, **kwargs)

    @staticmethod
    def reset_env(p, s, i):  # type: ignore[no-untyped-def]
        common.clear_grid(s, i)
        w, h = p.width, p.height
        common.horz_wall(s, i, 0, 0, w)
        common.horz_wall(s, i, 0, h - 1, w)
        common.vert_wall(s, i, 0, 0, h)
        common.vert_wall(s, i, w - 1, 0, h)
        room_w = w // 2
        room_h = h // 2
        for j in range(2):
            for k in range(2):
                x_left = k * room_w
                y_top = j * room_h
                x_right = x_left + room_w
                y_bottom = y_top + room_h
                if k + 1 < 2:
                    common.vert_wall(s, i, x_right, y_top, room_h)
                    y = common.integers(s, i, y_top + 1, y_bottom)
                    common.put(s, i, x_right, y, common.EMPTY, 0, 0)
                if j + 1 < 2:
                    common.horz_wall(s, i, x_left, y_bottom, room_w)
                    x = common.integers(s, i, x_left + 1, x_right)
                    common.put(s, i, x, y_bottom, common.EMPTY, 0, 0)
        common.place_agent(s, i, w, h, 0, 0, w, h)
        xy = common.place_obj(s, i, w, h, 0, 0, w, h)
        common.put(s, i, xy // 65536, xy % 65536, common.GOAL, common.GREEN, 0)
