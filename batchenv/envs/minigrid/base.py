"""``BatchMiniGrid``: the base class of the MiniGrid families (state schema, spaces, glue).

A family subclass gives its generator ``reset_env(p, s, i)`` (its ``_gen_grid``, a static
method that starts with :func:`~batchenv.envs.minigrid.common.clear_grid`), its ``mission``
and its default sizes; the rules (:func:`~batchenv.envs.minigrid.common.step_env`) and the
views (:func:`~batchenv.envs.minigrid.common.observe_env`) are shared. These are per-env
kernels (:mod:`batchenv.perenv`): numba compiles them into one loop over the batch
(``kernels="python"`` runs them as a plain Python loop).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from batchenv.core import BatchEnv
from batchenv.envs.minigrid import common
from batchenv.state import Range

OBSERVATIONS = ("image", "full")


class BatchMiniGrid(BatchEnv):
    """Common part of every MiniGrid family; see the family classes for their pages."""

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 10}
    single_action_space = spaces.Discrete(7)
    #: the family's mission string (the same for every env of the family, unless the family
    #: overrides :meth:`missions`)
    mission: str = ""
    #: the instance attributes the kernels read as ``p.<name>`` (a family adds its own)
    kernel_params: ClassVar[tuple[str, ...]] = (
        "width", "height", "max_steps", "see_through_walls", "full_view")
    #: The valid ranges of the common state fields (:class:`~batchenv.state.Range`; a
    #: family adds its own). Any state inside them, and :meth:`check_state`, steps without
    #: an index out of bounds, to a state inside them again: the agent stands off the
    #: grid's edge, so the cell ahead of it, which the rules read, is on the grid
    #: (``check_state``: it cannot reach the edge); the target's cell indexes the grid,
    #: the direction the table of steps, the colours ``COLOR_NAMES`` (missions, frames).
    #: The cells, what a box holds and what the agent carries are (type, colour, state)
    #: codes, 0-9 (LAVA is the highest type on a grid); ``check_state`` says which code
    #: each part may hold. ``step_count`` (the reward's clock) has none: any count is safe.
    state_ranges: ClassVar[dict[str, Range]] = {
        "grid": Range(0, common.LAVA), "contains": Range(0, common.LAVA),
        "carry": Range(0, common.LAVA),
        "agent_x": Range(1, "width - 2"), "agent_y": Range(1, "height - 2"),
        "agent_dir": Range(0, len(common.DIR_DX) - 1),
        "target_x": Range(0, "width - 1"), "target_y": Range(0, "height - 1"),
        "target_color": Range(0, len(common.COLOR_NAMES) - 1),
    }

    def __init__(self, num_envs: int | None = None, *, width: int, height: int,
                 max_steps: int, see_through_walls: bool = False, observation: str = "image",
                 **kwargs: Any) -> None:
        if observation not in OBSERVATIONS:
            raise ValueError(f"observation must be one of {OBSERVATIONS}, got {observation!r}")
        for name, v in (("width", width), ("height", height), ("max_steps", max_steps)):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        self.width, self.height, self.max_steps = int(width), int(height), int(max_steps)
        self.see_through_walls = bool(see_through_walls)
        self.observation = observation
        self.full_view = observation == "full"
        w, h = self.width, self.height
        self.state_dtype = np.dtype([  # type: ignore[misc]  # sized by the instance's grid
            ("grid", np.int8, (w, h, 3)),      # (type, colour, state) per cell, [x, y]
            ("contains", np.int8, (w, h, 2)),  # a box's contents (type, colour); 0: none
            ("carry", np.int8, (5,)),          # carried (type, colour, state, c.type, c.col)
            ("agent_x", np.int64), ("agent_y", np.int64),  # cell
            ("agent_dir", np.int64),           # 0 right, 1 down, 2 left, 3 up
            ("step_count", np.int64),          # minigrid's step_count (the reward's clock)
            ("target_x", np.int64), ("target_y", np.int64),  # the family's target cell
            ("target_color", np.int64),        # the target's colour (missions that name it)
            *self.family_fields(),
        ])
        shape = (common.VIEW, common.VIEW, 3) if observation == "image" else (w, h, 3)
        self.single_observation_space = spaces.Box(0, 255, shape, np.uint8)
        # minigrid truncates at max_steps always: None (the default of a caller's flag) means
        # the family's limit too, not no limit (past it the reward would go negative)
        if kwargs.get("max_episode_steps") is None:
            kwargs["max_episode_steps"] = self.max_steps
        super().__init__(num_envs, **kwargs)

    def check_state(self, states: np.ndarray) -> dict[str, np.ndarray]:
        """What the ranges cannot say: each cell a (type, colour, state) minigrid encodes
        (a type from EMPTY to LAVA, a colour of ``COLOR_NAMES``, a state other than open
        only for a door, closed or locked), what a box holds only in a box, the agent on
        a cell it may enter (not in a wall or a closed door) from which no path through
        cells other than walls leads to the grid's edge (minigrid's grids are walled
        round, or, MultiRoom's, the agent's rooms are: from the edge the cell ahead would be
        off the grid), and what it carries a key, a ball or a box (contents only in a box;
        or nothing, all zeros)."""
        grid, contains, carry = states["grid"], states["contains"], states["carry"]
        n = len(states)
        kind, colour, state = grid[..., 0], grid[..., 1], grid[..., 2]
        cells = ((kind < common.EMPTY) | (colour >= len(common.COLOR_NAMES))
                 | ((state != common.OPEN) & (kind != common.DOOR))
                 | (state > common.LOCKED)).reshape(n, -1).any(axis=1)
        held = ((contains[..., 0] != 0) | (contains[..., 1] != 0)) & (kind != common.BOX)
        held |= contains[..., 1] >= len(common.COLOR_NAMES)
        rows = np.arange(n)
        x, y = states["agent_x"], states["agent_y"]
        inside = (x >= 0) & (x < self.width) & (y >= 0) & (y < self.height)
        under = grid[rows, np.where(inside, x, 0), np.where(inside, y, 0)]
        standing = ((under[:, 0] == common.EMPTY) | (under[:, 0] == common.FLOOR)
                    | (under[:, 0] == common.GOAL) | (under[:, 0] == common.LAVA)
                    | ((under[:, 0] == common.DOOR) & (under[:, 2] == common.OPEN)))
        carried = carry[:, 0]
        pickable = ((carried == common.KEY) | (carried == common.BALL)
                    | (carried == common.BOX))
        contents = (carry[:, 3] != 0) | (carry[:, 4] != 0)
        carrying = np.where(carried == 0, (carry != 0).any(axis=1),
                            ~pickable | (carry[:, 1] >= len(common.COLOR_NAMES))
                            | (carry[:, 2] != 0) | (contents & (carried != common.BOX))
                            | (carry[:, 4] >= len(common.COLOR_NAMES)))
        return {"a cell that is not a (type, colour, state) of minigrid's": cells,
                "the agent can reach the grid's edge (through cells other than walls)":
                    reaches_edge(kind, x, y),
                "a box's contents in a cell that is not a box": held.reshape(n, -1).any(axis=1),
                "the agent on a cell it cannot enter": inside & ~standing,
                "a carried object that is not a key, a ball or a box": carrying}

    def family_fields(self) -> list[tuple[Any, ...]]:
        """The family's own state fields (``(name, dtype[, shape])``), after the common ones:
        what its generator or rules keep per env."""
        return []

    # the family's generator: a static method reset_env(p, s, i)
    reset_env: ClassVar[Any]
    #: the family's rules (minigrid's ``step`` unless the family overrides it)
    step_env = staticmethod(common.step_env)
    #: the view chosen by ``observation`` (``p.full_view``)
    observe_env = staticmethod(common.observe_env)

    def render_envs(self, s: Any) -> list[np.ndarray]:
        """``rgb_array``: each env's whole grid with ``minigrid``'s tiles (32 pixels a cell,
        the cells the agent sees highlighted), as ``minigrid``'s ``render()``."""
        from batchenv.envs.minigrid import render

        return [render.frame(self, s, i) for i in range(len(s))]

    def missions(self) -> tuple[str, ...]:
        """Each env's mission string."""
        return (self.mission,) * self.num_envs


def reaches_edge(kind: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per record: whether cell ``(x, y)`` is joined to the grid's edge by a path of cells
    that are not walls (``kind``: the cells' types, ``(n, width, height)``). Walls are the
    only cells no rule removes (a door opens, an object is picked up, a ball moves), and no
    rule makes a wall but a box holding one: so a record that does not reach the edge never
    will. Records whose edge is all wall are answered at once; the others by a flood fill
    over all of them together, each column of cells a bit mask (a grid up to 64 high)."""
    out = np.zeros(len(kind), dtype=bool)
    walls = kind == common.WALL
    edge = np.concatenate([walls[:, 0], walls[:, -1], walls[:, :, 0], walls[:, :, -1]], axis=1)
    todo = np.flatnonzero(~edge.all(axis=1))
    if not len(todo):
        return out
    height = kind.shape[2]
    inside = ((x[todo] >= 0) & (x[todo] < kind.shape[1]) & (y[todo] >= 0) & (y[todo] < height))
    start = np.zeros(walls[todo].shape, dtype=bool)
    rows = np.flatnonzero(inside)
    start[rows, x[todo][rows], y[todo][rows]] = True
    if height > 64:  # (cell by cell)
        out[todo] = _flood_touches_edge(~walls[todo], start)
        return out
    bit = np.uint64(1) << np.arange(height, dtype=np.uint64)
    passable = np.bitwise_or.reduce(np.where(walls[todo], np.uint64(0), bit), axis=2)
    reach = np.bitwise_or.reduce(np.where(start, bit, np.uint64(0)), axis=2) & passable
    one, rim = np.uint64(1), bit[0] | bit[-1]  # (rim: the top and bottom rows)
    active = np.arange(len(todo))  # the records still growing, not at the edge yet
    while len(active):
        now = reach[active]
        grown = now | (now << one) | (now >> one)
        grown[:, 1:] |= now[:, :-1]
        grown[:, :-1] |= now[:, 1:]
        grown &= passable[active]
        reach[active] = grown
        edge = (grown[:, 0] != 0) | (grown[:, -1] != 0) | ((grown & rim) != 0).any(axis=1)
        out[todo[active[edge]]] = True
        active = active[~edge & (grown != now).any(axis=1)]
    return out


def _flood_touches_edge(passable: np.ndarray, reach: np.ndarray) -> np.ndarray:
    """:func:`reaches_edge`'s flood fill on ``(n, width, height)`` bools."""
    reach = reach & passable
    while True:
        grown = reach.copy()
        grown[:, 1:] |= reach[:, :-1]
        grown[:, :-1] |= reach[:, 1:]
        grown[:, :, 1:] |= reach[:, :, :-1]
        grown[:, :, :-1] |= reach[:, :, 1:]
        grown &= passable
        if np.array_equal(grown, reach):
            break
        reach = grown
    rims = (reach[:, 0], reach[:, -1], reach[:, :, 0], reach[:, :, -1])
    return np.asarray(np.stack([rim.any(axis=1) for rim in rims]).any(axis=0))
