"""batchenv.entities against scalar Python oracles: free slots, spawning, grid painting."""

from __future__ import annotations

import numpy as np
import pytest

from batchenv.entities import (
    Grid,
    first_free,
    free_count,
    nth_free,
    slot_columns,
    slot_names,
    slot_view,
    spawn,
)
from batchenv.state import State, to_records


@pytest.fixture(params=[8, 5, 13])  # 8 slots take the bit-table path, others the general
def alive(request):
    rng = np.random.default_rng(0)
    a = rng.random((500, request.param)) < rng.random((500, 1))  # from empty to full rows
    a[0], a[1] = True, False
    return a


def test_first_free_is_the_lowest_dead_slot(alive):
    slot, has_free = first_free(alive)
    for i, row in enumerate(alive):
        free = [s for s in range(len(row)) if not row[s]]
        assert has_free[i] == bool(free)
        if free:
            assert slot[i] == free[0]


def test_free_count_and_nth_free_match_minatars_slot_options(alive):
    counts = free_count(alive)
    rng = np.random.default_rng(1)
    j = (rng.random(len(alive)) * np.maximum(counts, 1)).astype(np.int64)
    slots = nth_free(alive, j)
    for i, row in enumerate(alive):
        options = [s for s in range(len(row)) if not row[s]]  # asterix.py's slot_options
        assert counts[i] == len(options)
        if options:
            assert slots[i] == options[j[i]]
    beyond = nth_free(alive, counts + np.arange(len(alive)) % 3)  # no such free slot
    assert (beyond == alive.shape[1]).all()


def test_spawn_writes_only_the_given_slots(alive):
    x = np.zeros(alive.shape, dtype=np.int8)
    before = alive.copy()
    slot, has_free = first_free(alive)
    rows = np.flatnonzero(has_free)[::2]
    spawn(alive, rows, slot[rows], {"x": (x, 7)})
    expected = before.copy()
    expected[rows, slot[rows]] = True
    np.testing.assert_array_equal(alive, expected)
    assert (x != 0).sum() == len(rows) and (x[rows, slot[rows]] == 7).all()
    with pytest.raises(ValueError, match="field 'y'"):
        spawn(alive, rows, slot[rows], {"y": (np.zeros(3), 1)})


def test_grid_paint_sets_exactly_the_given_cells():
    rng = np.random.default_rng(2)
    n, k = 50, 6
    grid = Grid(n, 10, 10, 5)
    y, x = rng.integers(0, 10, (n, k)).astype(np.int8), rng.integers(0, 10, (n, k))
    where = rng.random((n, k)) < 0.5
    out = np.zeros((n, 10, 10, 5), dtype=bool)
    grid.paint(out, y, x, 3, where)
    grid.paint(out, y[:, 0], x[:, 0], 1)  # one entity per env
    expected = np.zeros_like(out)
    for i in range(n):
        expected[i, y[i, 0], x[i, 0], 1] = True
        for s in range(k):
            if where[i, s]:
                expected[i, y[i, s], x[i, s], 3] = True
    np.testing.assert_array_equal(out, expected)
    lanes = np.arange(1, 9)[None, :]  # one row of y for every env
    np.testing.assert_array_equal(grid.cells(lanes, x[:, :1].repeat(8, 1), 0),
                                  grid.cells(np.broadcast_to(lanes, (n, 8)),
                                             x[:, :1].repeat(8, 1), 0))
    with pytest.raises(ValueError, match="shape"):
        grid.paint(np.zeros((n, 10, 10, 4), dtype=bool), y, x, 0)


def test_grid_cells_slot_major_match_env_major():
    rng = np.random.default_rng(3)
    n, k = 40, 5
    grid = Grid(n, 10, 10, 4)
    y, x = rng.integers(0, 10, (n, k)).astype(np.int8), rng.integers(0, 10, (n, k))
    np.testing.assert_array_equal(grid.cells(y.T, x.T, 2, slot_major=True),
                                  grid.cells(y, x, 2).T)


def test_slot_columns_are_one_slot_major_block_of_the_state():
    n, k = 7, 3
    dtype = np.dtype([("a", np.int8), *slot_columns([("x", np.int8), ("y", np.int8)], k),
                      *slot_columns([("alive", np.bool_)], k), ("b", np.int8)])
    assert dtype.names == ("a", "x_0", "x_1", "x_2", "y_0", "y_1", "y_2", "alive_0",
                           "alive_1", "alive_2", "b")
    assert slot_names(["x", "y"], 2) == ("x_0", "x_1", "y_0", "y_1")
    s = State(dtype, n)
    xy = slot_view(s, ("x", "y"), k)
    assert xy.shape == (2, k, n) and xy[0, 1].flags.c_contiguous
    xy[1, 2, 4] = 9  # slot 2 of y in env 4
    xy[0, 0] = np.arange(n)  # slot 0 of x in every env
    slot_view(s, ("alive",), k)[0, 1, 3] = True
    rec = to_records(s)
    assert rec["y_2"][4] == 9 and rec["y_2"].sum() == 9
    np.testing.assert_array_equal(rec["x_0"], np.arange(n))
    assert rec["alive_1"][3] and rec["alive_1"].sum() == 1 and rec["a"].sum() == 0
    with pytest.raises(ValueError, match="consecutive"):
        slot_view(s, ("x", "alive"), k)  # two dtypes: not one block
