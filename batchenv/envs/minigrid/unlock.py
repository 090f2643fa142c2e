"""MiniGrid Unlock and UnlockPickup: open the locked door with the key of its colour (and
pick up the box behind it).

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

UnlockPickup (``BatchUnlockPickup``): a box of a random colour in the right room (placed
first, after the door's row); the reward comes on picking it up; the mission names its
colour (``missions()``, per env).

BlockedUnlockPickup (``BatchBlockedUnlockPickup``): as UnlockPickup with a ball of a
random colour in front of the door, ``max_steps = 576``.

## Version History
- v0: as ``minigrid`` 3.x ``MiniGrid-Unlock-v0``, ``MiniGrid-UnlockPickup-v0`` and
  ``MiniGrid-BlockedUnlockPickup-v0``.
"""

from __future__ import annotations

from typing import Any

from batchenv import perenv
from batchenv.envs.minigrid import common
from batchenv.envs.minigrid.base import BatchMiniGrid

ROOM = 6  # RoomGrid's room_size for Unlock


class BatchUnlock(BatchMiniGrid):
    mission = "open the door"
    steps_per_cell = 8  # max_steps = steps_per_cell * room_size ** 2

    def __init__(self, num_envs: int | None = None, **kwargs: Any) -> None:
        super().__init__(num_envs, width=2 * (ROOM - 1) + 1, height=ROOM,
                         max_steps=self.steps_per_cell * ROOM * ROOM, **kwargs)

    @staticmethod
    def reset_env(p, s, i):  # type: ignore[no-untyped-def]
        common.clear_grid(s, i)
        door_y = rooms(s, i)
        locked_door_key_agent(p, s, i, door_y, False)

    @staticmethod
    def step_env(p, s, i, action):  # type: ignore[no-untyped-def]
        reward, terminated = common.step_env(p, s, i, action)
        if action == common.TOGGLE and \
                s.grid[i, s.target_x[i], s.target_y[i], 2] == common.OPEN:
            reward = 1.0 - 0.9 * (s.step_count[i] / p.max_steps)
            terminated = True
        return reward, terminated


class BatchUnlockPickup(BatchUnlock):
    mission = "pick up the {color} box"

    def __init__(self, num_envs: int | None = None, **kwargs: Any) -> None:
        super().__init__(num_envs, **kwargs)

    def missions(self) -> tuple[str, ...]:
        return tuple(f"pick up the {common.COLOR_NAMES[c]} box"
                     for c in self.state.target_color)

    @staticmethod
    def reset_env(p, s, i):  # type: ignore[no-untyped-def]
        common.clear_grid(s, i)
        door_y = rooms(s, i)
        color = common.rand_color(s, i)  # add_object(1, 0, kind="box")
        xy = common.place_obj_not_next_to_agent(s, i, p.width, p.height, ROOM - 1, 0,
                                                ROOM, ROOM)
        common.put(s, i, xy // 65536, xy % 65536, common.BOX, color, 0)
        s.target_color[i] = color
        locked_door_key_agent(p, s, i, door_y, False)

    @staticmethod
    def step_env(p, s, i, action):  # type: ignore[no-untyped-def]
        reward, terminated = common.step_env(p, s, i, action)
        if action == common.PICKUP and s.carry[i, 0] == common.BOX:  # the only box
            reward = 1.0 - 0.9 * (s.step_count[i] / p.max_steps)
            terminated = True
        return reward, terminated


class BatchBlockedUnlockPickup(BatchUnlockPickup):
    steps_per_cell = 16

    @staticmethod
    def reset_env(p, s, i):  # type: ignore[no-untyped-def]
        common.clear_grid(s, i)
        door_y = rooms(s, i)
        color = common.rand_color(s, i)
        xy = common.place_obj_not_next_to_agent(s, i, p.width, p.height, ROOM - 1, 0,
                                                ROOM, ROOM)
        common.put(s, i, xy // 65536, xy % 65536, common.BOX, color, 0)
        s.target_color[i] = color
        locked_door_key_agent(p, s, i, door_y, True)


@perenv.rule(inline=False)
def rooms(s, i):  # type: ignore[no-untyped-def]
    """RoomGrid._gen_grid for 1x2 rooms: walls, the door row, the agent parked at the
    centre; returns the door's row."""
    common.wall_rect(s, i, 0, 0, ROOM, ROOM)
    common.wall_rect(s, i, ROOM - 1, 0, ROOM, ROOM)
    door_y = common.integers(s, i, 1, ROOM - 1)  # room (0, 0)'s right door
    s.agent_x[i] = 1 * (ROOM - 1) + ROOM // 2
    s.agent_y[i] = ROOM // 2
    s.agent_dir[i] = 0
    return door_y


@perenv.rule(inline=False)
def locked_door_key_agent(p, s, i, door_y, blocked):  # type: ignore[no-untyped-def]
    """add_door(0, 0, 0, locked=True), (``blocked``: a ball of a random colour in front of
    the door,) add_object(0, 0, "key", door colour), place_agent(0, 0)."""
    w, h = p.width, p.height
    color = common.rand_color(s, i)
    common.put(s, i, ROOM - 1, door_y, common.DOOR, color, common.LOCKED)
    s.target_x[i] = ROOM - 1
    s.target_y[i] = door_y
    if blocked:
        common.put(s, i, ROOM - 2, door_y, common.BALL, common.rand_color(s, i), 0)
    xy = common.place_obj_not_next_to_agent(s, i, w, h, 0, 0, ROOM, ROOM)
    common.put(s, i, xy // 65536, xy % 65536, common.KEY, color, 0)
    while True:  # RoomGrid.place_agent: until it faces an empty cell or a wall
        common.place_agent(s, i, w, h, 0, 0, ROOM, ROOM)
        d = s.agent_dir[i]
        t = s.grid[i, s.agent_x[i] + common.DIR_DX[d], s.agent_y[i] + common.DIR_DY[d], 0]
        if t == common.EMPTY or t == common.WALL:
            break
