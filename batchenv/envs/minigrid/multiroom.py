"""MiniGrid MultiRoom: a chain of rooms joined by closed doors, the goal in the last one.

## Description
``minigrid``'s ``MultiRoomEnv`` batched: on a 25x25 grid, a chain of ``num_rooms`` rooms
(4 to ``max_room_size`` cells a side, walls included), each joined to the next by a closed
door of a colour different from the previous door's. The agent starts in the first room,
the goal lies in the last; doors open with toggle.

## Action Space
``Discrete(7)``: 0 left, 1 right, 2 forward, 3 pickup, 4 drop, 5 toggle, 6 done.

## Observation Space
``Box(0, 255, (7, 7, 3), uint8)``: the egocentric partial view as ``ImgObsWrapper`` gives
it (``observation="full"``: ``FullyObsWrapper``'s ``(25, 25, 3)`` grid encoding).

## Rewards
``1 - 0.9 * step_count / max_steps`` on reaching the goal, 0 otherwise.

## Starting State
``minigrid``'s ``_gen_grid`` and ``_placeRoom`` draw for draw, from the env's own stream:
the number of rooms, then attempts at a chain (the first room's corner, then each room's
size and offset, up to 8 tries of an exit wall and door for the next room) until one
attempt holds that many rooms (the longest attempt is kept); door colours; the agent's
cell and direction in the first room; the goal's cell in the last. ``_placeRoom``'s
recursion is the loop it amounts to (a room, once placed, is never taken back).

## Episode End
Terminated on the goal; truncated after ``max_steps = 20 * max_rooms`` steps.

## Arguments
``min_rooms``, ``max_rooms``, ``max_room_size`` (default 10), ``observation``
("image" | "full"). Ids: ``MultiRoom-N2-S4`` (2 rooms of at most 4), ``-N4-S5-v0``
(``minigrid``'s legacy id: 6 rooms of at most 5), ``-N4-S5-v1`` (4 rooms), ``-N6``.

## Version History
- v0: as ``minigrid`` 3.x ``MiniGrid-MultiRoom-*-v0`` (and ``MiniGrid-MultiRoom-N4-S5-v1``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from batchenv import perenv
from batchenv.envs.minigrid import common
from batchenv.envs.minigrid.base import BatchMiniGrid

SIZE = 25  # MultiRoomEnv's width and height
MIN_ROOM = 4  # _placeRoom's minSz
# a room in the `rooms` field: its corner, its size, its entry door
TOP_X, TOP_Y, SIZE_X, SIZE_Y, DOOR_X, DOOR_Y = range(6)
TRYING, KEPT = 0, 1  # the attempt being built, the longest one so far


class BatchMultiRoom(BatchMiniGrid):
    mission = "traverse the rooms to get to the goal"
    kernel_params = (*BatchMiniGrid.kernel_params, "min_rooms", "max_rooms", "max_room_size")

    def __init__(self, num_envs: int | None = None, *, min_rooms: int = 6, max_rooms: int = 6,
                 max_room_size: int = 10, **kwargs: Any) -> None:
        for name, v, low in (("min_rooms", min_rooms, 1), ("max_rooms", max_rooms, min_rooms),
                             ("max_room_size", max_room_size, MIN_ROOM)):
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise ValueError(f"{name} must be an int >= {low}, got {v!r}")
        self.min_rooms, self.max_rooms, self.max_room_size = min_rooms, max_rooms, max_room_size
        super().__init__(num_envs, width=SIZE, height=SIZE, max_steps=20 * max_rooms,
                         **kwargs)

    def family_fields(self) -> list[tuple[Any, ...]]:
        # the generator's chains of rooms: (attempt, room, TOP_X..DOOR_Y)
        return [("rooms", np.int64, (2, self.max_rooms, 6))]

    @staticmethod
    def reset_env(p, s, i):  # type: ignore[no-untyped-def]
        common.clear_grid(s, i)
        num_rooms = common.integers(s, i, p.min_rooms, p.max_rooms + 1)
        kept = 0
        while kept < num_rooms:
            placed = place_rooms(p, s, i, num_rooms)
            if placed > kept:
                for r in range(placed):
                    for k in range(6):
                        s.rooms[i, KEPT, r, k] = s.rooms[i, TRYING, r, k]
                kept = placed
        color = -1  # the previous door's
        for r in range(kept):
            x0 = s.rooms[i, KEPT, r, TOP_X]
            y0 = s.rooms[i, KEPT, r, TOP_Y]
            common.wall_rect(s, i, x0, y0, s.rooms[i, KEPT, r, SIZE_X],
                             s.rooms[i, KEPT, r, SIZE_Y])
            if r > 0:
                color = door_color(s, i, color)
                common.put(s, i, s.rooms[i, KEPT, r, DOOR_X], s.rooms[i, KEPT, r, DOOR_Y],
                           common.DOOR, color, common.CLOSED)
        common.place_agent(s, i, p.width, p.height, s.rooms[i, KEPT, 0, TOP_X],
                           s.rooms[i, KEPT, 0, TOP_Y], s.rooms[i, KEPT, 0, SIZE_X],
                           s.rooms[i, KEPT, 0, SIZE_Y])
        last = kept - 1
        xy = common.place_obj(s, i, p.width, p.height, s.rooms[i, KEPT, last, TOP_X],
                              s.rooms[i, KEPT, last, TOP_Y], s.rooms[i, KEPT, last, SIZE_X],
                              s.rooms[i, KEPT, last, SIZE_Y])
        common.put(s, i, xy // 65536, xy % 65536, common.GOAL, common.GREEN, 0)


@perenv.rule(inline=False)
def door_color(s, i, previous):  # type: ignore[no-untyped-def]
    """``_rand_elem(sorted(set(COLOR_NAMES) - {previous}))`` (every colour for the first
    door, ``previous == -1``)."""
    if previous < 0:
        return common.rand_color(s, i)
    k = common.integers(s, i, 0, 5)
    for c in range(6):  # the k-th of the sorted colours other than `previous`
        if common.SORTED_COLORS[c] == previous:
            continue
        if k == 0:
            return common.SORTED_COLORS[c]
        k -= 1
    return previous  # (unreachable)


@perenv.rule(inline=False)
def place_rooms(p, s, i, num_rooms):  # type: ignore[no-untyped-def]
    """One attempt of ``_gen_grid``'s loop: the first room's corner, then ``_placeRoom``'s
    chain into ``rooms[i, TRYING]``; returns how many rooms it placed."""
    door_x = common.integers(s, i, 0, p.width - 2)
    door_y = common.integers(s, i, 0, p.width - 2)  # (sic: width)
    entry_wall = 2
    if not place_room(p, s, i, 0, entry_wall, door_x, door_y):
        return 0
    placed = 1
    while placed < num_rooms:  # the room just placed tries up to 8 exits for the next
        x0 = s.rooms[i, TRYING, placed - 1, TOP_X]
        y0 = s.rooms[i, TRYING, placed - 1, TOP_Y]
        w = s.rooms[i, TRYING, placed - 1, SIZE_X]
        h = s.rooms[i, TRYING, placed - 1, SIZE_Y]
        ok = False
        for _ in range(8):
            exit_wall = common.integers(s, i, 0, 3)  # one of the 3 walls but the entry's
            if exit_wall >= entry_wall:
                exit_wall += 1
            if exit_wall == 0:  # right
                door_x = x0 + w - 1
                door_y = y0 + common.integers(s, i, 1, h - 1)
            elif exit_wall == 1:  # south
                door_x = x0 + common.integers(s, i, 1, w - 1)
                door_y = y0 + h - 1
            elif exit_wall == 2:  # left
                door_x = x0
                door_y = y0 + common.integers(s, i, 1, h - 1)
            else:  # north
                door_x = x0 + common.integers(s, i, 1, w - 1)
                door_y = y0
            if place_room(p, s, i, placed, (exit_wall + 2) % 4, door_x, door_y):
                entry_wall = (exit_wall + 2) % 4
                ok = True
                break
        if not ok:
            break
        placed += 1
    return placed


@perenv.rule(inline=False)
def place_room(p, s, i, r, entry_wall, door_x, door_y):  # type: ignore[no-untyped-def]
    """``_placeRoom``'s own part for room ``r``: its size, its corner against the entry
    door; False when it leaves the grid or meets a room before its parent."""
    w = common.integers(s, i, MIN_ROOM, p.max_room_size + 1)
    h = common.integers(s, i, MIN_ROOM, p.max_room_size + 1)
    if r == 0:
        x0 = door_x
        y0 = door_y
    elif entry_wall == 0:
        x0 = door_x - w + 1
        y0 = common.integers(s, i, door_y - h + 2, door_y)
    elif entry_wall == 1:
        x0 = common.integers(s, i, door_x - w + 2, door_x)
        y0 = door_y - h + 1
    elif entry_wall == 2:
        x0 = door_x
        y0 = common.integers(s, i, door_y - h + 2, door_y)
    else:
        x0 = common.integers(s, i, door_x - w + 2, door_x)
        y0 = door_y
    if x0 < 0 or y0 < 0:
        return False
    if x0 + w > p.width or y0 + h >= p.height:  # (sic: >= for the height)
        return False
    for q in range(r - 1):  # every room but the parent
        qx = s.rooms[i, TRYING, q, TOP_X]
        qy = s.rooms[i, TRYING, q, TOP_Y]
        apart = (x0 + w < qx or qx + s.rooms[i, TRYING, q, SIZE_X] <= x0
                 or y0 + h < qy or qy + s.rooms[i, TRYING, q, SIZE_Y] <= y0)
        if not apart:
            return False
    s.rooms[i, TRYING, r, TOP_X] = x0
    s.rooms[i, TRYING, r, TOP_Y] = y0
    s.rooms[i, TRYING, r, SIZE_X] = w
    s.rooms[i, TRYING, r, SIZE_Y] = h
    s.rooms[i, TRYING, r, DOOR_X] = door_x
    s.rooms[i, TRYING, r, DOOR_Y] = door_y
    return True
