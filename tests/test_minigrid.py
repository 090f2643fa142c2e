"""MiniGrid parity: inject ``minigrid`` envs' states into a batch, step both with the same
random actions, compare image, direction, reward, terminated and truncated at every step.

The generators draw from batchenv's streams, so layouts are compared as statistics."""

from __future__ import annotations

import numpy as np
import pytest
from _splitmix import words

import batchenv
from batchenv.envs.minigrid import (
    BatchBlockedUnlockPickup,
    BatchCrossing,
    BatchDoorKey,
    BatchDynamicObstacles,
    BatchEmpty,
    BatchFourRooms,
    BatchKeyCorridor,
    BatchLavaGap,
    BatchMultiRoom,
    BatchUnlock,
    BatchUnlockPickup,
    common,
)

minigrid = pytest.importorskip("minigrid")  # the test extra pins it
import gymnasium as gym  # noqa: E402
from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX  # noqa: E402
from minigrid.wrappers import FullyObsWrapper  # noqa: E402


def inject(ref, env, i):
    """Write minigrid env ``ref``'s grid, agent, carried object and step count into row i."""
    u = ref.unwrapped
    s = env.state
    enc = u.grid.encode()
    s.grid[i] = enc
    s.contains[i] = 0
    for x in range(u.width):
        for y in range(u.height):
            c = u.grid.get(x, y)
            if c is not None and c.type == "box" and c.contains is not None:
                s.contains[i, x, y] = (OBJECT_TO_IDX[c.contains.type],
                                       COLOR_TO_IDX[c.contains.color])
    s.carry[i] = 0
    if u.carrying is not None:
        s.carry[i, :3] = u.carrying.encode()
    s.agent_x[i], s.agent_y[i] = u.agent_pos
    s.agent_dir[i] = u.agent_dir
    s.step_count[i] = u.step_count
    if getattr(u, "door", None) is not None:  # Unlock's target door
        s.target_x[i], s.target_y[i] = u.door.cur_pos
    if "obstacles" in env.full_state_dtype.names:  # Dynamic-Obstacles' balls, in their order
        s.obstacles[i] = -1
        for k, ball in enumerate(u.obstacles):
            s.obstacles[i, k] = ball.cur_pos
    s.elapsed_steps[i] = u.step_count


class SharedStream:
    """Row i's stream, for a ``minigrid`` env: as its ``_rand_int`` (``np_random.integers``
    in minigrid; what ``_rand_elem``, ``_rand_color``, ``place_obj`` ... call) it draws the
    words batchenv's row draws, computed by the independent oracle (tests/_splitmix.py),
    so that both generators see the same numbers."""

    def __init__(self, key, counter):
        self.key, self.counter = int(key), int(counter)

    def rand_int(self, low, high):
        word = words(self.key, self.counter, 1)[0]
        self.counter += 1
        return int(low) + word % int(high - low)

    def attach(self, ref):
        ref.unwrapped._rand_int = self.rand_int
        return self


def run_parity(make_ours, ref_id, n=4, steps=300, full=False, seed=0, act_p=None):
    env = make_ours(n, autoreset_mode="Disabled", observation="full" if full else "image")
    refs = [gym.make(ref_id) for _ in range(n)]
    if full:
        refs = [FullyObsWrapper(r) for r in refs]
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    episode = [0] * n

    def ref_reset(i):
        o, _ = refs[i].reset(seed=seed * 1000 + i * 100 + episode[i])
        episode[i] += 1
        inject(refs[i], env, i)
        # from here on (Dynamic-Obstacles' moves) both draw row i's words
        SharedStream(env.state.rng_key[i], env.state.rng_counter[i]).attach(refs[i])
        return o

    ref_obs = [ref_reset(i) for i in range(n)]
    out = np.zeros(env.observation_space.shape, np.uint8)
    env.kernel_form.observe(env, env.state, out)
    for i in range(n):
        np.testing.assert_array_equal(out[i], ref_obs[i]["image"])
    ends = 0
    for t in range(steps):
        a = rng.choice(len(act_p) if act_p else 7, size=n, p=act_p)
        obs, rew, term, trunc, _ = env.step(a)
        for i in range(n):
            o, r, te, tr, _ = refs[i].step(int(a[i]))
            np.testing.assert_array_equal(obs[i], o["image"], err_msg=f"step {t} env {i}")
            assert env.state.agent_dir[i] == o["direction"]
            assert rew[i] == r and term[i] == te and trunc[i] == tr, (t, i)
        done = term | trunc
        if done.any():
            ends += int(done.sum())
            env.reset(options={"reset_mask": done})
            for i in np.flatnonzero(done):
                ref_reset(int(i))
    return ends


# DoorKey with a bias to forward/pickup/toggle so that keys, doors and goals are reached
_P = [0.2, 0.2, 0.35, 0.1, 0.03, 0.1, 0.02]


@pytest.mark.parametrize("full", [False, True])
def test_doorkey_parity(full):
    ends = run_parity(lambda n, **k: BatchDoorKey(n, size=5, **k), "MiniGrid-DoorKey-5x5-v0",
                      n=4, steps=400, full=full, act_p=_P)
    assert ends >= 2


def test_doorkey8_parity():
    run_parity(lambda n, **k: BatchDoorKey(n, size=8, **k), "MiniGrid-DoorKey-8x8-v0",
               n=3, steps=200, act_p=_P)


def test_empty_parity():
    ends = run_parity(lambda n, **k: BatchEmpty(n, size=5, random_start=True, **k),
                      "MiniGrid-Empty-Random-5x5-v0", n=4, steps=300, act_p=_P)
    assert ends > 0


def test_fourrooms_parity():
    run_parity(lambda n, **k: BatchFourRooms(n, **k), "MiniGrid-FourRooms-v0", n=3,
               steps=250, act_p=_P)


@pytest.mark.parametrize("size", [5, 7])
def test_lavagap_parity(size):
    ends = run_parity(lambda n, **k: BatchLavaGap(n, size=size, **k),
                      f"MiniGrid-LavaGapS{size}-v0", n=4, steps=200, act_p=_P)
    assert ends > 0


@pytest.mark.parametrize("name, obstacle, size, n", [
    ("LavaCrossing", "lava", 9, 2), ("SimpleCrossing", "wall", 11, 5)])
def test_crossing_parity(name, obstacle, size, n):
    run_parity(lambda m, **k: BatchCrossing(m, size=size, num_crossings=n, obstacle=obstacle,
                                            **k),
               f"MiniGrid-{name}S{size}N{n}-v0", n=3, steps=200, act_p=_P)


def _crossing_features(g):
    """Rows and columns that are rivers, and the openings' cells, as one tuple."""
    inner = g[1:-1, 1:-1, 0]
    obst = (inner == common.LAVA) | (inner == common.WALL)
    cols = tuple(int(x) + 1 for x in np.flatnonzero(obst.sum(1) >= inner.shape[1] - 4))
    rows = tuple(int(y) + 1 for y in np.flatnonzero(obst.sum(0) >= inner.shape[0] - 4))
    return cols, rows


def test_crossing_layout_statistics():
    """LavaCrossingS9N2: the distribution of (river columns, river rows) over 600 layouts
    against minigrid's, and the count of open cells."""
    n = 600
    env = BatchCrossing(n, size=9, num_crossings=2)
    env.reset(seed=5)
    ours = [_crossing_features(env.state.grid[i]) for i in range(n)]
    ref = gym.make("MiniGrid-LavaCrossingS9N2-v0")
    theirs = []
    for k in range(n):
        ref.reset(seed=k)
        theirs.append(_crossing_features(ref.unwrapped.grid.encode()))
    kinds = sorted(set(ours) | set(theirs))
    assert set(ours) == set(theirs)
    a = np.array([ours.count(c) for c in kinds]) / n
    b = np.array([theirs.count(c) for c in kinds]) / n
    assert np.abs(a - b).max() < 0.08, (kinds, a, b)


def test_unlock_parity():
    ends = run_parity(BatchUnlock, "MiniGrid-Unlock-v0", n=4, steps=400,
                      act_p=[0.15, 0.15, 0.3, 0.15, 0.05, 0.18, 0.02])
    assert ends > 0


def test_unlockpickup_parity():
    run_parity(BatchUnlockPickup, "MiniGrid-UnlockPickup-v0", n=4, steps=300,
               act_p=[0.15, 0.15, 0.3, 0.2, 0.05, 0.13, 0.02])


def test_blockedunlockpickup_parity():
    run_parity(BatchBlockedUnlockPickup, "MiniGrid-BlockedUnlockPickup-v0", n=4, steps=300,
               act_p=[0.15, 0.15, 0.3, 0.2, 0.05, 0.13, 0.02])


def test_unlockpickup_picking_the_box_pays_and_missions_name_its_colour():
    env = BatchUnlockPickup(3)
    env.reset(seed=0)
    s = env.state
    names = [f"pick up the {common.COLOR_NAMES[c]} box" for c in s.target_color]
    assert env.missions() == tuple(names)
    bx, by = np.argwhere(s.grid[0, :, :, 0] == common.BOX)[0]
    s.grid[0, bx - 1, by] = (common.EMPTY, 0, 0)
    s.agent_x[0], s.agent_y[0], s.agent_dir[0] = bx - 1, by, 0
    _, r, term, _, _ = env.step(np.array([common.PICKUP, common.DONE, common.DONE]))
    assert term[0] and not term[1:].any() and r[0] == pytest.approx(1 - 0.9 / 288)


@pytest.mark.parametrize("cls, ref_id", [
    (BatchUnlockPickup, "MiniGrid-UnlockPickup-v0"),
    (BatchBlockedUnlockPickup, "MiniGrid-BlockedUnlockPickup-v0")])
def test_unlockpickup_layout_statistics(cls, ref_id):
    n = 500
    env = cls(n)
    env.reset(seed=11)
    s = env.state

    def feats(g, ax, ay, d):
        bx, by = np.argwhere(g[:, :, 0] == common.BOX)[0]
        kx, ky = np.argwhere(g[:, :, 0] == common.KEY)[0]
        balls = np.argwhere(g[:, :, 0] == common.BALL)
        ball = (*balls[0], g[balls[0][0], balls[0][1], 1]) if len(balls) else (0, 0, 0)
        return (bx, by, g[bx, by, 1], kx, ky, ax, ay, d, *ball)

    ours = np.array([feats(s.grid[i], s.agent_x[i], s.agent_y[i], s.agent_dir[i])
                     for i in range(n)], float)
    ref = gym.make(ref_id)
    rows = []
    for k in range(n):
        ref.reset(seed=k)
        u = ref.unwrapped
        rows.append(feats(u.grid.encode(), *u.agent_pos, u.agent_dir))
    _compare(ours, np.array(rows, float), n)


def test_unlock_layout_statistics():
    """Door row and colour, key cell, agent cell and direction over 500 layouts."""
    n = 500
    env = BatchUnlock(n)
    env.reset(seed=7)
    s = env.state

    def feats(g, ax, ay, d):
        door_y = int(np.flatnonzero(g[5, :, 0] == common.DOOR)[0])
        kx, ky = np.argwhere(g[:, :, 0] == common.KEY)[0]
        return (door_y, g[5, door_y, 1], kx, ky, ax, ay, d)

    ours = np.array([feats(s.grid[i], s.agent_x[i], s.agent_y[i], s.agent_dir[i])
                     for i in range(n)], float)
    ref = gym.make("MiniGrid-Unlock-v0")
    rows = []
    for k in range(n):
        ref.reset(seed=k)
        u = ref.unwrapped
        rows.append(feats(u.grid.encode(), *u.agent_pos, u.agent_dir))
    _compare(ours, np.array(rows, float), n)


def test_ids_give_the_native_env():
    import gymnasium

    assert isinstance(batchenv.make("MiniGrid-DoorKey-8x8-v0", 2), BatchDoorKey)
    env = gymnasium.make_vec("batchenv/MiniGrid-DoorKey-8x8-v0", 2)
    assert isinstance(env, BatchDoorKey) and env.max_episode_steps == 640
    assert env.missions() == ("use the key to open the door and then get to the goal",) * 2
    assert env.reset(seed=0)[0].shape == (2, 7, 7, 3)


def test_max_episode_steps_none_is_the_familys_limit():
    """max_episode_steps=None (a training script's unset flag) keeps minigrid's max_steps:
    the episode is truncated there, and its rewards never go below 0."""
    env = batchenv.make("MiniGrid-DoorKey-5x5-v0", 2, max_episode_steps=None)
    assert env.max_episode_steps == 250
    env.reset(seed=0)
    for _ in range(249):
        _, reward, _, truncated, _ = env.step(np.array([common.LEFT, common.LEFT]))
        assert not truncated.any() and (reward == 0).all()
    _, _, _, truncated, _ = env.step(np.array([common.LEFT, common.LEFT]))
    assert truncated.all()
    assert batchenv.make("MiniGrid-DoorKey-5x5-v0", 2, max_episode_steps=7).max_episode_steps == 7


def test_doorkey_reward_on_goal():
    env = BatchDoorKey(1, size=5)
    env.reset(seed=0)
    s = env.state
    s.grid[0, 1:4, 1:4] = (common.EMPTY, 0, 0)
    s.grid[0, 3, 3] = (common.GOAL, common.GREEN, 0)
    s.agent_x[0], s.agent_y[0], s.agent_dir[0] = 3, 2, 1
    s.step_count[0] = s.elapsed_steps[0] = 9
    _, r, term, _, _ = env.step(np.array([common.FORWARD]))
    assert term[0] and r[0] == pytest.approx(1 - 0.9 * 10 / 250)


def _layouts(gen, n):
    """(agent x, agent y, dir, wall column, door row, key x, key y) of n start states."""
    rows = []
    for _s, a, d, g in gen(n):
        wall = [x for x in range(1, g.shape[0] - 1) if (g[x, 1:-1, 0] != 1).all()
                and (g[x, :, 0] == common.WALL).sum() == g.shape[1] - 1][0]
        door = int(np.flatnonzero(g[wall, :, 0] == common.DOOR)[0])
        kx, ky = np.argwhere(g[:, :, 0] == common.KEY)[0]
        rows.append((a[0], a[1], d, wall, door, kx, ky))
    return np.array(rows, dtype=float)


def test_doorkey_layout_statistics():
    n = 600

    def ours(n):
        env = BatchDoorKey(n, size=8)
        env.reset(seed=1)
        s = env.state
        for i in range(n):
            yield s, (s.agent_x[i], s.agent_y[i]), s.agent_dir[i], s.grid[i]

    def theirs(n):
        ref = gym.make("MiniGrid-DoorKey-8x8-v0")
        for k in range(n):
            ref.reset(seed=k)
            u = ref.unwrapped
            yield None, u.agent_pos, u.agent_dir, u.grid.encode()

    a, b = _layouts(ours, n), _layouts(theirs, n)
    # every coordinate's mean within 5 standard errors, and the same supports
    se = np.sqrt(a.var(0) / n + b.var(0) / n) + 1e-9
    assert (np.abs(a.mean(0) - b.mean(0)) < 5 * se).all(), (a.mean(0), b.mean(0))
    for k in range(a.shape[1]):
        assert set(a[:, k]) == set(b[:, k]), k


def _compare(a, b, n):
    se = np.sqrt(a.var(0) / n + b.var(0) / n) + 1e-9
    assert (np.abs(a.mean(0) - b.mean(0)) < 5 * se).all(), (a.mean(0), b.mean(0))
    for k in range(a.shape[1]):
        assert set(a[:, k]) == set(b[:, k]), k


@pytest.mark.parametrize("cls, ref_id, code", [
    (BatchLavaGap, "MiniGrid-LavaGapS7-v0", common.EMPTY),
    (BatchFourRooms, "MiniGrid-FourRooms-v0", common.GOAL),
])
def test_layout_statistics(cls, ref_id, code):
    """Agent cell and direction, and (LavaGap) the gap / (FourRooms) the goal: the same
    support and means within 5 standard errors over 400 layouts each."""
    n = 400
    kw = {"size": 7} if cls is BatchLavaGap else {}
    env = cls(n, **kw)
    env.reset(seed=3)
    s = env.state

    def key_cell(g):
        if code == common.EMPTY:  # the gap: the empty cell of the lava column
            x = int(np.flatnonzero((g[:, :, 0] == common.LAVA).any(1))[0])
            return x, int(np.flatnonzero(g[x, 1:-1, 0] == common.EMPTY)[0]) + 1
        return tuple(np.argwhere(g[:, :, 0] == common.GOAL)[0])

    ours = np.array([(s.agent_x[i], s.agent_y[i], s.agent_dir[i], *key_cell(s.grid[i]))
                     for i in range(n)], float)
    ref = gym.make(ref_id)
    rows = []
    for k in range(n):
        ref.reset(seed=k)
        u = ref.unwrapped
        rows.append((*u.agent_pos, u.agent_dir, *key_cell(u.grid.encode())))
    _compare(ours, np.array(rows, float), n)


# ------------------------------------------------------------------ draw for draw
#: ids whose generators draw only through minigrid's ``_rand_int`` (Crossing shuffles with
#: ``np_random.shuffle``: its layouts are compared as statistics above)
DRAW_FOR_DRAW = [
    "MiniGrid-Empty-Random-6x6-v0", "MiniGrid-DoorKey-8x8-v0", "MiniGrid-DoorKey-16x16-v0",
    "MiniGrid-FourRooms-v0", "MiniGrid-LavaGapS7-v0", "MiniGrid-Unlock-v0",
    "MiniGrid-UnlockPickup-v0", "MiniGrid-BlockedUnlockPickup-v0",
    "MiniGrid-MultiRoom-N2-S4-v0", "MiniGrid-MultiRoom-N4-S5-v0", "MiniGrid-MultiRoom-N4-S5-v1",
    "MiniGrid-MultiRoom-N6-v0", "MiniGrid-KeyCorridorS3R1-v0", "MiniGrid-KeyCorridorS3R3-v0",
    "MiniGrid-KeyCorridorS4R3-v0", "MiniGrid-KeyCorridorS6R3-v0",
    "MiniGrid-Dynamic-Obstacles-5x5-v0", "MiniGrid-Dynamic-Obstacles-Random-6x6-v0",
    "MiniGrid-Dynamic-Obstacles-16x16-v0",
]


@pytest.mark.filterwarnings("ignore:.*out of date")  # minigrid's legacy MultiRoom-N4-S5-v0
@pytest.mark.parametrize("env_id", DRAW_FOR_DRAW)
def test_layouts_draw_for_draw(env_id):
    """Given the same random words, each generator makes minigrid's very layout: a minigrid
    env drawing row i's words (SharedStream) builds the grid, agent cell and direction of
    row i, word for word (the same number of words too)."""
    n = 12
    env = batchenv.make(env_id, n)
    env.reset(seed=21)
    s = env.state
    ref = gym.make(env_id)
    for i in range(n):
        stream = SharedStream(s.rng_key[i], 0).attach(ref)
        ref.reset(seed=0)
        u = ref.unwrapped
        np.testing.assert_array_equal(s.grid[i], u.grid.encode(), err_msg=f"{env_id} env {i}")
        assert (s.agent_x[i], s.agent_y[i], s.agent_dir[i]) == (*u.agent_pos, u.agent_dir)
        assert stream.counter == s.rng_counter[i], (env_id, i)
        if hasattr(env, "missions") and hasattr(u, "mission"):
            assert env.missions()[i] == u.mission


def test_multiroom_parity():
    ends = run_parity(lambda n, **k: BatchMultiRoom(n, min_rooms=4, max_rooms=4,
                                                    max_room_size=5, **k),
                      "MiniGrid-MultiRoom-N4-S5-v1", n=4, steps=250,
                      act_p=[0.2, 0.2, 0.4, 0.02, 0.02, 0.14, 0.02])
    assert ends > 0


def test_multiroom_n2_reaches_the_goal():
    """N2-S4's short episodes end on the goal, too: the reward's formula is compared."""
    env = BatchMultiRoom(64, min_rooms=2, max_rooms=2, max_room_size=4)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    won = 0
    for _ in range(120):
        _, r, term, _, _ = env.step(rng.choice(7, 64, p=[0.2, 0.2, 0.4, 0, 0, 0.2, 0]))
        won += int((r > 0).sum())
        assert ((r > 0) == term).all()
    assert won > 0


@pytest.mark.parametrize("size, rows", [(3, 3), (4, 3)])
def test_keycorridor_parity(size, rows):
    ends = run_parity(lambda n, **k: BatchKeyCorridor(n, room_size=size, num_rows=rows, **k),
                      f"MiniGrid-KeyCorridorS{size}R{rows}-v0", n=4, steps=300,
                      act_p=[0.15, 0.15, 0.3, 0.15, 0.05, 0.18, 0.02])
    if size == 3:  # max_steps 270 < 300: every env ended (truncated, if nothing else)
        assert ends >= 4


def test_keycorridor_picking_the_ball_pays_and_missions_name_its_colour():
    env = BatchKeyCorridor(2, room_size=3, num_rows=1)
    env.reset(seed=0)
    s = env.state
    assert env.missions() == tuple(f"pick up the {common.COLOR_NAMES[c]} ball"
                                   for c in s.target_color)
    bx, by = np.argwhere(s.grid[0, :, :, 0] == common.BALL)[0]
    assert s.grid[0, bx, by, 1] == s.target_color[0]
    s.grid[0, bx - 1, by] = (common.EMPTY, 0, 0)
    s.agent_x[0], s.agent_y[0], s.agent_dir[0] = bx - 1, by, 0
    _, r, term, _, _ = env.step(np.array([common.PICKUP, common.DONE]))
    assert term[0] and not term[1] and r[0] == pytest.approx(1 - 0.9 / 270)


@pytest.mark.parametrize("env_id, n_obstacles", [
    ("MiniGrid-Dynamic-Obstacles-5x5-v0", 2), ("MiniGrid-Dynamic-Obstacles-Random-6x6-v0", 3),
    ("MiniGrid-Dynamic-Obstacles-8x8-v0", 4)])
def test_dynamic_obstacles_parity(env_id, n_obstacles):
    """The balls' random moves too: both sides draw row i's words (SharedStream)."""
    size = int(env_id.split("x")[-1].split("-")[0])
    ends = run_parity(lambda n, **k: BatchDynamicObstacles(
        n, size=size, n_obstacles=n_obstacles, random_start="Random" in env_id, **k),
        env_id, n=4, steps=200, act_p=[0.25, 0.25, 0.5])
    assert ends > 0


def test_dynamic_obstacles_collision_costs_one():
    env = BatchDynamicObstacles(2, size=5, n_obstacles=0)
    env.reset(seed=0)
    s = env.state
    s.agent_x[:], s.agent_y[:], s.agent_dir[:] = 1, 1, 2  # facing the left wall
    _, r, term, _, _ = env.step(np.array([common.FORWARD, common.LEFT]))
    assert r.tolist() == [-1.0, 0.0] and term.tolist() == [True, False]
    assert env.single_action_space.n == 3


# The Python form of these classes: the `slow` pass (tests/conftest.py,
# PYTHON_FORM_IN_README); README's command holds Empty's to its compiled loop
# (tests/test_minigrid_ranges.py).
@pytest.mark.slow
@pytest.mark.parametrize("cls, kw", [
    (BatchDoorKey, {"size": 5}), (BatchMultiRoom, {"min_rooms": 2, "max_rooms": 2,
                                                   "max_room_size": 4}),
    (BatchKeyCorridor, {"room_size": 3, "num_rows": 2}),
    (BatchDynamicObstacles, {"size": 5, "n_obstacles": 2}),
    (BatchCrossing, {"size": 9, "num_crossings": 2})])
def test_python_kernels_equal_compiled(cls, kw):
    """kernels="python" (the same functions as a Python loop) steps exactly as the compiled
    loop: states, observations, rewards and flags, through auto-resets."""
    n = 6
    a, b = cls(n, kernels="python", **kw), cls(n, kernels="numba", **kw)
    assert (a.kernels, b.kernels) == ("python", "numba")
    oa, _ = a.reset(seed=4)
    ob, _ = b.reset(seed=4)
    np.testing.assert_array_equal(oa, ob)
    rng = np.random.default_rng(1)
    for t in range(40):
        act = rng.integers(0, a.single_action_space.n, n)
        ra, rb = a.step(act), b.step(act)
        for x, y in zip(ra[:4], rb[:4]):
            np.testing.assert_array_equal(x, y, err_msg=f"step {t}")
    for name in a.full_state_dtype.names:
        np.testing.assert_array_equal(getattr(a.state, name), getattr(b.state, name), name)


@pytest.mark.parametrize("env_id", ["MiniGrid-DoorKey-5x5-v0", "MiniGrid-LavaGapS5-v0",
                                    "MiniGrid-BlockedUnlockPickup-v0",
                                    "MiniGrid-Dynamic-Obstacles-5x5-v0"])
def test_rgb_array_frames_equal_minigrids_pixel_for_pixel(env_id):
    """minigrid's render() (tiles, the agent's triangle, the seen cells highlighted) and
    ours for minigrid's states injected along a random walk (locked doors, keys, balls,
    boxes, lava, goal, walls, the agent turning), then with every door open and closed."""
    ref = gym.make(env_id, render_mode="rgb_array")
    env = batchenv.make(env_id, 2, render_mode="rgb_array", autoreset_mode="Disabled")
    env.reset(seed=0)
    ref.reset(seed=1)
    rng = np.random.default_rng(0)
    for t in range(20):
        inject(ref, env, 1)
        frame = env.render()[1]
        assert frame.dtype == np.uint8
        np.testing.assert_array_equal(frame, ref.render(), err_msg=f"{env_id} step {t}")
        _, _, term, trunc, _ = ref.step(int(rng.integers(0, ref.action_space.n)))
        if term or trunc:
            ref.reset()
    u = ref.unwrapped
    doors = [c for c in u.grid.grid if c is not None and c.type == "door"]
    for is_open in (True, False):
        for door in doors:
            door.is_open, door.is_locked = is_open, False
        inject(ref, env, 1)
        np.testing.assert_array_equal(env.render()[1], ref.render(), err_msg=f"open {is_open}")
