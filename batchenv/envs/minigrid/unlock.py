"""MiniGrid Unlock: open the locked door with the key of its colour.

## Description
``minigrid``'s ``UnlockEnv`` batched (a ``RoomGrid`` of two 6x6 rooms side by side, 11x6):
the door between them is locked, in a random colour; the key of that colour lies in the
left room with the agent.

## Action Space
``Discrete(7)``: 0 left, 1 right, 2 forward, 3 pickup, 4 drop, 5 toggle, 6 done.

## Observation Space
``Box(0, 255, (7, 7, 3), uint8)``: the egocentric partial view as ``ImgObsWrapper`` gives
it (``observation="full"``: ``FullyObsWrapper``'s ``(11, 6, 3)`` grid encoding).

## Rewards
``1 - 0.9 * step_count / max_steps`` when a toggle leaves the door open, 0 otherwise.

## Starting State
``RoomGrid._gen_grid`` then ``UnlockEnv._gen_grid`` draw for draw, from the env's own
stream: the door's row, its colour, the key's cell (not next to the grid's centre, where
``RoomGrid`` parks the agent meanwhile), the agent's cell and direction (redrawn until it
faces an empty cell or a wall).

## Episode End
Terminated when the door is open after a toggle; truncated after ``max_steps = 288``.

## Arguments
``observation`` ("image" | "full").

## Version History
- v0: as ``minigrid`` 3.x ``MiniGrid-Unlock-v0``.
"""

from __future__ import annotations

from typing import Any

from batchenv.envs.minigrid import common
from batchenv.envs.minigrid.base import BatchMiniGrid

ROOM = 6  # RoomGrid's room_size for Unlock


class BatchUnlock(BatchMiniGrid):
    mission = "open the door"

    def __init__(self, num_envs: int | None = None, **kwargs: Any) -> None:
        super().__init__(num_envs, width=2 * (ROOM - 1) + 1, height=ROOM,
                         max_steps=8 * ROOM * ROOM, **kwargs)

    @staticmethod
    def reset_env(p, s, i):  # type: ignore[no-untyped-def]
        w, h = p.width, p.height
        common.wall_rect(s, i, 0, 0, ROOM, ROOM)
        common.wall_rect(s, i, ROOM - 1, 0, ROOM, ROOM)
        door_y = common.integers(s, i, 1, ROOM - 1)  # room (0, 0)'s right door
        s.agent_x[i] = 1 * (ROOM - 1) + ROOM // 2  # RoomGrid parks it at the centre
        s.agent_y[i] = ROOM // 2
        s.agent_dir[i] = 0
        color = common.integers(s, i, 0, 6)
        common.put(s, i, ROOM - 1, door_y, common.DOOR, color, common.LOCKED)
        s.target_x[i] = ROOM - 1
        s.target_y[i] = door_y
        xy = common.place_obj_not_next_to_agent(s, i, w, h, 0, 0, ROOM, ROOM)
        common.put(s, i, xy // 65536, xy % 65536, common.KEY, color, 0)
        while True:  # RoomGrid.place_agent: until it faces an empty cell or a wall
            common.place_agent(s, i, w, h, 0, 0, ROOM, ROOM)
            d = s.agent_dir[i]
            t = s.grid[i, s.agent_x[i] + common.DIR_DX[d], s.agent_y[i] + common.DIR_DY[d], 0]
            if t == common.EMPTY or t == common.WALL:
                break

    @staticmethod
    def step_env(p, s, i, action):  # type: ignore[no-untyped-def]
        reward, terminated = common.step_env(p, s, i, action)
        if action == common.TOGGLE and \
                s.grid[i, s.target_x[i], s.target_y[i], 2] == common.OPEN:
            reward = 1.0 - 0.9 * (s.step_count[i] / p.max_steps)
            terminated = True
        return reward, terminated

    def missions(self) -> tuple[str, ...]:
        return (self.mission,) * self.num_envs
