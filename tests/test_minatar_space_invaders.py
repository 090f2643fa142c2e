"""BatchSpaceInvaders against the ``minatar`` package (1.0.15): step-exact parity over long
runs (the harness of ``tests/minatar_parity.py``), random states injected into both, and
the rules one by one on hand-made boards."""

from __future__ import annotations

import numpy as np
import pytest

minatar = pytest.importorskip("minatar")

from minatar_parity import Game, random_policy, run  # noqa: E402

import batchenv  # noqa: E402
from batchenv.envs.minatar import BatchSpaceInvaders  # noqa: E402

STICKY = ("environment.py", "act", "rand", 0)  # Environment.act's sticky draw: step word 0
SPACE_INVADERS = Game("space_invaders", {STICKY: 0}, {}, extra=lambda ref: ref.env.ramp_index)
N, L, U, R, D, F = range(6)


def simulate_shots(scratch: BatchSpaceInvaders, records: np.ndarray, delays: int
                   ) -> np.ndarray:
    """``hit[i, k, c]``: would a shot fired from column c after k idle steps hit an alien,
    for each state record i? Steps copies of the states in ``scratch`` (our own rules, with
    sticky actions off and auto-reset disabled; the reference checks those rules), the
    cannon in each column, its gun cooled down, no bullet in flight; a look-ahead for the
    scripted player."""
    k_max = delays + 1
    per_record = 10 * k_max
    copies = np.repeat(records, per_record)
    copies["pos"] = np.tile(np.arange(10, dtype=np.int8), k_max * len(records))
    copies["shot_timer"], copies["f_bullets"], copies["e_bullets"] = 0, 0, 0
    copies["awaiting_reset"] = False
    wait = np.tile(np.repeat(np.arange(k_max), 10), len(records))
    n = scratch.num_envs
    assert len(copies) <= n
    filler = np.repeat(copies[:1], n - len(copies))  # (the scratch env's other rows)
    scratch.set_state(np.concatenate([copies, filler]))
    wait = np.concatenate([wait, np.full(n - len(copies), -1)])
    hit = np.zeros(n, dtype=bool)
    for t in range(k_max + 8):  # a bullet reaches row 0 in 9 steps
        _, reward, *_ = scratch.step(np.where(wait == t, F, N))
        hit |= (reward > 0) & (t > wait)
    return hit[:len(copies)].reshape(len(records), k_max, 10)


def sniper(env: BatchSpaceInvaders, delays: int = 6):
    """A scripted player that clears waves: it heads for the nearest column with an alien
    and fires there; with 4 aliens or fewer left (they march fast), it heads for the
    nearest column from which a shot fired in time would hit (:func:`simulate_shots`,
    peeking at the env's state as a look-ahead does). It never steps into a cell where an
    alien bullet or an alien is about to land."""
    rows = np.arange(env.num_envs)
    scratch = BatchSpaceInvaders(env.num_envs * 10 * (delays + 1), sticky_action_prob=0.0,
                                 difficulty_ramping=env.difficulty_ramping, validate=False,
                                 autoreset_mode="Disabled")  # (compiled: a policy's tool)

    def policy(obs: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
        pos = obs[:, 9, :, 0].argmax(axis=1)
        aliens = obs[..., 1]
        distance = np.abs(np.arange(10) - pos[:, None])
        target = np.where(aliens.any(axis=1), distance, 99).argmin(axis=1)
        ready = np.ones(len(obs), dtype=bool)
        few = np.flatnonzero(aliens.sum(axis=(1, 2)) <= 4)
        if len(few):
            hit = simulate_shots(scratch, env.get_state()[few], delays)
            reach = distance[few, None, :] <= np.arange(delays + 1)[None, :, None]
            plan = hit & reach
            k = np.where(plan.any(axis=2), np.arange(delays + 1), 99).min(axis=1)
            best = plan[np.arange(len(few)), np.minimum(k, delays)]
            target[few] = np.where(k < 99, np.where(best, distance[few], 99).argmin(axis=1),
                                   pos[few])
            ready[few] = k == 0
        landing = np.pad(obs[:, 8, :, 5] | obs[:, 9, :, 1], ((0, 0), (1, 1)),
                         constant_values=True)  # cells where the cannon would die
        safe_left, safe_here, safe_right = (~landing[rows, pos + i] for i in range(3))
        toward = np.where(target < pos, L, R)
        safe_toward = np.where(target < pos, safe_left, safe_right)
        return np.where((target == pos) & ready & safe_here, F,
                        np.where(safe_toward & (target != pos), toward,
                                 np.where(safe_here, N, np.where(safe_left, L, R))))

    return policy


@pytest.mark.parametrize("sticky", [0.1, 0.0, 0.5])
def test_random_policy(sticky):
    env = BatchSpaceInvaders(64, sticky_action_prob=sticky)
    res = run(env, SPACE_INVADERS, 300, random_policy(6), seed=10, rng=np.random.RandomState(0))
    assert res.steps == 64 * 300 and res.episodes > 100 and res.reward > 0
    assert (res.sticky_repeats > 0) == (sticky > 0)


# (long runs: one in README's command, the others in CI's -m slow pass; the rules of late
# waves against the reference: test_random_states_step_like_the_reference, the hand-made
# boards below)
@pytest.mark.parametrize("sticky,steps", [pytest.param(0.1, 900, marks=pytest.mark.slow),
                                          (0.0, 700)])
def test_scripted_policy_clears_waves_up_the_ramp(sticky, steps, long_run_kernels):
    env = BatchSpaceInvaders(24, sticky_action_prob=sticky, kernels=long_run_kernels)
    res = run(env, SPACE_INVADERS, steps, sniper(env), seed=5, rng=np.random.RandomState(1))
    assert res.extra_max >= 3  # three waves cleared, each marching faster
    assert max(res.returns + [0]) >= 3 * 24 or max(res.lengths + [steps]) >= steps


@pytest.mark.slow
def test_scripted_policy_without_ramping(long_run_kernels):
    env = BatchSpaceInvaders(16, difficulty_ramping=False, kernels=long_run_kernels)
    res = run(env, SPACE_INVADERS, 600, sniper(env), seed=7, rng=np.random.RandomState(2))
    assert res.extra_max == 0 and res.reward > 16 * 24  # waves cleared, no ramp


def test_minimal_action_set(kernels):
    env = BatchSpaceInvaders(48, minimal_action_set=True, sticky_action_prob=0.3,
                             kernels=kernels)
    run(env, SPACE_INVADERS, 250, random_policy(4), seed=9, rng=np.random.RandomState(3))


# ---------------------------------------------------------------- injected states
def ref_env(**fields) -> minatar.Environment:
    """A reference ``Environment`` (sticky actions off) with its game's fields set."""
    ref = minatar.Environment("space_invaders", sticky_action_prob=0.0)
    for name, value in fields.items():
        setattr(ref.env, name, value)
    return ref


def inject(env: BatchSpaceInvaders, refs: list) -> None:
    """Set every env of ``env`` to the state of the reference game of the same index."""
    st = env.get_state()
    bits = 1 << np.arange(10)
    for i, ref in enumerate(refs):
        g = ref.env
        st["pos"][i], st["alien_dir"][i] = g.pos, g.alien_dir
        st["move_interval"][i], st["ramp_index"][i] = g.enemy_move_interval, g.ramp_index
        st["alien_move_timer"][i], st["alien_shot_timer"][i] = (g.alien_move_timer,
                                                                g.alien_shot_timer)
        st["shot_timer"][i] = g.shot_timer
        st["alien_count"][i] = np.count_nonzero(g.alien_map)
        for ours, theirs in (("aliens", g.alien_map), ("f_bullets", g.f_bullet_map),
                             ("e_bullets", g.e_bullet_map)):
            st[ours][i] = (np.asarray(theirs, dtype=bool) * bits).sum(axis=1)
    st["awaiting_reset"] = False
    env.set_state(st)


def step_both(env, refs, actions):
    obs, reward, terminated, _, _ = env.step(actions)
    for i, (ref, a) in enumerate(zip(refs, actions)):
        r, done = ref.act(int(a))
        assert reward[i] == r and terminated[i] == done, f"env {i}"
        np.testing.assert_array_equal(obs[i], ref.state(), err_msg=f"env {i}")
    return terminated


def random_board(rng: np.random.RandomState) -> dict:
    """A random mid-game state: any non-empty alien set, bullets anywhere (the cannon's
    never on the bottom row: MinAtar clears it each step), any timers and direction."""
    aliens = rng.rand(10, 10) < rng.choice([0.05, 0.2, 0.5])
    aliens[rng.randint(10), rng.randint(10)] = True
    f_bullets = rng.rand(10, 10) < 0.1
    f_bullets[9] = False
    interval = rng.randint(6, 13)
    return dict(pos=rng.randint(10), alien_map=aliens.astype(float),
                f_bullet_map=f_bullets.astype(float),
                e_bullet_map=(rng.rand(10, 10) < 0.1).astype(float),
                alien_dir=rng.choice([-1, 1]), enemy_move_interval=interval,
                alien_move_timer=rng.randint(0, 4), alien_shot_timer=rng.randint(0, 3),
                shot_timer=rng.randint(0, 3), ramp_index=12 - interval)


@pytest.mark.parametrize("ramping", [True, False])
def test_random_states_step_like_the_reference(ramping, kernels):
    rng = np.random.RandomState(11 if ramping else 12)
    n = 300
    env = BatchSpaceInvaders(n, sticky_action_prob=0.0, difficulty_ramping=ramping,
                             kernels=kernels)
    env.reset(seed=0)
    refs = [ref_env(**random_board(rng)) for _ in range(n)]
    for ref in refs:
        ref.env.ramping = ramping
    inject(env, refs)
    for _ in range(6):  # a few steps, while no env has finished (the reference then stops)
        done = step_both(env, refs, rng.randint(6, size=len(refs)))
        if done.any():
            keep = np.flatnonzero(~done)
            refs = [refs[i] for i in keep]
            if not refs:
                break
            env = BatchSpaceInvaders(len(refs), sticky_action_prob=0.0,
                                     difficulty_ramping=ramping, kernels=kernels)
            env.reset(seed=0)
            inject(env, refs)


# ---------------------------------------------------------------- rules on hand-made boards
def board(cells) -> np.ndarray:
    out = np.zeros((10, 10))
    for y, x in cells:
        out[y, x] = 1
    return out


def check(kernels, actions, **fields):
    """Step our env (with the given ``kernels=``) and the reference from the same hand-made
    state; return both envs."""
    ref = ref_env(**fields)
    env = BatchSpaceInvaders(1, sticky_action_prob=0.0, kernels=kernels)
    env.reset(seed=0)
    inject(env, [ref])
    for a in actions:
        step_both(env, [ref], np.array([a]))
    return env, ref


def test_bullet_and_alien_swapping_cells_pass_through(kernels):
    # the block steps down (alien at the right edge heading right) as the bullet rises
    env, ref = check(kernels, [N], alien_map=board([(5, 9)]), f_bullet_map=board([(6, 9)]),
                     alien_dir=1, alien_move_timer=0, alien_shot_timer=5)
    assert ref.env.alien_map[6, 9] and ref.env.f_bullet_map[5, 9]  # both still there
    assert env.state.aliens[0, 6] == 1 << 9


def test_block_stepping_down_from_the_bottom_row_rolls_it_to_the_top(kernels):
    env, ref = check(kernels, [N], alien_map=board([(9, 0), (8, 1)]), pos=5, alien_dir=-1,
                     alien_move_timer=0, alien_shot_timer=5)
    assert ref.env.terminal and ref.env.alien_map[0, 0] and ref.env.alien_map[9, 1]


def test_the_nearest_column_shoots_left_one_first(kernels):
    # columns 3 and 7 are both two away from the cannon in 5: the left one's lowest fires
    env, ref = check(kernels, [N], alien_map=board([(1, 3), (2, 3), (4, 7)]), pos=5,
                     alien_move_timer=5, alien_shot_timer=0)
    assert ref.env.e_bullet_map[2, 3] and not ref.env.e_bullet_map[4, 7]


def test_new_wave_and_ramp(kernels):
    env, ref = check(kernels, [N], alien_map=board([(3, 4)]), f_bullet_map=board([(4, 4)]),
                     alien_move_timer=3, alien_shot_timer=5, enemy_move_interval=7)
    assert ref.env.ramp_index == 1 and ref.env.enemy_move_interval == 6
    assert env.state.move_interval[0] == 6 and env.state.aliens[0, :4].tolist() == [252] * 4
    env, ref = check(kernels, [N], alien_map=board([(3, 4)]), f_bullet_map=board([(4, 4)]),
                     alien_move_timer=3, alien_shot_timer=5, enemy_move_interval=6)
    assert ref.env.ramp_index == 0 and env.state.move_interval[0] == 6  # the ramp's end


def test_fire_cool_down_and_moves(kernels):
    # fire, then four steps of cool-down where f does nothing, then fire again
    env, ref = check(kernels, [F, F, F, F, F, F, L, R, R], alien_map=board([(0, 0)]),
                     alien_move_timer=9, alien_shot_timer=9)
    assert env.state.shot_timer[0] == ref.env.shot_timer


def test_ids():
    ref = minatar.Environment("space_invaders")
    assert list(BatchSpaceInvaders.minimal_actions) == ref.minimal_action_set()
    names = sorted(ref.env.channels, key=ref.env.channels.get)
    assert list(BatchSpaceInvaders.channels) == names
    for env_id, n_actions in [("MinAtar/SpaceInvaders-v0", 6), ("MinAtar/SpaceInvaders-v1", 4),
                              ("batchenv/MinAtar-SpaceInvaders-v0", 6),
                              ("batchenv/MinAtar-SpaceInvaders-v1", 4)]:
        env = batchenv.make(env_id, 3)
        assert isinstance(env, BatchSpaceInvaders) and env.single_action_space.n == n_actions
        assert env.single_observation_space.shape == (10, 10, 6)
