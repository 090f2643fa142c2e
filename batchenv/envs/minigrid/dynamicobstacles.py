"""MiniGrid Dynamic-Obstacles: reach the goal while balls wander the room.

## Description
``minigrid``'s ``DynamicObstaclesEnv`` batched: a ``size`` x ``size`` room, the goal at
``(size - 2, size - 2)``, ``n_obstacles`` blue balls that each step move to a random free
cell of the 3x3 block around them (or stay, when 101 draws find none: ``minigrid``'s
``max_tries=100``). Walking into a ball or a wall ends the episode with reward -1. The
agent starts at ``(1, 1)`` facing right, or (``-Random-`` ids) at a random cell and
direction.

## Action Space
``Discrete(3)``: 0 left, 1 right, 2 forward (``minigrid`` allows only these; a larger
action, with ``validate=False``, is turning left as there).

## Observation Space
(Dynamic-Obstacles sees through walls, as ``minigrid``'s.)
``Box(0, 255, (7, 7, 3), uint8)``: the egocentric partial view as ``ImgObsWrapper`` gives
it (``observation="full"``: ``FullyObsWrapper``'s ``(size, size, 3)`` grid encoding).

## Rewards
``1 - 0.9 * step_count / max_steps`` on reaching the goal; -1 on moving forward into a
ball or a wall (the cell ahead as it was before the balls moved); 0 otherwise.

## Starting State
``minigrid``'s ``_gen_grid`` draw for draw, from the env's own stream: the agent
(``-Random-``: x, y, direction), then each ball's cell.

## Episode End
Terminated on the goal or a collision; truncated after ``max_steps = 4 * size * size``.

## Arguments
``size`` (default 8), ``n_obstacles`` (default 4; more than ``size / 2 + 1`` become
``size // 2``, as ``minigrid``), ``random_start`` (default False), ``observation``
("image" | "full").

## Version History
- v0: as ``minigrid`` 3.x ``MiniGrid-Dynamic-Obstacles-*-v0``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from batchenv import perenv
from batchenv.envs.minigrid import common
from batchenv.envs.minigrid.base import BatchMiniGrid
from batchenv.state import Range

MAX_TRIES = 100  # DynamicObstaclesEnv's place_obj(..., max_tries=100)
COLLISION = -1.0  # the reward of walking into a ball or a wall


class BatchDynamicObstacles(BatchMiniGrid):
    mission = "get to the green goal square"
    single_action_space = spaces.Discrete(3)
    kernel_params = (*BatchMiniGrid.kernel_params, "n_obstacles", "random_start")

    def __init__(self, num_envs: int | None = None, *, size: int = 8, n_obstacles: int = 4,
                 random_start: bool = False, **kwargs: Any) -> None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 4:
            raise ValueError(f"size must be an int >= 4, got {size!r}")
        if not isinstance(n_obstacles, int) or isinstance(n_obstacles, bool) \
                or n_obstacles < 0:
            raise ValueError(f"n_obstacles must be an int >= 0, got {n_obstacles!r}")
        self.size = size
        # DynamicObstaclesEnv: "Reduce obstacles if there are too many"
        self.n_obstacles = n_obstacles if n_obstacles <= size / 2 + 1 else size // 2
        self.random_start = bool(random_start)
        super().__init__(num_envs, width=size, height=size, max_steps=4 * size * size,
                         see_through_walls=True, **kwargs)

    #: each ball's cell (x, y), or x = -1: not placed (minigrid would have raised); a
    #: placed ball's cell is one move_obstacles writes (check_state: on the grid, a ball)
    state_ranges = {**BatchMiniGrid.state_ranges, "obstacles": Range(-1, "width - 1")}

    def family_fields(self) -> list[tuple[Any, ...]]:
        return [("obstacles", np.int64, (max(self.n_obstacles, 1), 2))]

    def check_state(self, states: np.ndarray) -> dict[str, np.ndarray]:
        """The common checks, and each placed ball (x >= 0) in a cell of the grid that
        holds a ball."""
        problems = super().check_state(states)
        cells = states["obstacles"][:, :self.n_obstacles]
        x, y = cells[..., 0], cells[..., 1]
        placed = x >= 0
        rows = np.arange(len(states))[:, None]
        kind = states["grid"][rows, np.clip(x, 0, self.width - 1),
                              np.clip(y, 0, self.height - 1), 0]  # (beyond: a range's)
        problems["a placed ball not in a cell of the grid holding a ball"] = (
            placed & ((y < 0) | (kind != common.BALL))).any(axis=1)
        return problems

    @staticmethod
    def reset_env(p, s, i):  # type: ignore[no-untyped-def]
        common.clear_grid(s, i)
        w, h = p.width, p.height
        common.wall_rect(s, i, 0, 0, w, h)
        common.put(s, i, w - 2, h - 2, common.GOAL, common.GREEN, 0)
        if p.random_start:
            common.place_agent(s, i, w, h, 0, 0, w, h)
        else:
            s.agent_x[i] = 1
            s.agent_y[i] = 1
            s.agent_dir[i] = 0
        s.obstacles[i, :, 0] = -1
        for o in range(p.n_obstacles):
            xy = common.try_place_obj(s, i, w, h, 0, 0, w, h, MAX_TRIES)
            if xy >= 0:
                common.put(s, i, xy // 65536, xy % 65536, common.BALL, common.BLUE, 0)
                s.obstacles[i, o, 0] = xy // 65536
                s.obstacles[i, o, 1] = xy % 65536

    @staticmethod
    def step_env(p, s, i, action):  # type: ignore[no-untyped-def]
        if action >= 3:  # minigrid: "Invalid action"
            action = common.LEFT
        d = s.agent_dir[i]
        ahead = s.grid[i, s.agent_x[i] + common.DIR_DX[d], s.agent_y[i] + common.DIR_DY[d], 0]
        blocked = ahead != common.EMPTY and ahead != common.GOAL  # before the balls move
        move_obstacles(p, s, i)
        reward, terminated = common.step_env(p, s, i, action)
        if action == common.FORWARD and blocked:
            return COLLISION, True
        return reward, terminated


@perenv.rule
def move_obstacles(p, s, i):  # type: ignore[no-untyped-def]
    """Each ball in turn to a free cell of the 3x3 block around it (not the agent's), if
    ``place_obj`` finds one within its tries."""
    for o in range(p.n_obstacles):
        x = s.obstacles[i, o, 0]
        y = s.obstacles[i, o, 1]
        if x < 0:
            continue
        xy = common.try_place_obj(s, i, p.width, p.height, x - 1, y - 1, 3, 3, MAX_TRIES)
        if xy >= 0:
            common.put(s, i, xy // 65536, xy % 65536, common.BALL, common.BLUE, 0)
            common.put(s, i, x, y, common.EMPTY, 0, 0)
            s.obstacles[i, o, 0] = xy // 65536
            s.obstacles[i, o, 1] = xy % 65536
