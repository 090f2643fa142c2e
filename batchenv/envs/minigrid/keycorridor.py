"""MiniGrid KeyCorridor: find the key, unlock the door, pick up the ball behind it.

## Description
``minigrid``'s ``KeyCorridorEnv`` batched: a ``RoomGrid`` of 3 columns by ``num_rows``
rooms of ``room_size`` cells (walls shared). The middle column is one corridor; a room
of the right column is locked (a door of a random colour) with a ball behind it, the key
of the door's colour lies in a room of the left column, and closed doors of random
colours join the rooms until every room can be reached from the agent's.

## Action Space
``Discrete(7)``: 0 left, 1 right, 2 forward, 3 pickup, 4 drop, 5 toggle, 6 done.

## Observation Space
``Box(0, 255, (7, 7, 3), uint8)``: the egocentric partial view as ``ImgObsWrapper`` gives
it (``observation="full"``: ``FullyObsWrapper``'s grid encoding).

## Rewards
``1 - 0.9 * step_count / max_steps`` on a pickup that leaves the agent carrying the ball,
0 otherwise.

## Starting State
``RoomGrid._gen_grid`` then ``KeyCorridorEnv._gen_grid`` draw for draw, from the env's own
stream: the door positions of every room, the locked room's row, the door's colour, the
ball's colour and cell, the key's room and cell (not next to the grid's centre, where
``RoomGrid`` parks the agent meanwhile), the agent's cell and direction in the corridor
(redrawn until it faces an empty cell or a wall), then ``connect_all``'s doors.

## Episode End
Terminated on picking up the ball; truncated after ``max_steps = 30 * room_size ** 2``.

## Arguments
``room_size`` (default 6), ``num_rows`` (default 3), ``observation`` ("image" | "full").
The mission names the ball's colour (``missions()``, per env).

## Version History
- v0: as ``minigrid`` 3.x ``MiniGrid-KeyCorridorS*R*-v0``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from batchenv import perenv
from batchenv.envs.minigrid import common
from batchenv.envs.minigrid.base import BatchMiniGrid

COLS = 3  # KeyCorridorEnv's RoomGrid has 3 columns
#: a room's walls, RoomGrid's door indices: 0 right, 1 down, 2 left, 3 up
RIGHT_WALL, DOWN_WALL, LEFT_WALL, UP_WALL = range(4)


class BatchKeyCorridor(BatchMiniGrid):
    mission = "pick up the {color} ball"
    kernel_params = (*BatchMiniGrid.kernel_params, "room_size", "num_rows")

    def __init__(self, num_envs: int | None = None, *, room_size: int = 6, num_rows: int = 3,
                 **kwargs: Any) -> None:
        for name, v, low in (("room_size", room_size, 3), ("num_rows", num_rows, 1)):
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise ValueError(f"{name} must be an int >= {low}, got {v!r}")
        self.room_size, self.num_rows = room_size, num_rows
        super().__init__(num_envs, width=(room_size - 1) * COLS + 1,
                         height=(room_size - 1) * num_rows + 1,
                         max_steps=30 * room_size ** 2, **kwargs)

    def family_fields(self) -> list[tuple[Any, ...]]:
        r = self.num_rows
        return [
            ("door_y", np.int64, (r, COLS)),  # row of the door in a room's right wall
            ("door_x", np.int64, (r, COLS)),  # column of the door in its bottom wall
            ("links", np.int8, (r, COLS, 4)),  # 1: a door or no wall towards that side
            ("locked", np.bool_, (r, COLS)),  # RoomGrid's room.locked
        ]

    def missions(self) -> tuple[str, ...]:
        return tuple(f"pick up the {common.COLOR_NAMES[c]} ball"
                     for c in self.state.target_color)

    @staticmethod
    def reset_env(p, s, i):  # type: ignore[no-untyped-def]
        common.clear_grid(s, i)
        room_grid(p, s, i)
        for j in range(1, p.num_rows):  # the middle column is one corridor
            remove_wall(p, s, i, 1, j, UP_WALL)
        row = common.integers(s, i, 0, p.num_rows)
        color = common.rand_color(s, i)
        add_door(p, s, i, 2, row, LEFT_WALL, color, True)
        ball = common.rand_color(s, i)
        add_object(p, s, i, 2, row, common.BALL, ball)
        s.target_color[i] = ball
        add_object(p, s, i, 0, common.integers(s, i, 0, p.num_rows), common.KEY, color)
        place_agent(p, s, i, 1, p.num_rows // 2)
        connect_all(p, s, i)

    @staticmethod
    def step_env(p, s, i, action):  # type: ignore[no-untyped-def]
        reward, terminated = common.step_env(p, s, i, action)
        if action == common.PICKUP and s.carry[i, 0] == common.BALL:  # the only ball
            reward = 1.0 - 0.9 * (s.step_count[i] / p.max_steps)
            terminated = True
        return reward, terminated


@perenv.rule(inline=False)
def room_grid(p, s, i):  # type: ignore[no-untyped-def]
    """``RoomGrid._gen_grid``: every room's walls, a door position in each right and
    bottom wall that has a neighbour behind, the agent parked at the centre facing right."""
    step = p.room_size - 1
    for j in range(p.num_rows):
        for k in range(COLS):
            common.wall_rect(s, i, k * step, j * step, p.room_size, p.room_size)
            for w in range(4):
                s.links[i, j, k, w] = 0
            s.locked[i, j, k] = False
    for j in range(p.num_rows):
        for k in range(COLS):
            if k < COLS - 1:
                s.door_y[i, j, k] = common.integers(s, i, j * step + 1, j * step + step)
            if j < p.num_rows - 1:
                s.door_x[i, j, k] = common.integers(s, i, k * step + 1, k * step + step)
    s.agent_x[i] = (COLS // 2) * step + p.room_size // 2
    s.agent_y[i] = (p.num_rows // 2) * step + p.room_size // 2
    s.agent_dir[i] = 0


@perenv.rule(inline=False)
def has_neighbour(p, k, j, wall):  # type: ignore[no-untyped-def]
    if wall == RIGHT_WALL:
        return k < COLS - 1
    if wall == DOWN_WALL:
        return j < p.num_rows - 1
    if wall == LEFT_WALL:
        return k > 0
    return j > 0


@perenv.rule(inline=False)
def door_cell(p, s, i, k, j, wall):  # type: ignore[no-untyped-def]
    """Room (k, j)'s door position on ``wall`` as ``x * 65536 + y`` (it has a neighbour
    there)."""
    step = p.room_size - 1
    if wall == LEFT_WALL:  # the left neighbour's right door
        k -= 1
        wall = RIGHT_WALL
    elif wall == UP_WALL:  # the upper neighbour's bottom door
        j -= 1
        wall = DOWN_WALL
    if wall == RIGHT_WALL:
        return (k * step + step) * 65536 + s.door_y[i, j, k]
    return s.door_x[i, j, k] * 65536 + j * step + step


@perenv.rule(inline=False)
def neighbour_k(k, wall):  # type: ignore[no-untyped-def]
    return k + 1 if wall == RIGHT_WALL else (k - 1 if wall == LEFT_WALL else k)


@perenv.rule(inline=False)
def neighbour_j(j, wall):  # type: ignore[no-untyped-def]
    return j + 1 if wall == DOWN_WALL else (j - 1 if wall == UP_WALL else j)


@perenv.rule(inline=False)
def link(s, i, k, j, wall):  # type: ignore[no-untyped-def]
    """Mark the passage both ways (room.doors[wall] and the neighbour's opposite)."""
    s.links[i, j, k, wall] = 1
    s.links[i, neighbour_j(j, wall), neighbour_k(k, wall), (wall + 2) % 4] = 1


@perenv.rule(inline=False)
def add_door(p, s, i, k, j, wall, color, locked):  # type: ignore[no-untyped-def]
    """``RoomGrid.add_door`` with its wall, colour and lock given."""
    s.locked[i, j, k] = locked
    xy = door_cell(p, s, i, k, j, wall)
    common.put(s, i, xy // 65536, xy % 65536, common.DOOR, color,
               common.LOCKED if locked else common.CLOSED)
    link(s, i, k, j, wall)


@perenv.rule(inline=False)
def remove_wall(p, s, i, k, j, wall):  # type: ignore[no-untyped-def]
    """``RoomGrid.remove_wall``: the inner cells of one wall of room (k, j) emptied."""
    step = p.room_size - 1
    x0 = k * step
    y0 = j * step
    for c in range(1, p.room_size - 1):
        if wall == RIGHT_WALL:
            common.put(s, i, x0 + step, y0 + c, common.EMPTY, 0, 0)
        elif wall == DOWN_WALL:
            common.put(s, i, x0 + c, y0 + step, common.EMPTY, 0, 0)
        elif wall == LEFT_WALL:
            common.put(s, i, x0, y0 + c, common.EMPTY, 0, 0)
        else:
            common.put(s, i, x0 + c, y0, common.EMPTY, 0, 0)
    link(s, i, k, j, wall)


@perenv.rule(inline=False)
def add_object(p, s, i, k, j, kind, color):  # type: ignore[no-untyped-def]
    """``RoomGrid.add_object`` (kind and colour given): a cell of room (k, j) not next to
    the agent."""
    step = p.room_size - 1
    xy = common.place_obj_not_next_to_agent(s, i, p.width, p.height, k * step, j * step,
                                            p.room_size, p.room_size)
    common.put(s, i, xy // 65536, xy % 65536, kind, color, 0)


@perenv.rule(inline=False)
def place_agent(p, s, i, k, j):  # type: ignore[no-untyped-def]
    """``RoomGrid.place_agent(k, j)``: redrawn until it faces an empty cell or a wall."""
    step = p.room_size - 1
    while True:
        common.place_agent(s, i, p.width, p.height, k * step, j * step, p.room_size,
                           p.room_size)
        d = s.agent_dir[i]
        t = s.grid[i, s.agent_x[i] + common.DIR_DX[d], s.agent_y[i] + common.DIR_DY[d], 0]
        if t == common.EMPTY or t == common.WALL:
            return


@perenv.rule(inline=False)
def reachable(p, s, i, k, j):  # type: ignore[no-untyped-def]
    """The rooms reachable from room (k, j) through doors and removed walls, as bits
    ``j * COLS + k``."""
    reach = 1 << (j * COLS + k)
    grown = True
    while grown:
        grown = False
        for jj in range(p.num_rows):
            for kk in range(COLS):
                if not (reach >> (jj * COLS + kk)) & 1:
                    continue
                for w in range(4):
                    if s.links[i, jj, kk, w]:
                        bit = 1 << (neighbour_j(jj, w) * COLS + neighbour_k(kk, w))
                        if not reach & bit:
                            reach |= bit
                            grown = True
    return reach


@perenv.rule(inline=False)
def connect_all(p, s, i):  # type: ignore[no-untyped-def]
    """``RoomGrid.connect_all``: closed doors of random colours between random rooms until
    every room is reachable from the agent's (never into a locked room)."""
    step = p.room_size - 1
    k0 = s.agent_x[i] // step
    j0 = s.agent_y[i] // step
    every = (1 << (p.num_rows * COLS)) - 1
    for _ in range(5001):  # minigrid gives up (raises) after 5000
        if reachable(p, s, i, k0, j0) == every:
            return
        k = common.integers(s, i, 0, COLS)
        j = common.integers(s, i, 0, p.num_rows)
        w = common.integers(s, i, 0, 4)
        if not has_neighbour(p, k, j, w) or s.links[i, j, k, w]:
            continue
        if s.locked[i, j, k] or s.locked[i, neighbour_j(j, w), neighbour_k(k, w)]:
            continue
        add_door(p, s, i, k, j, w, common.rand_color(s, i), False)
