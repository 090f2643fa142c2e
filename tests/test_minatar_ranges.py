"""The MinAtar games' valid states (their schemas' ``Range``\\ s and ``check_state``), fuzzed
(``tests/range_fuzz.py``): a few hundred random states per game inside them, a quarter of
the values at a bound, each with the game's invariants made to hold, step alike compiled
and as a Python loop, without an error, to states inside them again; a value one past any
bound of any field, and each invariant broken, is refused by ``set_state`` naming the
field or the invariant, the env and the value, and changes nothing."""

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

from batchenv.entities import slot_names  # noqa: E402
from batchenv.envs.minatar import (  # noqa: E402
    BatchAsterix,
    BatchBreakout,
    BatchFreeway,
    BatchSeaquest,
    BatchSpaceInvaders,
)
from batchenv.envs.minatar.seaquest import ENEMY_SLOTS  # noqa: E402

N = 200  # states per game (not a multiple of 16: tests/test_minatar_perenv.py, N)
STEPS = 3


def _popcount(masks: np.ndarray) -> np.ndarray:
    return np.array([bin(int(m)).count("1") for m in masks.reshape(-1)]).reshape(masks.shape)


def _heading(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.where(values == 0, rng.choice([-1, 1], values.shape), values)


def breakout(st, rng):
    st["ball_dx"], st["ball_dy"] = _heading(st["ball_dx"], rng), _heading(st["ball_dy"], rng)
    st["strike"] = rng.random(len(st)) < 0.3


def asterix(st, rng):
    alive = rng.random(st["alive"].shape) < 0.6
    st["alive"] = alive
    st["ent_right"] = rng.random(alive.shape) < 0.5
    st["ent_gold"] = rng.random(alive.shape) < 0.3
    st["ent_x"] = np.where(alive, np.clip(st["ent_x"], 0, 9), st["ent_x"])
    st["ramp_index"] = rng.integers(-128, 128, len(st))  # no range: any value is safe


def freeway(st, rng):
    st["awaiting_reset"] |= st["terminate_timer"] < 0


def space_invaders(st, rng):
    st["alien_dir"] = _heading(st["alien_dir"], rng)
    st["aliens"] &= rng.integers(0, 1024, st["aliens"].shape, dtype=np.uint16)  # (thinner)
    empty = st["aliens"].sum(axis=1) == 0
    st["aliens"][empty, 0] = 1
    st["alien_count"] = _popcount(st["aliens"]).sum(axis=1)
    st["ramp_index"] = rng.integers(-128, 128, len(st))


def seaquest(st, rng):
    n = len(st)
    cap = ENEMY_SLOTS - STEPS  # live enemies: at most one spawn a step finds a free slot
    live = np.zeros(n, dtype=int)
    for j in range(ENEMY_SLOTS):
        beyond = j >= st["en_slots"]
        alive = (rng.random(n) < 0.7) & ~beyond & (live < cap)
        live += alive
        st[f"en_alive_{j}"], st[f"en_sub_{j}"] = alive, (rng.random(n) < 0.4) & ~beyond
        st[f"en_x_{j}"] = np.where(alive, np.clip(st[f"en_x_{j}"], 0, 9), st[f"en_x_{j}"])
        st[f"en_dx_{j}"] = np.where(alive, _heading(st[f"en_dx_{j}"], rng), st[f"en_dx_{j}"])
        st[f"en_stamp_{j}"] = rng.integers(-2**31, 2**31, n)
        for name in slot_names(["en_x", "en_y", "en_dx", "en_timer", "en_shot", "en_sub",
                                "en_stamp"], ENEMY_SLOTS)[j::ENEMY_SLOTS]:
            st[name][beyond] = 0  # the slots from en_slots on are clear
    for kind in ("fb", "dv"):
        for j in range(2):
            alive = rng.random(n) < 0.6
            st[f"{kind}_alive_{j}"] = alive
            x = st[f"{kind}_x_{j}"] if kind == "dv" else rng.integers(-128, 128, n)
            st[f"{kind}_x_{j}"] = np.where(alive, np.clip(x, 0, 9), x)
            st[f"{kind}_dx_{j}"] = np.where(alive, _heading(st[f"{kind}_dx_{j}"], rng),
                                            st[f"{kind}_dx_{j}"])
        for j in range(2 if kind == "dv" else 0):
            timer = rng.integers(-128, 128, n)  # a dead diver's timer drifts: any value
            st[f"dv_timer_{j}"] = np.where(st[f"dv_alive_{j}"], timer % 6, timer)
    x, dx = st["sub_x"], _heading(st["sub_dx"], rng)
    st["sub_dx"] = np.where(x == 0, -1, np.where(x == 9, 1, dx))  # its back on the board
    st["surface"] = rng.random(n) < 0.5
    st["ramp_index"] = rng.integers(-128, 128, n)
    st["spawn_count"] = rng.integers(-2**31, 2**31, n)
    st["awaiting_reset"] |= st["oxygen"] < 0


GAMES = {BatchBreakout: breakout, BatchAsterix: asterix, BatchFreeway: freeway,
         BatchSpaceInvaders: space_invaders, BatchSeaquest: seaquest}


def inside(cls, env, seed):
    """``N`` states inside ``cls``'s ranges and check_state: states the game reached, then
    every ranged field redrawn and the game's invariants made to hold, one env in ten
    awaiting its reset."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    for _ in range(20):
        env.step(rng.integers(0, env.single_action_space.n, env.num_envs))
    st = fill_inside(env, env.get_state(), rng)
    st["awaiting_reset"] = rng.random(len(st)) < 0.1
    GAMES[cls](st, rng)
    assert not problems(env, st), problems(env, st)
    return st


# The Python form of every game but Breakout: the `slow` pass (tests/conftest.py,
# PYTHON_FORM_IN_README); the refusals below run compiled, in the worker that compiles the
# game for its parity tests.
@pytest.mark.parametrize("cls", [pytest.param(c, marks=[] if c is BatchBreakout
                                              else [pytest.mark.slow]) for c in GAMES])
def test_states_inside_the_ranges_step_alike_and_stay_inside(cls):
    compiled, python = cls(N, kernels="numba"), cls(N, kernels="python")
    for seed in (1, 2):
        step_alike(compiled, python, inside(cls, compiled, seed), STEPS,
                   np.random.default_rng(seed))


@pytest.mark.parametrize("cls", list(GAMES))
def test_a_value_past_any_bound_is_refused(cls):
    env = cls(N)
    states = inside(cls, env, 3)
    assert assert_every_bound_refused(env, states, np.random.default_rng(3)) >= 2 * len(
        [n for n in env.state_field_ranges if env.full_state_dtype[n].base.kind == "i"])


def _broken(st, k, **fields):
    bad = st.copy()
    for name, value in fields.items():
        bad[name][k] = value
    return bad


INVARIANTS = {
    BatchBreakout: [({"ball_dx": 0}, r"ball_dx or ball_dy not -1 or \+1")],
    BatchAsterix: [({"alive": True, "ent_x": 10}, "a live entity outside columns 0-9")],
    BatchFreeway: [({"terminate_timer": -1, "awaiting_reset": False},
                    r"terminate_timer -1 \(the game is over\) in an env not awaiting")],
    BatchSpaceInvaders: [({"alien_dir": 0}, r"alien_dir not -1 or \+1"),
                         ({"alien_count": 100}, "alien_count not the number of aliens")],
    BatchSeaquest: [({"en_slots": 0, "en_alive_0": True}, "an enemy slot from en_slots on "
                     "is not clear"),
                    ({"en_slots": 1, "en_alive_0": True, "en_x_0": 10, "en_dx_0": 1},
                     "a live bullet, diver or enemy off the board"),
                    ({"fb_alive_1": True, "fb_x_1": 4, "fb_dx_1": 0},
                     r"a heading \(sub_dx, or a live entity's dx\) not -1 or \+1"),
                    ({"sub_x": 0, "sub_dx": 1}, "the submarine's back off the board"),
                    ({"dv_alive_0": True, "dv_x_0": 3, "dv_dx_0": 1, "dv_timer_0": 6},
                     r"a live diver's timer outside \[0, 5\]"),
                    ({"oxygen": -1, "awaiting_reset": False}, "oxygen -1")],
}


@pytest.mark.parametrize("cls", list(INVARIANTS))
def test_the_games_invariants_are_refused(cls):
    rng = np.random.default_rng(5)
    env = cls(N)
    states = inside(cls, env, 6)
    env.set_state(states)
    for fields, what in INVARIANTS[cls]:
        k = int(rng.integers(N))
        clear = {name: 0 for name in fields if name.startswith(("en_", "fb_", "dv_"))}
        assert_refused(env, _broken(_broken(states, k, **clear), k, **fields), k, what)


def test_a_dead_asterix_entity_may_keep_the_column_it_left_to():
    env = BatchAsterix(N)
    states = inside(BatchAsterix, env, 7)
    env.set_state(_broken(states, 4, alive=False, ent_x=10))
