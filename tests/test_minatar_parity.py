"""Step-exact parity of batchenv's MinAtar games with the ``minatar`` package (1.0.15): the
harness and the mapping of random words are described in ``tests/minatar_parity.py``."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("minatar")

from minatar_parity import Game, both_forms, random_policy, run  # noqa: E402

from batchenv.envs.minatar import BatchAsterix, BatchBreakout, BatchFreeway  # noqa: E402

STICKY = ("environment.py", "act", "rand", 0)  # Environment.act's sticky draw: step word 0

CARS = ("freeway.py", "_randomize_cars")
FREEWAY = Game("freeway", {STICKY: 0, (*CARS, "randint", 0): 1, (*CARS, "rand", 0): 9},
               {(*CARS, "randint", 0): 0, (*CARS, "rand", 0): 8}, exact_draws=True)
SPAWN = ("asterix.py", "_spawn_entity")
ASTERIX = Game("asterix", {STICKY: 0, (*SPAWN, "rand", 0): 1, (*SPAWN, "rand", 1): 2,
                           (*SPAWN, "randint", 0): 3}, {},
               extra=lambda ref: ref.env.ramp_index, exact_draws=True)
BREAKOUT = Game("breakout", {STICKY: 0}, {("breakout.py", "reset", "randint", 0): 0},
                exact_draws=True)


def breakout_tracker(obs: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
    """Move the paddle (action 1 left, 3 right) to where the falling ball will reach row 8
    (its direction from the trail channel), or under the rising ball; 3% random actions."""
    n = len(obs)
    ball_y, ball_x = np.divmod(obs[..., 1].reshape(n, -1).argmax(axis=1), 10)
    trail_y, trail_x = np.divmod(obs[..., 2].reshape(n, -1).argmax(axis=1), 10)
    dx = np.sign(ball_x - trail_x)
    target = ball_x.copy()
    falling = ball_y > trail_y
    for _ in range(9):  # follow the diagonal down to row 8, off the side walls
        moving = falling & (ball_y < 8)
        target = np.where(moving, target + dx, target)
        wall = moving & ((target < 0) | (target > 9))
        dx = np.where(wall, -dx, dx)
        target = np.clip(target, 0, 9)
        ball_y = np.where(moving, ball_y + 1, ball_y)
    paddle_x = obs[:, 9, :, 0].argmax(axis=1)
    action = np.where(target < paddle_x, 1, np.where(target > paddle_x, 3, 0))
    noise = rng.rand(n) < 0.03
    return np.where(noise, rng.randint(6, size=n), action)


@pytest.mark.parametrize("sticky", [0.1, 0.0, 0.5])
def test_breakout_random_policy(sticky):  # (both kernels against one reference run)
    env = both_forms(BatchBreakout, 128, sticky_action_prob=sticky)
    res = run(env, BREAKOUT, 300, random_policy(6), seed=10, rng=np.random.RandomState(0))
    assert res.steps == 128 * 300 and res.episodes > 200 and res.reward > 0
    assert (res.sticky_repeats > 0) == (sticky > 0)


# (long runs: one in README's command, the other in CI's -m slow pass)
@pytest.mark.parametrize("sticky", [0.1, pytest.param(0.0, marks=pytest.mark.slow)])
def test_breakout_scripted_policy_clears_walls(sticky, long_run_kernels):
    env = BatchBreakout(64, sticky_action_prob=sticky, kernels=long_run_kernels)
    res = run(env, BREAKOUT, 600, breakout_tracker, seed=77, rng=np.random.RandomState(1))
    # long episodes: walls of 30 bricks cleared and rebuilt (a return above 30)
    assert max(res.returns) > 30 and max(res.lengths) > 200


def test_breakout_minimal_action_set(kernels):
    env = BatchBreakout(64, minimal_action_set=True, kernels=kernels)
    run(env, BREAKOUT, 200, random_policy(3), seed=5, rng=np.random.RandomState(2))


def freeway_climber(obs: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
    """Mostly up (action 2), sometimes down (4) or nothing."""
    return rng.choice([2, 2, 2, 2, 2, 2, 4, 0], size=len(obs))


@pytest.mark.parametrize("sticky", [0.1, 0.0])
def test_freeway_random_policy(sticky):  # (both kernels against one reference run)
    env = both_forms(BatchFreeway, 64, sticky_action_prob=sticky)
    res = run(env, FREEWAY, 400, random_policy(6), seed=3, rng=np.random.RandomState(3))
    assert res.steps == 64 * 400


def test_freeway_scripted_policy_crosses_until_the_time_limit(long_run_kernels):
    env = BatchFreeway(40, sticky_action_prob=0.1, kernels=long_run_kernels)
    res = run(env, FREEWAY, 2600, freeway_climber, seed=21, rng=np.random.RandomState(4))
    assert res.lengths[:40] == [2501] * 40  # every episode ends at the time limit
    assert min(res.returns) >= 5  # crossings (and new car speeds) in every episode


def test_freeway_minimal_action_set(kernels):
    env = BatchFreeway(32, minimal_action_set=True, sticky_action_prob=0.3,
                       kernels=kernels)
    run(env, FREEWAY, 300, random_policy(3), seed=8, rng=np.random.RandomState(5))


def asterix_dodger(obs: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
    """Among n, l, u, r, d (0-4) pick a move to a cell no enemy is in or is about to enter
    (within two cells, moving towards it: its trail is behind it), preferring gold."""
    n = len(obs)
    py, px = np.divmod(obs[..., 0].reshape(n, -1).argmax(axis=1), 10)
    enemy, trail, gold = obs[..., 1], obs[..., 2], obs[..., 3]
    edge = np.zeros((1, 10, 10), dtype=bool)
    left_edge, right_edge = edge.copy(), edge.copy()
    left_edge[..., 0] = right_edge[..., 9] = True
    behind_left = np.zeros_like(trail)
    behind_left[..., 1:] = trail[..., :-1]
    behind_right = np.zeros_like(trail)
    behind_right[..., :-1] = trail[..., 1:]
    right_mover = enemy & (behind_left | left_edge)
    left_mover = enemy & (behind_right | right_edge)
    danger = enemy.copy()
    for k in (1, 2):
        danger[..., k:] |= right_mover[..., :-k]
        danger[..., :-k] |= left_mover[..., k:]
    moves = [(0, 0), (-1, 0), (0, -1), (1, 0), (0, 1)]  # (dx, dy) of n, l, u, r, d
    score = np.empty((n, 5))
    rows = np.arange(n)
    for a, (dx, dy) in enumerate(moves):
        tx, ty = np.clip(px + dx, 0, 9), np.clip(py + dy, 1, 8)
        score[:, a] = (~danger[rows, ty, tx]) * 10.0 + gold[rows, ty, tx] * 5.0
    score += rng.rand(n, 5)
    return score.argmax(axis=1)


@pytest.mark.parametrize("sticky", [0.1, 0.0])
def test_asterix_random_policy(sticky):  # (both kernels against one reference run)
    env = both_forms(BatchAsterix, 128, sticky_action_prob=sticky)
    res = run(env, ASTERIX, 300, random_policy(6), seed=12, rng=np.random.RandomState(6))
    assert res.episodes > 100 and res.reward > 0


# (long runs: one in README's command, the other in CI's -m slow pass)
@pytest.mark.parametrize("ramping", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_asterix_scripted_policy_reaches_ramped_levels(ramping, long_run_kernels):
    env = BatchAsterix(64, difficulty_ramping=ramping, kernels=long_run_kernels)
    res = run(env, ASTERIX, 800, asterix_dodger, seed=31, rng=np.random.RandomState(7))
    assert res.extra_max >= (4 if ramping else 0) and max(res.lengths) > 400
    if not ramping:
        assert res.extra_max == 0


def test_asterix_minimal_action_set(kernels):
    env = BatchAsterix(64, minimal_action_set=True, sticky_action_prob=0.3, kernels=kernels)
    run(env, ASTERIX, 200, random_policy(5), seed=9, rng=np.random.RandomState(8))
