"""The MinAtar games' per-env kernels (``reset_env``/``step_env``/``observe_env``, run by
``batchenv.perenv``) against their numpy kernels: the same observations, rewards, flags,
infos and whole state (random streams included) at every step, in every auto-reset mode,
compiled (numba) and as a Python loop (a small batch), on one thread and two; and the
``kernels=`` argument. Parity of both forms with the ``minatar`` package itself is in
``tests/test_minatar_parity.py`` and the games' own parity files."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

pytest.importorskip("numba")

from batchenv import perenv  # noqa: E402
from batchenv.envs.minatar import (  # noqa: E402
    BatchAsterix,
    BatchBreakout,
    BatchFreeway,
    BatchSeaquest,
    BatchSpaceInvaders,
)
from batchenv.state import take_rows  # noqa: E402

ALL_GAMES = [BatchAsterix, BatchBreakout, BatchFreeway, BatchSeaquest, BatchSpaceInvaders]
GAMES = [cls for cls in ALL_GAMES if perenv.has_per_env_kernels(cls)]
MODES = ["NextStep", "SameStep", "Disabled"]
#: GAMES, with Seaquest's long runs marked slow (its numpy kernels take ~10 ms a step at 64
#: envs: these runs would be the suite's longest); CI runs them in its ``-m slow`` pass.
#: Seaquest's Python loop, masked and injected-state, thread, copy, debug and observe runs,
#: and its crowded-state run below, stay in the default suite.
GAMES_SEAQUEST_SLOW = [pytest.param(cls, marks=pytest.mark.slow)
                       if cls is BatchSeaquest else cls for cls in GAMES]
#: The batch size of the compiled runs. Not a multiple of 16: Seaquest's slot views (its
#: ``kernel_views``) are strided at every batch size but multiples of 16 (where a padded
#: block's rows happen to be contiguous: batchenv/state.py), and numba compiles the loop
#: again for each layout; the sizes here (60, 30, 15, 24) share the contract's (8).
N = 60


def assert_same_step(ra, rb, what):
    for name, x, y in zip(("obs", "reward", "terminated", "truncated"), ra[:4], rb[:4]):
        assert x.dtype == y.dtype, (what, name)
        np.testing.assert_array_equal(x, y, err_msg=f"{what}: {name}")
    assert ra[4].keys() == rb[4].keys(), what
    if "final_obs" in ra[4]:
        np.testing.assert_array_equal(ra[4]["_final_obs"], rb[4]["_final_obs"], err_msg=what)
        for i in ra[4]["_final_obs"].nonzero()[0]:
            np.testing.assert_array_equal(ra[4]["final_obs"][i], rb[4]["final_obs"][i],
                                          err_msg=f"{what}: final_obs of env {i}")


def assert_same_state(a, b, what):
    sa, sb = a.get_state(), b.get_state()
    for name in sa.dtype.names:
        np.testing.assert_array_equal(sa[name], sb[name], err_msg=f"{what}: state {name}")


def pair(cls, n=N, kernels="numba", **kwargs):
    a, b = cls(n, kernels="numpy", **kwargs), cls(n, kernels=kernels, **kwargs)
    assert (a.kernels, b.kernels) == ("numpy", kernels)
    return a, b


def run_pair(a, b, steps, seed, every=50):
    rng = np.random.default_rng(seed)
    oa, _ = a.reset(seed=seed)
    ob, _ = b.reset(seed=seed)
    np.testing.assert_array_equal(oa, ob)
    for t in range(steps):
        act = rng.integers(0, a.single_action_space.n, a.num_envs)
        ra, rb = a.step(act), b.step(act)
        assert_same_step(ra, rb, f"step {t}")
        if t % every == 0 or ra[2].any() or ra[3].any():
            assert_same_state(a, b, f"step {t}")
    assert_same_state(a, b, "end")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("cls", GAMES_SEAQUEST_SLOW)
def test_per_env_equals_numpy_in_every_autoreset_mode(cls, mode):
    a, b = pair(cls, autoreset_mode=mode)
    run_pair(a, b, 400, seed=7)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("cls", GAMES)
def test_python_loop_equals_numpy_in_every_autoreset_mode(cls, mode):
    """The same per-env functions run as a Python loop (kernels="python"), a small batch
    with a time limit so that every mode's resets happen."""
    a, b = pair(cls, n=6, kernels="python", autoreset_mode=mode, max_episode_steps=40)
    run_pair(a, b, 100, seed=8, every=1)


@pytest.mark.parametrize("sticky", [0.0, 1.0, 0.37])
@pytest.mark.parametrize("cls", GAMES_SEAQUEST_SLOW)
def test_per_env_equals_numpy_sticky_and_action_sets(cls, sticky):
    a, b = pair(cls, sticky_action_prob=sticky, minimal_action_set=sticky == 0.37)
    run_pair(a, b, 300, seed=11)


@pytest.mark.parametrize("cls", GAMES_SEAQUEST_SLOW)
def test_per_env_equals_numpy_without_ramping_and_with_time_limit(cls):
    a, b = pair(cls, difficulty_ramping=False, max_episode_steps=150)
    run_pair(a, b, 300, seed=3)


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
@pytest.mark.parametrize("cls", GAMES)
def test_two_threads_equal_one_bit_for_bit(cls, mode):
    one = cls(N, autoreset_mode=mode, max_episode_steps=120)
    two = cls(N, autoreset_mode=mode, max_episode_steps=120, num_threads=2)
    assert (one.num_threads, two.num_threads) == (1, 2)
    run_pair(one, two, 200, seed=12)


@pytest.mark.parametrize("cls", GAMES)
def test_per_env_equals_numpy_under_masks_and_injected_states(cls):
    """Partial resets by mask, and a state taken from the numpy env mid-game and given to
    both (set_state with a mask), then stepping on."""
    a, b = pair(cls)
    run_pair(a, b, 300, seed=5)
    rng = np.random.default_rng(2)
    for k in range(12):
        mask = rng.random(N) < 0.3
        oa, _ = a.reset(options={"reset_mask": mask})
        ob, _ = b.reset(options={"reset_mask": mask})
        np.testing.assert_array_equal(oa, ob)
        states = a.get_state()
        a.set_state(states, mask=~mask)
        b.set_state(states, mask=~mask)
        for t in range(40):
            act = rng.integers(0, a.single_action_space.n, N)
            assert_same_step(a.step(act), b.step(act), f"round {k}, step {t}")
        assert_same_state(a, b, f"round {k}")


@pytest.mark.parametrize("cls", GAMES)
def test_per_env_env_survives_pickle_deepcopy_and_debug_checks(cls):
    env = cls(15)
    env.reset(seed=1)
    act = np.arange(15) % env.single_action_space.n
    for copy_of in (lambda e: pickle.loads(pickle.dumps(e)), copy.deepcopy):
        twin = copy_of(env)
        assert twin.kernels == "numba" and twin._per_env is not None
        assert_same_step(env.step(act), twin.step(act), "after copy")
        assert_same_state(env, twin, "after copy")
    a, b = pair(cls, n=30, debug=True)  # debug: the per-env loops under the kernel checks
    run_pair(a, b, 100, seed=9)


@pytest.mark.parametrize("cls", GAMES)
def test_observe_env_writes_every_cell_of_any_buffer(cls):
    """observe on a subset of rows, into a buffer full of True and one that starts one byte
    off an 8-byte boundary, equals the numpy kernels' observation."""
    a, b = pair(cls, n=24)
    run_pair(a, b, 120, seed=4)
    rows = np.array([3, 7, 8, 20])
    expected = np.zeros((4, *a.single_observation_space.shape), dtype=bool)
    a.observe(take_rows(a.state, rows), expected)
    dirty = np.ones_like(expected)
    b.observe(take_rows(b.state, rows), dirty)
    np.testing.assert_array_equal(dirty, expected)
    raw = np.ones(expected.size + 1, dtype=bool)
    offset = raw[1:].reshape(expected.shape)
    b.observe(take_rows(b.state, rows), offset)
    np.testing.assert_array_equal(offset, expected)


def test_asterix_per_env_equals_numpy_in_late_game_states():
    """Asterix's rules a random policy rarely reaches (every ramp, the fastest speeds, a
    spawn with every lane taken), from random late-game states given to both forms."""
    a, b = pair(BatchAsterix, n=256)
    a.reset(seed=4)
    b.reset(seed=4)
    rng = np.random.default_rng(4)
    s = a.get_state()
    n, slots = s["alive"].shape
    s["alive"] = rng.random((n, slots)) < 0.85
    s["ent_x"] = rng.integers(0, 10, (n, slots))
    s["ent_right"] = rng.random((n, slots)) < 0.5
    s["ent_gold"] = rng.random((n, slots)) < 0.3
    s["spawn_speed"] = rng.integers(1, 11, n)
    s["spawn_timer"] = rng.integers(0, s["spawn_speed"])
    s["move_speed"] = rng.integers(1, 6, n)
    s["move_timer"] = rng.integers(0, s["move_speed"])
    s["ramp_timer"] = rng.integers(-1, 101, n)
    s["ramp_index"] = rng.integers(0, 10, n)
    a.set_state(s)
    b.set_state(s)
    full_lane_spawns = ramps = 0
    for t in range(60):
        before = a.state
        full_lane_spawns += np.count_nonzero((before.spawn_timer == 0)
                                             & before.alive.all(axis=1)
                                             & ~before.awaiting_reset)
        ramps += np.count_nonzero((before.ramp_timer < 0) & ~before.awaiting_reset)
        act = rng.integers(0, a.single_action_space.n, n)
        assert_same_step(a.step(act), b.step(act), f"step {t}")
        assert_same_state(a, b, f"step {t}")
    assert full_lane_spawns > 10 and ramps > 10  # the rare rules did run


def test_asterix_lane_codes_env_is_lane_codes():
    """The per-env observation's lane codes (indices into the table of lane images, the 8
    lanes as the bytes of one word) are the numpy observation's, for random states (dead
    slots' columns anywhere from -1 to 10)."""
    from batchenv.envs.minatar.asterix import lane_codes, lane_codes_env

    env = BatchAsterix(256, kernels="numpy")
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    s = env.get_state()
    shape = s["alive"].shape
    s["alive"] = rng.random(shape) < 0.5
    s["ent_x"] = np.where(s["alive"], rng.integers(0, 10, shape), rng.integers(-1, 11, shape))
    s["ent_right"] = rng.random(shape) < 0.5
    s["ent_gold"] = rng.random(shape) < 0.3
    env.set_state(s)
    expected = lane_codes(env.state)
    words = np.array([lane_codes_env(env.state, i) for i in range(shape[0])], np.uint64)
    got = (words[:, None] >> np.arange(0, 64, 8, dtype=np.uint64)) & np.uint64(0xFF)
    np.testing.assert_array_equal(got.astype(np.int64), expected)


def test_seaquest_per_env_equals_numpy_in_crowded_late_game_states():
    """Seaquest's rules a short random run rarely reaches (many enemies and subs firing,
    bullets in flight, divers on board, surfacings that ramp, the fastest speeds), from a
    numpy env's states after a scripted run, then with random slot contents given to
    both forms."""
    a, b = pair(BatchSeaquest, sticky_action_prob=0.0)
    run_pair(a, b, 150, seed=6, every=25)
    rng = np.random.default_rng(6)
    s = a.get_state()
    n = len(s)
    s["e_spawn_speed"] = rng.integers(1, 21, n)
    s["e_spawn_timer"] = rng.integers(0, 3, n)
    s["move_speed"] = rng.integers(2, 6, n)
    s["ramp_index"] = rng.integers(0, 20, n)
    s["diver_count"] = rng.integers(-2, 7, n)
    s["oxygen"] = rng.integers(0, 201, n)
    s["surface"] = False
    s["sub_y"] = rng.integers(0, 3, n)
    s["d_spawn_timer"] = rng.integers(0, 3, n)
    for y in range(10):
        s[f"eb_left_{y}"] = rng.integers(0, 1 << 10, n) & rng.integers(0, 1 << 10, n)
        s[f"eb_right_{y}"] = rng.integers(0, 1 << 10, n) & rng.integers(0, 1 << 10, n)
    a.set_state(s)
    b.set_state(s)
    enemies = ramps = 0
    for t in range(200):
        act = rng.integers(0, 6, n)
        enemies += int(a.state.en_slots.sum())
        ramp_index = a.state.ramp_index.copy()
        assert_same_step(a.step(act), b.step(act), f"step {t}")
        ramps += np.count_nonzero(a.state.ramp_index > ramp_index)
        if t % 10 == 0:
            assert_same_state(a, b, f"step {t}")
    assert_same_state(a, b, "end")
    assert enemies > N * 100, enemies  # crowded boards
    assert ramps >= 10, ramps  # and surfacings that ramp did run


def test_freeway_per_env_equals_numpy_from_every_car_configuration():
    """Freeway's per-env step moves an env's 8 cars as the bytes of one word: from
    injected states with cars in every column, at every speed (0 included: the direction
    draw of exactly 0.5, which no seeded run reaches) and timer, and the chicken in every
    row, both forms step alike."""
    a, b = pair(BatchFreeway, n=512)
    a.reset(seed=4)
    b.reset(seed=4)
    rng = np.random.default_rng(4)
    states = a.get_state()
    shape = states["car_x"].shape
    states["car_x"] = rng.integers(0, 10, shape)
    states["car_speed"] = rng.integers(-5, 6, shape)
    states["car_timer"] = rng.integers(0, 6, shape) % (np.abs(states["car_speed"]) + 1)
    states["pos"] = rng.integers(0, 10, len(states))
    states["move_timer"] = rng.integers(0, 4, len(states))
    assert (states["car_speed"] == 0).any() and (states["pos"] == 0).any()
    a.set_state(states)
    b.set_state(states)
    for t in range(60):
        act = rng.integers(0, 6, 512)
        assert_same_step(a.step(act), b.step(act), f"step {t}")
        assert_same_state(a, b, f"step {t}")


def test_kernels_argument():
    assert BatchBreakout(4).kernels == "numba"  # "auto", numba installed
    assert BatchBreakout(4, kernels="numpy").kernels == "numpy"
    assert BatchBreakout(4, kernels="python").kernels == "python"
    assert BatchBreakout(4, num_threads=2).num_threads == 2
    with pytest.raises(ValueError, match="kernels must be one of"):
        BatchBreakout(4, kernels="cuda")
    with pytest.raises(ValueError, match="num_threads=2"):
        BatchBreakout(4, kernels="numpy", num_threads=2)


def test_without_numba_auto_runs_the_numpy_kernels_and_numba_is_an_error(monkeypatch):
    monkeypatch.setattr(perenv, "numba_available", lambda: False)
    assert BatchBreakout(4).kernels == "numpy"
    with pytest.raises(ImportError, match=r"pip install 'batchenv\[fast\]'"):
        BatchBreakout(4, kernels="numba")
