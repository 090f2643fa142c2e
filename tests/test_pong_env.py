"""BatchPong as an env: modes, observation types, frameskip and sticky actions, batch
independence, determinism, the incremental canvas, snapshots."""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import batchenv
from batchenv import BatchPong
from batchenv.reference import ReferencePong

CONFIGS = [
    dict(),
    dict(obs_type="tiles"),
    dict(obs_type="pixels"),
    dict(mode="two_player"),
    dict(mode="rally"),
    dict(mode="rally", obs_type="pixels", pixel_shape=(48, 64)),
    dict(frameskip=4),
    dict(repeat_action_probability=0.25),
    dict(mode="two_player", frameskip=3, repeat_action_probability=0.4, obs_type="tiles"),
]


def rollout(env: BatchPong, actions: np.ndarray, seed: int):
    obs, _ = env.reset(seed=seed)
    out = [(obs, None, None, None)]
    for a in actions:
        o, r, te, tr, _ = env.step(a)
        out.append((o, r, te, tr))
    return out, env.get_state()


def random_actions(env: BatchPong, steps: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 3, (steps, *env.action_space.shape))


# ---------------------------------------------------------------- spaces and options
def test_default_is_the_vs_cpu_state_game():
    env = BatchPong(4)
    assert env.mode == "cpu" and env.obs_type == "state" and env.frameskip == 1
    assert env.repeat_action_probability == 0.0
    assert env.single_action_space == spaces.Discrete(3)
    assert env.single_observation_space.shape == (6,)
    assert env.single_observation_space.dtype == np.float32


@pytest.mark.parametrize("kwargs,action_space,obs_shape,obs_dtype", [
    (dict(mode="two_player"), spaces.MultiDiscrete([3, 3]), (6,), np.float32),
    (dict(mode="rally"), spaces.MultiDiscrete([3, 3]), (30, 40), np.uint8),
    (dict(obs_type="tiles"), spaces.Discrete(3), (30, 40), np.uint8),
    (dict(obs_type="pixels"), spaces.Discrete(3), (84, 84), np.uint8),
    (dict(obs_type="pixels", pixel_shape=(64, 48)), spaces.Discrete(3), (64, 48), np.uint8),
    (dict(obs_type="tiles", width=20, height=16), spaces.Discrete(3), (16, 20), np.uint8),
])
def test_spaces(kwargs, action_space, obs_shape, obs_dtype):
    env = BatchPong(3, **kwargs)
    assert env.single_action_space == action_space
    assert env.single_observation_space.shape == obs_shape
    assert env.single_observation_space.dtype == obs_dtype
    obs, _ = env.reset(seed=0)
    assert obs.shape == (3, *obs_shape) and obs.dtype == obs_dtype
    for a in random_actions(env, 50):
        obs = env.step(a)[0]
        assert env.observation_space.contains(obs)


@pytest.mark.parametrize("kwargs,error", [
    (dict(mode="solo"), ValueError), (dict(obs_type="rgb"), ValueError),
    (dict(frameskip=0), ValueError), (dict(frameskip=1.5), ValueError),
    (dict(repeat_action_probability=1.5), ValueError), (dict(render_scale=0), ValueError),
    (dict(obs_type="pixels", pixel_shape=(84,)), ValueError),
    (dict(obs_type="pixels", pixel_shape=(3, 3)), ValueError),
    (dict(render_mode="human"), ValueError),
])
def test_bad_options(kwargs, error):
    with pytest.raises(error):
        BatchPong(2, **kwargs)


def test_make_vec_passes_the_options():
    env = gym.make_vec("batchenv/Pong-v0", num_envs=3, mode="rally", obs_type="pixels")
    assert isinstance(env.unwrapped, BatchPong) and env.unwrapped.mode == "rally"
    assert env.observation_space.shape == (3, 84, 84)
    assert batchenv.make("Pong-v0", 2, obs_type="tiles").obs_type == "tiles"


# ---------------------------------------------------------------- determinism, independence
@pytest.mark.parametrize("kwargs", CONFIGS, ids=str)
def test_determinism(kwargs):
    a, b = BatchPong(16, **kwargs), BatchPong(16, **kwargs)
    actions = random_actions(a, 150)
    (ra, sa), (rb, sb) = rollout(a, actions, 9), rollout(b, actions, 9)
    assert sa.tobytes() == sb.tobytes()
    for x, y in zip(ra, rb):
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("kwargs", CONFIGS, ids=str)
def test_batch_independence(kwargs):
    """Row i of a batch of 4096 seeded s is the batch of 1 seeded s + i, step for step."""
    n, seed, steps, rows = 4096, 1000, 120, (0, 1, 2047, 4095)
    big = BatchPong(n, copy=False, **kwargs)
    smalls = [BatchPong(1, **kwargs) for _ in rows]
    actions = random_actions(big, steps, seed=1)
    obs, _ = big.reset(seed=seed)
    for i, small in zip(rows, smalls):
        np.testing.assert_array_equal(small.reset(seed=seed + i)[0][0], obs[i])
    for t, a in enumerate(actions):
        obs, r, te, tr, _ = big.step(a)
        for i, small in zip(rows, smalls):
            o1, r1, te1, tr1, _ = small.step(a[i:i + 1])
            np.testing.assert_array_equal(o1[0], obs[i], err_msg=f"obs, step {t}")
            assert (r1[0], te1[0], tr1[0]) == (r[i], te[i], tr[i]), t
    state = big.get_state()
    for i, small in zip(rows, smalls):
        assert state[i].tobytes() == small.get_state()[0].tobytes()


def test_results_depend_on_the_seed():
    a, b = BatchPong(8), BatchPong(8)
    actions = random_actions(a, 50)
    assert rollout(a, actions, 1)[1].tobytes() != rollout(b, actions, 2)[1].tobytes()


# ---------------------------------------------------------------- frameskip, sticky actions
def test_frameskip_is_k_steps_with_the_same_action():
    """Without episode ends, frameskip=k equals k single steps with the same action and the
    summed reward."""
    k, steps = 4, 60
    skip = BatchPong(64, frameskip=k, points_to_win=100, max_episode_steps=None)
    one = BatchPong(64, points_to_win=100, max_episode_steps=None)
    skip.reset(seed=3)
    one.reset(seed=3)
    rng = np.random.default_rng(0)
    points = 0
    for _ in range(steps):
        a = rng.integers(0, 3, 64)
        _, r_skip, *_ = skip.step(a)
        total = np.zeros(64)
        for _ in range(k):
            total += one.step(a)[1]
        np.testing.assert_array_equal(r_skip, total)
        points += np.count_nonzero(total)
        s1, s2 = skip.get_state(), one.get_state()
        for name in BatchPong.state_dtype.names:
            np.testing.assert_array_equal(s1[name], s2[name], err_msg=name)
    assert points > 0


def test_frameskip_stops_at_the_end_of_an_episode():
    """A game that ends at sub-step 1 of 4 keeps its terminal state: the ball served after
    the winning point does not move on."""
    env = BatchPong(1, frameskip=4, points_to_win=1)
    env.reset(seed=0)
    st = env.get_state()
    st["ball_x"], st["ball_vx"], st["ball_y"], st["left_y"] = 1.5, -1.0, 25.0, 5.0
    env.set_state(st)
    _, reward, terminated, _, _ = env.step(np.array([0]))
    after = env.get_state()[0]
    assert terminated[0] and reward[0] == -1 and after["score_right"] == 1
    assert after["ball_x"] == 20.0  # served, then frozen


@pytest.mark.parametrize("p", [0.25, 0.6])
def test_sticky_action_frequency(p):
    """With repeat_action_probability p, the applied action is the previous applied one
    instead of a new, different one with frequency p."""
    n, steps = 4096, 40
    env = BatchPong(n, repeat_action_probability=p, max_episode_steps=None)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    kept = changed_asks = 0
    prev = env.state.action_left.copy()
    for _ in range(steps):
        a = rng.integers(0, 3, n)
        env.step(a)
        applied = env.state.action_left
        asked_change = a != prev
        changed_asks += asked_change.sum()
        kept += (asked_change & (applied == prev)).sum()
        assert np.all((applied == a) | (applied == prev))
        prev = applied.copy()
    assert abs(kept / changed_asks - p) < 0.01


def test_sticky_actions_two_player_each_paddle():
    n = 4096
    env = BatchPong(n, mode="two_player", repeat_action_probability=0.5)
    env.reset(seed=0)
    env.step(np.tile([1, 2], (n, 1)))
    left, right = env.state.action_left, env.state.action_right
    assert abs(np.mean(left == 1) - 0.5) < 0.03 and abs(np.mean(right == 2) - 0.5) < 0.03
    assert abs(np.mean((left == 1) & (right == 2)) - 0.25) < 0.03  # independent draws


def test_no_sticky_draws_without_sticky_actions():
    """repeat_action_probability=0 draws nothing: the RNG advances only on serves, as
    before sticky actions existed."""
    env = BatchPong(64)
    env.reset(seed=0)
    env.step(np.zeros(64, dtype=int))
    assert set(np.unique(env.state.rng_counter)) <= {3, 6}


# ---------------------------------------------------------------- modes
def test_two_player_is_zero_sum_from_the_left():
    env = BatchPong(256, mode="two_player", points_to_win=3)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    scores = np.zeros(2)
    total = 0.0
    for _ in range(400):
        before = env.get_state()
        _, r, te, tr, _ = env.step(rng.integers(0, 3, (256, 2)))
        after = env.get_state()
        live = ~before["awaiting_reset"]
        d_left = after["score_left"][live].astype(int) - before["score_left"][live]
        d_right = after["score_right"][live].astype(int) - before["score_right"][live]
        ended = te[live]
        d_left[ended] = np.where(r[live][ended] > 0, 1, 0)  # scores of ended games
        d_right[ended] = np.where(r[live][ended] < 0, 1, 0)
        np.testing.assert_array_equal(r[live], d_left - d_right)
        scores += d_left.sum(), d_right.sum()
        total += r.sum()
    assert scores.min() > 50 and total == scores[0] - scores[1]


def test_two_player_right_paddle_obeys_its_action():
    env = BatchPong(2, mode="two_player")
    env.reset(seed=0)
    y0 = env.state.right_y.copy()
    env.step(np.array([[0, 1], [0, 2]]))
    np.testing.assert_array_equal(env.state.right_y, y0 + [-2, 2])


def test_mirror_obs():
    env = BatchPong(32, mode="two_player")
    obs, _ = env.reset(seed=0)
    m = BatchPong.mirror_obs(obs)
    np.testing.assert_allclose(m[:, 0], -obs[:, 0])
    np.testing.assert_array_equal(m[:, 4], obs[:, 5])
    np.testing.assert_array_equal(BatchPong.mirror_obs(m), obs)
    tiles = BatchPong(2, obs_type="tiles")
    t, _ = tiles.reset(seed=0)
    np.testing.assert_array_equal(BatchPong.mirror_obs(t, "tiles"), t[:, :, ::-1])
    # pixels: the mirrored frame of a game is the frame of the mirrored game
    env = BatchPong(256, obs_type="pixels", mode="two_player")
    env.reset(seed=1)
    for a in random_actions(env, 30):
        pix = env.step(a)[0]
    st = env.get_state()
    st["ball_x"], st["ball_vx"] = 39 - st["ball_x"], -st["ball_vx"]
    st["left_y"], st["right_y"] = st["right_y"].copy(), st["left_y"].copy()
    np.testing.assert_array_equal(BatchPong.mirror_obs(pix, "pixels"), env.set_state(st))
    with pytest.raises(ValueError):
        BatchPong.mirror_obs(pix, "rgb")


def test_rally_idle_paddles_bounce_forever_until_the_time_limit():
    env = BatchPong(64, mode="rally", max_episode_steps=2000)
    env.reset(seed=0)
    idle = np.zeros((64, 2), dtype=int)
    total = np.zeros(64)
    for t in range(2000):
        _, r, te, tr, _ = env.step(idle)
        total += r
        assert not te.any()
        assert tr.all() == (t == 1999)
    np.testing.assert_array_equal(total, 2000)
    assert np.all(env.state.ball_vy == 0)


def test_rally_random_play_short_positive_episodes():
    env = BatchPong(512, mode="rally", obs_type="state", max_episode_steps=10_000)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    ret = np.zeros(512)
    lengths, returns = [], []
    steps = np.zeros(512, dtype=int)
    for _ in range(600):
        _, r, te, tr, _ = env.step(rng.integers(0, 3, (512, 2)))
        ret += r
        steps += 1
        ended = te | tr
        lengths += steps[ended].tolist()
        returns += ret[ended].tolist()
        ret[ended] = 0
        steps[ended] = -1  # the next step is the NEXT_STEP reset
        assert not tr.any()
    assert len(lengths) > 500
    # docs/pong.md: "random play misses within a few dozen steps" (measured: median 20,
    # 90% of episodes within 58 steps)
    assert 1 <= min(lengths) and 10 <= np.median(lengths) <= 48
    assert np.percentile(lengths, 90) <= 100
    # reward +1 per step of rally, 0 on the miss: return = length - 1
    np.testing.assert_array_equal(np.array(returns), np.array(lengths) - 1)


def test_rally_rules_on_every_step():
    """Seed rules in rally mode: the ball stays in the court rows, |vy| <= 3, |vx| = 1,
    a ball at a paddle plane is returned iff within reach, reward 1 until the miss."""
    n = 1024
    env = BatchPong(n, mode="rally", obs_type="state")
    env.reset(seed=5)
    rng = np.random.default_rng(5)
    returns = misses = 0
    for _ in range(300):
        before = env.get_state()
        _, r, te, _, _ = env.step(rng.integers(0, 3, (n, 2)))
        after = env.get_state()
        live = ~before["awaiting_reset"]
        assert np.all((after["ball_y"] >= 0) & (after["ball_y"] <= 29))
        assert np.all(np.abs(after["ball_vy"]) <= 3) and np.all(np.abs(after["ball_vx"]) == 1)
        np.testing.assert_array_equal(r[live], np.where(te[live], 0, 1))
        reached = live & (after["ball_vx"] != before["ball_vx"])
        returns += reached.sum()
        misses += te[live].sum()
        # returned balls were within reach of the paddle on their side
        side_y = np.where(after["ball_vx"] > 0, after["left_y"], after["right_y"])
        assert np.all(np.abs(after["ball_y"] - side_y)[reached] <= 2.5)  # the hit window
    assert returns > 100 and misses > 100


# ---------------------------------------------------------------- tiles and pixels
def test_tiles_content():
    env = BatchPong(256, obs_type="tiles")
    env.reset(seed=0)
    for a in random_actions(env, 100):
        tiles = env.step(a)[0]
        assert np.all((tiles == 1).sum(axis=(1, 2)) == 10)  # two 5-cell paddles
        assert np.all((tiles == 2).sum(axis=(1, 2)) == 1)  # the ball
        assert np.all(tiles[:, :, 1:39][tiles[:, :, 1:39] == 1] == 0)  # paddles in 0 and 39
    st = env.get_state()
    row, col = np.unravel_index(np.argmax(tiles.reshape(256, -1) == 2, axis=1), (30, 40))
    np.testing.assert_array_equal(row, np.floor(st["ball_y"] + 0.5).astype(int))
    np.testing.assert_array_equal(col, np.floor(st["ball_x"] + 0.5).astype(int))


def test_pixels_content():
    env = BatchPong(64, obs_type="pixels")
    obs, _ = env.reset(seed=0)
    assert set(np.unique(obs)) == {87, 147, 148, 236}
    assert np.all(obs[:, :2] == 236) and np.all(obs[:, -2:] == 236)  # walls
    assert np.all((obs == 147).sum(axis=(1, 2)) == 26)  # left paddle 13 x 2
    assert np.all((obs == 148).sum(axis=(1, 2)) == 26)
    assert np.all((obs[:, 2:-2] == 236).sum(axis=(1, 2)) == 6)  # ball 3 x 2


@pytest.mark.parametrize("kwargs", [dict(obs_type="tiles"), dict(obs_type="pixels"),
                                    dict(obs_type="pixels", pixel_shape=(210, 160)),
                                    dict(mode="rally", frameskip=2)], ids=str)
@pytest.mark.parametrize("autoreset_mode", ["NextStep", "SameStep", "Disabled"])
def test_incremental_canvas_equals_a_full_draw(kwargs, autoreset_mode):
    """The observation kept up to date in place equals drawing every frame from scratch,
    through steps, auto-resets, masked resets, set_state and final observations."""
    n = 32 if kwargs.get("pixel_shape") == (210, 160) else 128  # (full-size frames: 9x)
    env = BatchPong(n, autoreset_mode=autoreset_mode, points_to_win=1,
                    max_episode_steps=60, **kwargs)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    full = np.empty_like(env._obs)
    saved = None
    for t in range(200):
        obs, _, te, tr, info = env.step(random_actions(env, 1, t)[0])
        env._raster.draw(env.state, full)
        np.testing.assert_array_equal(obs, full, err_msg=f"step {t}")
        if "final_obs" in info:
            for i in np.flatnonzero(info["_final_obs"]):
                assert info["final_obs"][i].shape == obs.shape[1:]
        if t == 50:
            saved = env.get_state()
        if t == 80:
            env.set_state(saved)
        if t % 37 == 0:
            mask = rng.random(n) < 0.3
            mask[0] = True
            obs, _ = env.reset(options={"reset_mask": mask})
            env._raster.draw(env.state, full)
            np.testing.assert_array_equal(obs, full)


def test_copy_false_canvas_is_read_only_and_live():
    env = BatchPong(4, obs_type="pixels", copy=False)
    obs, _ = env.reset(seed=0)
    with pytest.raises(ValueError):
        obs[0, 0, 0] = 1
    obs2 = env.step(np.zeros(4, dtype=int))[0]
    assert obs2 is obs  # the canvas itself, updated in place
    copied = BatchPong(4, obs_type="pixels")
    o, _ = copied.reset(seed=0)
    o[0, 0, 0] = 1  # copies are the caller's
    assert copied.step(np.zeros(4, dtype=int))[0][0, 0, 0] == 236


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
@pytest.mark.parametrize("obs_type", ["state", "tiles", "pixels"])
def test_snapshots_continue_identically(how, obs_type):
    env = BatchPong(32, obs_type=obs_type, points_to_win=2)
    env.reset(seed=0)
    actions = random_actions(env, 60)
    for a in actions[:30]:
        env.step(a)
    twin = pickle.loads(pickle.dumps(env)) if how == "pickle" else copy.deepcopy(env)
    for a in actions[30:]:
        o1, r1, *_ = env.step(a)
        o2, r2, *_ = twin.step(a)
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_array_equal(r1, r2)


def test_reference_observations_match_for_each_type():
    env_states = {t: BatchPong(5, obs_type=t) for t in ("state", "tiles", "pixels")}
    for obs_type, env in env_states.items():
        obs, _ = env.reset(seed=3)
        for i, rec in enumerate(env.get_state()):
            ref = ReferencePong(obs_type=obs_type)
            ref.set_record(rec)
            np.testing.assert_array_equal(ref.observe(), obs[i])


@pytest.mark.parametrize("kwargs", [dict(), dict(mode="two_player", frameskip=2),
                                    dict(mode="rally", repeat_action_probability=0.3)],
                         ids=str)
def test_invariants_under_random_play(kwargs):
    """The ball stays in the court rows with |vx| = 1 and |vy| <= 3, paddles stay on court,
    scores stay within [0, points_to_win], nothing is NaN."""
    env = BatchPong(512, obs_type="state", points_to_win=5, **kwargs)
    env.reset(seed=123)
    for a in random_actions(env, 400, seed=4):
        obs = env.step(a)[0]
        st = env.get_state()
        assert np.isfinite(obs).all()
        live = ~st["awaiting_reset"]
        assert np.all((st["ball_y"] >= 0) & (st["ball_y"] <= 29))
        assert np.all((st["ball_x"] >= 0) & (st["ball_x"] <= 39))
        assert np.all(np.abs(st["ball_vx"]) == 1) and np.all(np.abs(st["ball_vy"]) <= 3)
        assert np.all((st["left_y"] >= 2) & (st["left_y"] <= 27))
        assert np.all((st["right_y"] >= 2) & (st["right_y"] <= 27))
        assert np.all(st["score_left"][live] <= 5) and np.all(st["score_right"][live] <= 5)
        assert np.all(st["score_left"] >= 0) and np.all(st["score_right"] >= 0)


@pytest.mark.parametrize("obs_type", ["pixels", "tiles"])
@pytest.mark.parametrize("channel_axis", ["last", "first"])
@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
def test_channel_axis_gives_the_default_images_with_an_axis_of_one(obs_type, channel_axis,
                                                                    mode):
    """Every observation, final observations included, is the default (H, W) image of an
    env stepped alongside with the same seed and actions, with the axis added."""
    kwargs = dict(obs_type=obs_type, autoreset_mode=mode, points_to_win=1,
                  max_episode_steps=30)
    env = BatchPong(3, channel_axis=channel_axis, copy=False, **kwargs)
    plain = BatchPong(3, **kwargs)
    h, w = plain.single_observation_space.shape
    shape = (h, w, 1) if channel_axis == "last" else (1, h, w)
    assert env.single_observation_space == spaces.Box(0, plain.single_observation_space.high.max(),
                                                      shape, np.uint8)
    obs, _ = env.reset(seed=2)
    expected, _ = plain.reset(seed=2)
    np.testing.assert_array_equal(obs.reshape(3, h, w), expected)
    rng = np.random.default_rng(0)
    finals = 0
    for _ in range(70):
        actions = rng.integers(0, 3, 3)
        obs, *_, info = env.step(actions)
        expected, *_, expected_info = plain.step(actions)
        assert obs.shape == (3, *shape)
        np.testing.assert_array_equal(obs.reshape(3, h, w), expected)
        for final, expected_final in zip(info.get("final_obs", ()),
                                         expected_info.get("final_obs", ())):
            if final is not None:
                finals += 1
                assert final.shape == shape
                np.testing.assert_array_equal(final.reshape(h, w), expected_final)
    assert finals > 0 or mode != "SameStep"
    mirrored = BatchPong.mirror_obs(obs, obs_type, channel_axis)
    np.testing.assert_array_equal(mirrored.reshape(3, h, w),
                                  BatchPong.mirror_obs(expected, obs_type))


def test_channel_axis_refused_for_state_and_unknown_values():
    with pytest.raises(ValueError, match="channel_axis"):
        BatchPong(2, channel_axis="last")  # state observation
    with pytest.raises(ValueError, match="channel_axis must be one of"):
        BatchPong(2, obs_type="pixels", channel_axis=-1)
