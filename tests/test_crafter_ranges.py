"""BatchCrafter's valid states (its schema's ``Range``\\ s and ``check_state``), fuzzed
(``tests/range_fuzz.py``): random worlds inside them — every material anywhere, objects of
every kind in every slot up to a full object table, the player and the objects often on the
world's edge, vitals and counters a quarter of the time at a bound — made to hold the
invariants (the object map, the census), step alike compiled and as a Python loop (pixels,
the night's noise and all) without an error, to states inside them again; a value one past
any bound of any field, and each invariant broken, is refused by ``set_state`` naming the
field or the invariant, the env and the value, and changes nothing.

A compiled kernel that indexes by a state value it trusts (a material's texture, an object's
cell plus a direction, a chunk's census) reads or writes another row past a bad value; the
Python loop raises or reads differently, so ``step_alike`` sees it."""

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

from batchenv.envs.crafter.data import (  # noqa: E402
    AREA,
    CHUNK,
    COW,
    GRASS,
    KINDS,
    N_CHUNKS,
    PATH,
    SKELETON,
    ZOMBIE,
)
from batchenv.envs.crafter.env import BatchCrafter  # noqa: E402

N = 4  # worlds per run: the Python form steps a few envs a second
STEPS = 3
_CHUNKS = N_CHUNKS * N_CHUNKS
_EDGE = np.zeros((AREA, AREA), dtype=bool)
_EDGE[[0, -1], :] = _EDGE[:, [0, -1]] = True


def repair(env: BatchCrafter, records: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``records`` (filled inside the ranges) made to pass ``check_state``: the player and
    ``n_objects`` objects on distinct cells (an edge cell four times as likely as another;
    record 0 with a full object table, record 1's player on the edge),
    the object map and the census recomputed, a chunk list without repeats. Slots at and
    above ``n_objects`` keep their random contents: no kernel may read them. The counters
    that a step raises by one (the clock, an object's timer, the unlock counts) start at
    least :data:`STEPS` below their bound, 2**31 - 2: a state no episode reaches (crafter's
    own ints grow without bound)."""
    out = records.copy()
    for name in ("step", "obj_timer", "achievements"):
        high = env.state_field_ranges[name].resolve(env)[1]
        np.minimum(out[name], high - STEPS, out=out[name])
    capacity = len(out["kind"][0])
    weights = np.where(_EDGE.reshape(-1), 4.0, 1.0)
    weights /= weights.sum()
    chunk = (np.arange(AREA)[:, None] // CHUNK) * N_CHUNKS + np.arange(AREA)[None, :] // CHUNK
    for r, rec in enumerate(out):
        k = capacity if r == 0 else int(rng.integers(0, 60))  # one full object table
        cells = rng.choice(AREA * AREA, k + 1, replace=False, p=weights)
        if r == 1 and not _EDGE.reshape(-1)[cells[0]]:  # one player on the world's edge
            cells[0] = rng.choice(np.setdiff1d(np.flatnonzero(_EDGE), cells))
        x, y = cells // AREA, cells % AREA
        rec["player_x"], rec["player_y"] = x[0], y[0]
        rec["n_objects"] = k
        kind = rec["kind"]
        kind[:k] = rng.integers(1, len(KINDS), k)
        rec["obj_x"][:k], rec["obj_y"][:k] = x[1:], y[1:]
        occ = np.zeros((AREA, AREA), dtype=np.uint8)
        occ[x[1:], y[1:]] = np.arange(k) + 2
        occ[x[0], y[0]] = 1
        rec["occ"] = occ
        n_chunks = int(rng.integers(0, _CHUNKS + 1))
        rec["n_chunks"] = n_chunks
        rec["chunk_order"][:n_chunks] = rng.permutation(_CHUNKS)[:n_chunks]
        census = np.zeros((_CHUNKS, 3), dtype=np.int16)
        for column, counted in enumerate((ZOMBIE, SKELETON, COW)):
            np.add.at(census[:, column], chunk[x[1:], y[1:]][kind[:k] == counted], 1)
        rec["census"] = census
        rec["grass"] = np.bincount(chunk[rec["mat"] == GRASS], minlength=_CHUNKS)
        rec["path"] = np.bincount(chunk[rec["mat"] == PATH], minlength=_CHUNKS)
    return out


@pytest.fixture(scope="module")
def compiled() -> BatchCrafter:
    env = BatchCrafter(N, kernels="numba")
    env.reset(seed=0)
    return env


# The Python form's rules compile as long as the loop and are not cached: the `slow` pass
# (tests/conftest.py, PYTHON_FORM_IN_README).
@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2))
def test_random_worlds_inside_the_ranges_step_alike(compiled, seed):
    python = BatchCrafter(N, kernels="python")
    python.reset(seed=0)
    rng = np.random.default_rng(seed)
    records = repair(compiled, fill_inside(compiled, compiled.get_state(), rng), rng)
    records["awaiting_reset"] = False
    records["elapsed_steps"] = 0
    assert records["n_objects"][0] == len(records["kind"][0])  # a full object table
    assert _EDGE[records["player_x"], records["player_y"]].any()  # a player on the edge
    step_alike(compiled, python, records, STEPS, rng)


def test_every_bound_and_invariant_is_refused(compiled):
    rng = np.random.default_rng(7)
    records = repair(compiled, fill_inside(compiled, compiled.get_state(), rng), rng)
    assert not problems(compiled, records)
    checked = assert_every_bound_refused(compiled, records, rng)
    assert checked >= 15  # (a side at the dtype's end has no value beyond it)
    compiled.set_state(records)
    k = 3
    broken = records.copy()  # an object's cell not on the object map
    broken["obj_x"][k, 0] = (int(broken["obj_x"][k, 0]) + 1) % AREA
    assert_refused(compiled, broken, k, "occ is not the player's and the objects' cells")
    broken = records.copy()  # a cow more in a chunk's census than on the map
    broken["census"][k, 0, 2] += 1
    assert_refused(compiled, broken, k, "census, grass or path is not the chunks' count")
    broken = records.copy()
    broken["n_chunks"][k] = 2
    broken["chunk_order"][k, :2] = 5
    assert_refused(compiled, broken, k, "chunk_order names a chunk twice")
    broken = records.copy()
    broken["n_objects"][k] = max(1, int(broken["n_objects"][k]))
    broken["kind"][k, 0] = 0
    broken["occ"][k] = records["occ"][k]
    assert_refused(compiled, broken, k, "a slot below n_objects is free")
