"""BatchPong against the scalar reference (batchenv.reference.ReferencePong), step by step,
exactly: every state field (including RNG keys/counters and step counters), every reward,
flag, observation and final observation."""

from __future__ import annotations

import ast
import dataclasses
import sys

import numpy as np
import pytest
from pong_compare import assert_same_state, make_pair, run_pair, step_pair

from batchenv import BatchPong, PongParams
from batchenv.random import BatchRandom, seed_keys
from batchenv.reference import CounterRandom, ReferencePong, seed_key
from batchenv.reference import pong as reference


def test_the_reference_imports_nothing_from_the_env():
    """The oracle owns its constants: a wrong default in the env cannot leak into it."""
    tree = ast.parse(open(reference.__file__).read())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for a in node.names}
    assert not [m for m in imported if m and m.startswith("batchenv")], imported


def test_env_defaults_are_the_documented_rules():
    """BatchPong's defaults (PongParams, modes, observation types, grey levels, render
    colours) are the reference's, which are written from docs/pong.md."""
    assert dataclasses.asdict(PongParams()) == dataclasses.asdict(reference.Rules())
    p, r = PongParams(), reference.Rules()
    for name in ("top_wall", "paddle_min", "paddle_max", "paddle_reach", "left_plane",
                 "right_plane"):
        assert getattr(p, name) == getattr(r, name), name
    env_module = sys.modules[BatchPong.__module__]
    assert env_module.MODES == reference.MODES
    assert env_module.OBS_TYPES == reference.OBS_TYPES
    # a frame holds exactly the five documented colours, and a pixel frame the grey levels
    env = BatchPong(1, render_mode="rgb_array")
    env.reset(seed=0)
    colours = np.unique(env.render()[0].reshape(-1, 3), axis=0)
    np.testing.assert_array_equal(colours, np.unique(reference.RENDER_COLOURS, axis=0))
    env = BatchPong(1, obs_type="pixels")
    obs, _ = env.reset(seed=0)
    assert set(np.unique(obs).tolist()) == set(reference.PIXEL_LEVELS)


def test_rules_follow_the_documented_numbers():
    """docs/pong.md, "The rules": 40 x 30 court, paddles 5 cells in columns 0 and 39 with
    centres in [2, 27], 2 cells per action (CPU: 1), |vx| = 1, |vy| <= 3, spin 0.5, returned
    within 2.5 cells, reflected at y = 0 and 29 and at the planes x = 1 and 38, serve vy in
    [-1, 1], 21 points."""
    r = reference.Rules()
    assert (r.width, r.height, r.paddle_height) == (40, 30, 5)
    assert (r.paddle_speed, r.cpu_speed, r.ball_speed) == (2, 1, 1)
    assert (r.max_ball_vy, r.spin, r.serve_vy, r.points_to_win) == (3, 0.5, 1, 21)
    assert (r.paddle_min, r.paddle_max, r.paddle_reach) == (2, 27, 2.5)
    assert (r.top_wall, r.left_plane, r.right_plane) == (29, 1, 38)
    lay = reference.pixel_geometry(r)
    assert (lay.court_top, lay.ball_size, lay.paddle_size) == (2, (3, 2), (13, 2))


def test_counter_random_is_batch_random():
    seeds = np.array([0, 1, 7, 2**40 + 3], dtype=np.uint64)
    keys = seed_keys(seeds)
    assert [seed_key(int(s)) for s in seeds] == [int(k) for k in keys]
    counter = np.array([0, 5, 2**63, 2**64 - 2], dtype=np.uint64)
    batch = BatchRandom(keys.copy(), counter.copy())
    draws = batch.random((3,))
    for i in range(len(seeds)):
        scalar = CounterRandom(int(keys[i]), int(counter[i]))
        assert [scalar.random() for _ in range(3)] == draws[i].tolist()
        assert scalar.counter == int(batch.counter[i])


def test_default_game_long_run_with_game_ends():
    """The PPO configuration (vs CPU, state obs, 21 points, NEXT_STEP): 3,000 steps of 48
    games, long enough for whole games to end and restart."""
    totals = run_pair(48, 3000, seed=123, check_state_every=5)
    assert totals["points"] > 1000 and totals["ends"] >= 5


def test_truncation_and_resets():
    totals = run_pair(32, 1200, seed=5, max_episode_steps=150)
    assert totals["truncations"] >= 32 and totals["points"] > 100


@pytest.mark.parametrize("autoreset_mode", ["NextStep", "SameStep", "Disabled"])
@pytest.mark.parametrize("mode", ["cpu", "two_player", "rally"])
def test_modes_and_autoreset_modes(mode, autoreset_mode):
    totals = run_pair(16, 500, seed=11, mode=mode, obs_type="state",
                      autoreset_mode=autoreset_mode, points_to_win=2, max_episode_steps=200)
    assert totals["points"] > 0
    assert totals["ends"] > 0


@pytest.mark.parametrize("mode", ["cpu", "two_player", "rally"])
@pytest.mark.parametrize("frameskip,sticky", [(4, 0.0), (1, 0.25), (3, 0.5)])
def test_frameskip_and_sticky_actions(mode, frameskip, sticky):
    totals = run_pair(16, 400, seed=3, mode=mode, obs_type="state", frameskip=frameskip,
                      repeat_action_probability=sticky, points_to_win=2,
                      max_episode_steps=120)
    assert totals["points"] > 0 and totals["ends"] > 0


def test_frameskip_ends_mid_step_with_same_step_reset():
    totals = run_pair(24, 300, seed=8, frameskip=5, points_to_win=1,
                      autoreset_mode="SameStep")
    assert totals["ends"] > 20


@pytest.mark.parametrize("mode", ["cpu", "two_player", "rally"])
def test_tiles_every_step(mode):
    totals = run_pair(6, 300, seed=21, mode=mode, obs_type="tiles", points_to_win=2,
                      max_episode_steps=100)
    assert totals["ends"] + totals["truncations"] > 0


@pytest.mark.parametrize("shape,mode,autoreset", [((84, 84), "cpu", "NextStep"),
                                                  ((84, 84), "rally", "SameStep"),
                                                  ((60, 96), "two_player", "Disabled"),
                                                  ((210, 160), "cpu", "SameStep")])
def test_pixels_every_step(shape, mode, autoreset):
    totals = run_pair(3, 120, seed=2, mode=mode, obs_type="pixels", pixel_shape=shape,
                      points_to_win=1, autoreset_mode=autoreset, max_episode_steps=60)
    assert totals["ends"] + totals["truncations"] > 0


def test_pixels_with_frameskip_and_sticky_actions():
    run_pair(3, 80, seed=4, obs_type="pixels", frameskip=4, repeat_action_probability=0.25,
             points_to_win=1)


def test_injected_states_agree():
    """States written with set_state (random positions, velocities, paddles, scores, RNG
    counters, pending resets) step the same in both."""
    env, refs = make_pair(64, 0, points_to_win=5, max_episode_steps=50)
    rng = np.random.default_rng(0)
    st = env.get_state()
    p = env.params
    st["ball_x"] = rng.uniform(p.left_plane, p.right_plane, 64)  # in play (check_state)
    st["ball_y"] = rng.uniform(0, p.top_wall, 64)
    st["ball_vx"] = rng.choice([-1.0, 1.0], 64)
    st["ball_vy"] = rng.uniform(-p.max_ball_vy, p.max_ball_vy, 64)
    st["left_y"] = rng.uniform(p.paddle_min, p.paddle_max, 64)
    st["right_y"] = rng.uniform(p.paddle_min, p.paddle_max, 64)
    st["score_left"] = rng.integers(0, 5, 64)
    st["score_right"] = rng.integers(0, 5, 64)
    st["elapsed_steps"] = rng.integers(0, 50, 64)
    st["rng_counter"] = rng.integers(0, 2**62, 64, dtype=np.uint64)
    st["awaiting_reset"] = rng.random(64) < 0.1
    env.set_state(st)
    for ref, rec in zip(refs, st):
        ref.set_record(rec)
    assert_same_state(env, refs, "injected")
    actions = rng.integers(0, 3, (200, 64))
    for t, a in enumerate(actions):
        step_pair(env, refs, a, f"step {t}")
        assert_same_state(env, refs, f"step {t}")


def test_reset_with_seed_and_mask_agrees():
    env, refs = make_pair(8, 40)
    rng = np.random.default_rng(1)
    for _ in range(30):
        step_pair(env, refs, rng.integers(0, 3, 8))
    mask = np.array([True, False] * 4)
    env.reset(seed=1000, options={"reset_mask": mask})
    for i in np.flatnonzero(mask):
        refs[i].reset(seed=1000 + int(i))
    assert_same_state(env, refs, "after masked reset")
    for _ in range(30):
        step_pair(env, refs, rng.integers(0, 3, 8))
    assert_same_state(env, refs, "end")


def test_the_comparison_catches_a_different_rule():
    """The harness can fail: a reference with a different spin disagrees within a few
    hundred steps."""
    env = BatchPong(16)
    env.reset(seed=0)
    refs = [ReferencePong(spin=0.4) for _ in range(16)]
    for ref, rec in zip(refs, env.get_state()):
        ref.set_record(rec)
    rng = np.random.default_rng(0)
    with pytest.raises(AssertionError):
        for _ in range(400):
            step_pair(env, refs, rng.integers(0, 3, 16))
            assert_same_state(env, refs)


def test_reference_reset_matches_batch_reset():
    env = BatchPong(5, mode="rally")
    env.reset(seed=77)
    for i, rec in enumerate(env.get_state()):
        ref = ReferencePong(mode="rally")
        obs = ref.reset(seed=77 + i)
        np.testing.assert_array_equal(obs, env._obs[i])
        for name in ("ball_x", "ball_y", "ball_vx", "ball_vy", "rng_counter"):
            assert ref.record()[name] == rec[name], name


@pytest.mark.parametrize("obs_type,shape", [("tiles", None), ("pixels", (50, 70))])
def test_custom_court_and_rules(obs_type, shape):
    """Non-default PongParams (a 16 x 20 court, 4-cell paddles, slower ball, more spin)."""
    extra = {"pixel_shape": shape} if shape else {}
    totals = run_pair(4, 200, seed=5, mode="two_player", obs_type=obs_type, height=16,
                      width=20, paddle_height=4, ball_speed=0.5, spin=1.0, max_ball_vy=2.0,
                      serve_vy=0.5, points_to_win=2, **extra)
    assert totals["points"] > 0


def test_next_step_resets_after_points_agree():
    """NEXT_STEP resets of games that also scored or missed in their last step, often: the
    serves after points and the serves of resets must give the reference's states."""
    # a narrow court and short episodes: truncated games often miss in their last step
    totals = run_pair(64, 400, seed=17, width=10, points_to_win=2, max_episode_steps=9)
    assert totals["ends"] > 20 and totals["truncations"] > 1000
