"""Step-exact parity of batchenv's MinAtar games with the ``minatar`` package (1.0.15): long
runs (the harness and the mapping of random words are described in
``tests/minatar_parity.py``), and random states injected into both."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("minatar")

from minatar import Environment  # noqa: E402
from minatar_parity import Game, StandIn, random_policy, run  # noqa: E402

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
def test_breakout_random_policy(sticky):
    env = BatchBreakout(128, sticky_action_prob=sticky)
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
def test_freeway_random_policy(sticky):
    env = BatchFreeway(64, sticky_action_prob=sticky)
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
def test_asterix_random_policy(sticky):
    env = BatchAsterix(128, sticky_action_prob=sticky)
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


# ---------------------------------------------------------------- injected states
def step_injected(env, refs: list, game: Game, horizon: int, rng: np.random.RandomState
                  ) -> list[np.ndarray]:
    """Step ``env`` and ``refs`` (one reference ``Environment`` per env, in the state
    ``env`` was given) ``horizon`` times with random actions, comparing reward, terminal
    and observation of every env until its game ends; returns the states before each
    step."""
    stand = StandIn()
    for ref in refs:
        ref.random = ref.env.random = stand
    live = np.ones(env.num_envs, dtype=bool)
    before = []
    for t in range(horizon):
        st = env.get_state()
        before.append(st)
        actions = rng.randint(env.single_action_space.n, size=env.num_envs)
        obs, reward, terminated, _, _ = env.step(actions)
        drawn = env.get_state()["rng_counter"] - st["rng_counter"]
        for i in np.flatnonzero(live):
            stand.load(game.step_table, int(st["rng_key"][i]), int(st["rng_counter"][i]),
                       int(drawn[i]))
            r, done = refs[i].act(int(actions[i]))
            where = f"env {i}, step {t}"
            assert (reward[i], terminated[i]) == (r, done), where
            np.testing.assert_array_equal(obs[i], refs[i].state(), err_msg=where)
        live &= ~terminated
    return before


def test_asterix_late_game_states_step_like_the_reference(kernels):
    """Asterix's rules a random policy rarely reaches (every ramp, the fastest speeds, a
    spawn with every lane taken), from random late-game states given to both games; dead
    slots hold the columns an entity leaves behind (-1 to 10), which the observation must
    ignore."""
    n, rng = 256, np.random.RandomState(4)
    env = BatchAsterix(n, sticky_action_prob=0.0, kernels=kernels)
    env.reset(seed=4)
    st = env.get_state()
    alive = rng.rand(n, 8) < 0.85
    st["alive"] = alive
    st["ent_x"] = np.where(alive, rng.randint(0, 10, (n, 8)), rng.randint(-1, 11, (n, 8)))
    st["ent_right"] = rng.rand(n, 8) < 0.5
    st["ent_gold"] = rng.rand(n, 8) < 0.3
    st["player_x"], st["player_y"] = rng.randint(0, 10, n), rng.randint(1, 9, n)
    st["spawn_speed"] = rng.randint(1, 11, n)
    st["spawn_timer"] = rng.randint(0, st["spawn_speed"] + 1)
    st["move_speed"] = rng.randint(1, 6, n)
    st["move_timer"] = rng.randint(0, st["move_speed"] + 1)
    st["ramp_timer"] = np.where(rng.rand(n) < 0.5, rng.randint(-1, 2, n), rng.randint(-1, 101, n))
    st["ramp_index"] = rng.randint(0, 10, n)
    st["last_action"] = 0
    env.set_state(st)
    refs = []
    for i in range(n):
        ref = Environment("asterix", sticky_action_prob=0.0)
        g = ref.env
        g.player_x, g.player_y = int(st["player_x"][i]), int(st["player_y"][i])
        g.entities = [[int(st["ent_x"][i, k]), k + 1, bool(st["ent_right"][i, k]),
                       bool(st["ent_gold"][i, k])] if alive[i, k] else None for k in range(8)]
        for name in ("spawn_speed", "spawn_timer", "move_speed", "move_timer", "ramp_timer",
                     "ramp_index"):
            setattr(g, name, int(st[name][i]))
        refs.append(ref)
    before = step_injected(env, refs, ASTERIX, 8, np.random.RandomState(5))
    full_lane_spawns = sum(np.count_nonzero((b["spawn_timer"] == 0) & b["alive"].all(axis=1))
                           for b in before)
    ramps = sum(np.count_nonzero(b["ramp_timer"] < 0) for b in before)
    assert full_lane_spawns > 10 and ramps > 10  # the rare rules did run


def test_freeway_every_car_configuration_steps_like_the_reference(kernels):
    """Freeway's step moves an env's 8 cars as the bytes of one word: from cars in every
    column, at every speed and timer, and the chicken in every row."""
    n, rng = 512, np.random.RandomState(4)
    env = BatchFreeway(n, sticky_action_prob=0.0, kernels=kernels)
    env.reset(seed=4)
    st = env.get_state()
    speed = rng.randint(1, 6, (n, 8)) * rng.choice([-1, 1], (n, 8))
    st["car_x"], st["car_speed"] = rng.randint(0, 10, (n, 8)), speed
    st["car_timer"] = rng.randint(0, 6, (n, 8)) % (np.abs(speed) + 1)
    st["pos"], st["move_timer"] = rng.randint(0, 10, n), rng.randint(0, 4, n)
    st["last_action"] = 0
    env.set_state(st)
    refs = []
    for i in range(n):
        ref = Environment("freeway", sticky_action_prob=0.0)
        g = ref.env
        g.cars = [[int(st["car_x"][i, j]), j + 1, int(st["car_timer"][i, j]),
                   int(speed[i, j])] for j in range(8)]
        g.pos, g.move_timer = int(st["pos"][i]), int(st["move_timer"][i])
        g.terminate_timer = int(st["terminate_timer"][i])
        refs.append(ref)
    assert (st["pos"] == 0).any()  # crossings in the first step too
    step_injected(env, refs, FREEWAY, 12, np.random.RandomState(5))


def test_freeway_car_of_speed_zero_drives_left_every_step(kernels):
    """A direction draw of exactly 0.5 gives MinAtar a car of speed 0, which drives left
    and reuses another car's trail channel (BatchFreeway's docstring): here it drives left
    every step, its timer staying 0, its trail in channel ``speed1``."""
    env = BatchFreeway(1, sticky_action_prob=0.0, kernels=kernels)
    env.reset(seed=0)
    st = env.get_state()
    st["car_speed"][0, 2], st["car_timer"][0, 2], st["car_x"][0, 2] = 0, 0, 1
    env.set_state(st)
    for x in (0, 9, 8):
        obs, *_ = env.step(np.array([0]))
        assert (env.state.car_x[0, 2], env.state.car_timer[0, 2]) == (x, 0)
        assert obs[0, 3, x, 1] and obs[0, 3, (x + 1) % 10, 2]
