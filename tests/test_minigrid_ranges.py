"""The MiniGrid envs' valid states (``BatchMiniGrid.state_ranges`` and ``check_state``),
fuzzed (``tests/range_fuzz.py``), one id per class: a few hundred random states per class,
from layouts the generators made with random objects strewn over them (walls too, but no
wall taken away), the agent anywhere it may stand (next to the grid's edge too) facing any
way, step alike compiled and as a Python loop, without an error, to states inside the
ranges again; a value one past any bound, and each invariant broken (an agent that could
walk to the grid's edge among them), is refused by ``set_state``, and changes nothing."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from range_fuzz import (  # noqa: E402
    assert_every_bound_refused,
    assert_refused,
    fill_inside,
    problems,
    step_alike,
)

import batchenv  # noqa: E402
from batchenv.envs.minigrid import common as c  # noqa: E402
from batchenv.envs.minigrid.dynamicobstacles import BatchDynamicObstacles  # noqa: E402
from batchenv.registration import resolve  # noqa: E402

N = 200
STEPS = 3
OBJECTS = np.array([c.EMPTY, c.WALL, c.FLOOR, c.DOOR, c.KEY, c.BALL, c.BOX, c.GOAL, c.LAVA])
PICKABLE = np.array([c.KEY, c.BALL, c.BOX])


def first_id_per_class() -> list[str]:
    seen, ids = set(), []
    for env_id in batchenv.list_envs():
        cls = resolve(env_id).cls
        if "MiniGrid" in env_id and cls not in seen:
            seen.add(cls)
            ids.append(env_id)
    return ids


IDS = first_id_per_class()


def strew(st: np.ndarray, rng: np.random.Generator, share: float) -> None:
    """Random objects (a colour each; doors open, closed or locked; boxes with contents
    or none) in a ``share`` of the cells that are not walls (a wall taken away could open
    the way to the grid's edge: a state ``check_state`` refuses)."""
    grid, contains = st["grid"], st["contains"]
    where = (rng.random(grid.shape[:-1]) < share) & (grid[..., 0] != c.WALL)
    k = np.count_nonzero(where)
    kind = rng.choice(OBJECTS, k)
    grid[where] = np.stack([kind, rng.integers(0, 6, k) * (kind != c.EMPTY),
                            rng.integers(0, 3, k) * (kind == c.DOOR)], axis=-1)
    held = np.where(rng.random(k) < 0.5, rng.choice(PICKABLE, k), 0) * (kind == c.BOX)
    contains[where] = np.stack([held, rng.integers(0, 6, k) * (held != 0)], axis=-1)


def inside(env, seed: int) -> np.ndarray:
    """``N`` states inside the env's ranges and check_state (see the module's docstring),
    one env in ten awaiting its reset."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    for _ in range(10):
        env.step(rng.integers(0, env.single_action_space.n, env.num_envs))
    reached = env.get_state()
    st = fill_inside(env, reached, rng)  # positions, directions, targets, colours
    st["grid"], st["contains"] = reached["grid"], reached["contains"]
    strew(st, rng, 0.15)
    carried = np.where(rng.random(N) < 0.4, rng.choice(PICKABLE, N), 0)
    st["carry"] = 0
    st["carry"][:, 0] = carried
    st["carry"][:, 1] = rng.integers(0, 6, N) * (carried != 0)
    box = carried == c.BOX
    st["carry"][box, 3] = rng.choice([0, c.KEY, c.BALL], np.count_nonzero(box))
    st["carry"][box, 4] = rng.integers(0, 6, np.count_nonzero(box))
    rows = np.arange(N)
    x, y = st["agent_x"], st["agent_y"]  # (drawn inside the ranges: off the grid's edge)
    walled = st["grid"][rows, x, y, 0] == c.WALL
    x[walled], y[walled] = reached["agent_x"][walled], reached["agent_y"][walled]
    st["grid"][rows, x, y] = (c.EMPTY, 0, 0)  # the agent on a cell it may enter
    st["contains"][rows, x, y] = 0
    out = [i for i, bad in enumerate(_edge_reached(env, st)) if bad]  # (MultiRoom: outside
    x[out], y[out] = reached["agent_x"][out], reached["agent_y"][out]  # its rooms)
    st["grid"][out, x[out], y[out]] = (c.EMPTY, 0, 0)
    st["contains"][out, x[out], y[out]] = 0
    if "obstacles" in st.dtype.names:
        cells = st["obstacles"]  # balls (not on the agent or a wall, one per cell)
        for i in range(N):
            taken = {(int(x[i]), int(y[i]))}
            for o in range(env.n_obstacles):
                cell = (int(cells[i, o, 0]), int(cells[i, o, 1]))
                if cell[0] < 0 or cell[1] < 0 or cell in taken \
                        or st["grid"][i, cell[0], cell[1], 0] == c.WALL:
                    cells[i, o] = (-1, -1)
                    continue
                taken.add(cell)
                st["grid"][i, cell[0], cell[1]] = (c.BALL, c.BLUE, 0)
                st["contains"][i, cell[0], cell[1]] = 0
    st["awaiting_reset"] = rng.random(N) < 0.1
    assert not problems(env, st), problems(env, st)
    return st


# The Python form of every class but Empty: the `slow` pass (tests/conftest.py,
# PYTHON_FORM_IN_README); the refusals below run compiled, in the worker that compiles the
# class for its parity tests.
@pytest.mark.parametrize("env_id", [pytest.param(i, marks=[] if "Empty" in i else
                                                 [pytest.mark.slow]) for i in IDS])
def test_states_inside_the_ranges_step_alike_and_stay_inside(env_id):
    compiled = batchenv.make(env_id, N, kernels="numba")
    python = batchenv.make(env_id, N, kernels="python")
    for seed in (1, 2):
        states = inside(compiled, seed)
        edge = ((states["agent_x"] == 1) | (states["agent_x"] == compiled.width - 2)
                | (states["agent_y"] == 1) | (states["agent_y"] == compiled.height - 2))
        assert edge.any()  # agents next to the grid's edge, some facing it (MultiRoom: few)
        step_alike(compiled, python, states, STEPS, np.random.default_rng(seed))


@pytest.mark.parametrize("env_id", IDS)
def test_a_value_past_any_bound_is_refused(env_id):
    env = batchenv.make(env_id, N)
    checked = assert_every_bound_refused(env, inside(env, 3), np.random.default_rng(3))
    assert checked >= 2 * len(env.state_field_ranges) - 1  # (step_count: no range)


def _edge_reached(env, st):
    from batchenv.envs.minigrid.base import reaches_edge

    return reaches_edge(st["grid"][..., 0], st["agent_x"], st["agent_y"])


def _room_cells(record) -> np.ndarray:
    """The cells of a MultiRoom grid inside its rooms: reached from the agent through cells
    that are not walls, the walls round them included."""
    kind = record["grid"][..., 0]
    reach = np.zeros(kind.shape, dtype=bool)
    reach[record["agent_x"], record["agent_y"]] = True
    for _ in range(kind.size):
        grown = reach.copy()
        grown[1:] |= reach[:-1]
        grown[:-1] |= reach[1:]
        grown[:, 1:] |= reach[:, :-1]
        grown[:, :-1] |= reach[:, 1:]
        grown &= (kind != c.WALL) | reach
        if np.array_equal(grown, reach):
            break
        reach = grown
    walls = np.zeros_like(reach)  # the walls next to the rooms' cells
    walls[1:] |= reach[:-1]
    walls[:-1] |= reach[1:]
    walls[:, 1:] |= reach[:, :-1]
    walls[:, :-1] |= reach[:, 1:]
    return reach | (walls & (kind == c.WALL))


def _at(st, k, name, index, value):
    bad = st.copy()
    bad[name][(k, *index)] = value
    return bad


def test_the_invariants_are_refused_doorkey():
    rng = np.random.default_rng(5)
    env = batchenv.make("batchenv/MiniGrid-DoorKey-5x5-v0", N)
    st = inside(env, 6)
    env.set_state(st)
    k = int(rng.integers(N))
    x, y = int(st["agent_x"][k]), int(st["agent_y"][k])
    assert_refused(env, _at(st, k, "grid", (x, y), (c.WALL, c.GREY, 0)),
                   k, "the agent on a cell it cannot enter")
    assert_refused(env, _at(st, k, "grid", (x, y), (c.DOOR, c.RED, c.CLOSED)),
                   k, "the agent on a cell it cannot enter")
    assert_refused(env, _at(st, k, "grid", (0, 0), (c.WALL, 6, 0)),
                   k, "a cell that is not a .type, colour, state. of minigrid's")
    assert_refused(env, _at(st, k, "grid", (0, 0), (c.KEY, c.RED, c.LOCKED)),
                   k, "a cell that is not a .type, colour, state. of minigrid's")
    assert_refused(env, _at(st, k, "grid", (0, 0), (c.UNSEEN, 0, 0)),
                   k, "a cell that is not a .type, colour, state. of minigrid's")
    walled = _at(st, k, "grid", (0, 0), (c.WALL, c.GREY, 0))
    assert_refused(env, _at(walled, k, "contains", (0, 0), (c.KEY, c.RED)),
                   k, "a box's contents in a cell that is not a box")
    assert_refused(env, _at(st, k, "carry", (slice(None),), (c.WALL, c.GREY, 0, 0, 0)),
                   k, "a carried object that is not a key, a ball or a box")
    assert_refused(env, _at(st, k, "carry", (slice(None),), (c.KEY, c.RED, 0, c.BALL, 1)),
                   k, "a carried object that is not a key, a ball or a box")
    near = _at(_at(_at(st, k, "agent_x", (), 1), k, "agent_y", (), 2), k, "grid", (1, 2),
               (c.EMPTY, 0, 0))
    assert_refused(env, _at(near, k, "grid", (0, 2), (c.FLOOR, c.RED, 0)),
                   k, "the agent can reach the grid's edge")  # a hole in the wall round


def test_the_invariants_are_refused_multiroom():
    k = int(np.random.default_rng(5).integers(N))
    env = batchenv.make("batchenv/MiniGrid-MultiRoom-N2-S4-v0", N)
    st = inside(env, 8)
    env.set_state(st)
    outside = np.argwhere(~_room_cells(st[k]))  # a cell outside the rooms, off the edge
    x, y = next((a, b) for a, b in outside if 0 < a < env.width - 1 and 0 < b < env.height - 1)
    moved = _at(_at(st, k, "agent_x", (), x), k, "agent_y", (), y)
    assert_refused(env, moved, k, "the agent can reach the grid's edge")


def test_the_invariants_are_refused_dynamic_obstacles():
    env = BatchDynamicObstacles(N, size=6)
    st = inside(env, 7)
    env.set_state(st)
    placed = np.flatnonzero(st["obstacles"][:, 0, 0] >= 0)
    k = int(placed[0])
    ox, oy = st["obstacles"][k, 0]
    assert_refused(env, _at(st, k, "grid", (ox, oy), (c.EMPTY, 0, 0)),
                   k, "a placed ball not in a cell of the grid holding a ball")
    assert_refused(env, _at(st, k, "obstacles", (0, 1), -1),
                   k, "a placed ball not in a cell of the grid holding a ball")


@pytest.mark.parametrize("height", [5, 25, 64, 70])  # (above 64: cell by cell)
def test_reaches_edge_is_a_flood_fill(height):
    """``reaches_edge`` on random walls, against a plain breadth-first search."""
    from collections import deque

    from batchenv.envs.minigrid.base import reaches_edge

    rng = np.random.default_rng(height)
    kind = np.where(rng.random((60, 9, height)) < 0.45, c.WALL, c.EMPTY).astype(np.int8)
    kind[:20, [0, -1]] = c.WALL  # a third of them walled round
    kind[:20, :, [0, -1]] = c.WALL
    x, y = rng.integers(0, 9, 60), rng.integers(0, height, 60)
    expected = []
    for k in range(60):
        seen, todo, found = {(x[k], y[k])}, deque([(x[k], y[k])]), False
        while todo and kind[k, x[k], y[k]] != c.WALL:
            a, b = todo.popleft()
            found |= a in (0, 8) or b in (0, height - 1)
            for da, db in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                cell = (a + da, b + db)
                if 0 <= cell[0] < 9 and 0 <= cell[1] < height and cell not in seen \
                        and kind[k][cell] != c.WALL:
                    seen.add(cell)
                    todo.append(cell)
        expected.append(found)
    got = reaches_edge(kind, x, y)
    assert got.tolist() == expected and 0 < got.sum() < 60
