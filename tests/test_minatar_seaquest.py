"""BatchSeaquest against the ``minatar`` package (1.0.15): step-exact parity over long runs
(the harness of ``tests/minatar_parity.py``), crowded random states injected into both,
the quirks on hand-made states, and the slot capacities."""

from __future__ import annotations

import numpy as np
import pytest

minatar = pytest.importorskip("minatar")

from minatar_parity import Game, StandIn, random_policy, run  # noqa: E402

import batchenv  # noqa: E402
from batchenv.envs.minatar import BatchSeaquest  # noqa: E402
from batchenv.envs.minatar.seaquest import ENEMY_SLOTS  # noqa: E402

STICKY = ("environment.py", "act", "rand", 0)  # Environment.act's sticky draw: step word 0
ENEMY = ("seaquest.py", "_spawn_enemy")
DIVER = ("seaquest.py", "_spawn_diver")
STEP_TABLE = {STICKY: 0, (*ENEMY, "rand", 0): 1, (*ENEMY, "rand", 1): 2,
              (*ENEMY, "randint", 0): 3, (*DIVER, "rand", 0): 4, (*DIVER, "randint", 0): 5}
SEAQUEST = Game("seaquest", STEP_TABLE, {}, extra=lambda ref: ref.env.ramp_index)
N, L, U, R, D, F = range(6)
# Batch sizes of the compiled runs: not multiples of 16, where Seaquest's slot views have
# another layout and numba compiles the loop again (tests/test_minatar_perenv.py, N)


def slots(st: np.ndarray, name: str) -> np.ndarray:
    """The slot columns ``name_0, name_1, ..`` of records as one ``(n, slots)`` array."""
    columns = [c for c in st.dtype.names if c.rsplit("_", 1)[0] == name]
    return np.stack([st[c] for c in columns], axis=1)


def diver_hunter(env: BatchSeaquest, low_oxygen: int = 45, track: list | None = None):
    """A scripted player that rescues divers and surfaces: it heads for the newest diver,
    shoots enemies ahead in its row, surfaces with 6 divers or when oxygen runs low, and
    once MinAtar has left it with -1 divers (see the docstring's quirks) bobs between rows
    0 and 1, ramping the difficulty at every surfacing. Of its preferred actions it takes
    the first that a two-step look-ahead says survives: a copy of each env (our rules;
    the reference checks them) stepped with the env's own next random words. ``track``
    collects the largest number of live enemies seen in an env."""
    n = env.num_envs
    scratch = BatchSeaquest(6 * n, sticky_action_prob=0.0, validate=False,
                            difficulty_ramping=env.difficulty_ramping)  # (compiled)
    scratch.reset(seed=0)
    first = np.tile(np.arange(6), n)
    idle = np.zeros(6 * n, dtype=np.int64)
    rows = np.arange(n)

    def policy(obs: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
        st = env.get_state()
        if track is not None:
            track.append(int(slots(st, "en_alive").sum(axis=1).max()))
        copies = np.repeat(st, 6)
        copies["awaiting_reset"] = False
        scratch.set_state(copies)
        _, _, dead_now, _, _ = scratch.step(first)
        _, _, dead_next, _, _ = scratch.step(idle)
        safe = ~(dead_now | dead_next).reshape(n, 6)
        x, y, count, oxygen = st["sub_x"], st["sub_y"], st["diver_count"], st["oxygen"]
        newest = st["dv_alive_1"].astype(int)
        has_diver = st["dv_alive_0"] | st["dv_alive_1"]
        gx = np.where(has_diver, slots(st, "dv_x")[rows, newest], 5)
        gy = np.where(has_diver, slots(st, "dv_y")[rows, newest], 4)
        surfacing = (count == 6) | ((count >= 1) & (oxygen < low_oxygen)) | (count < 0)
        gx, gy = np.where(surfacing, x, gx), np.where(surfacing, 0, gy)
        gy = np.where((count < 0) & (y == 0), 1, gy)  # bob
        vertical = np.where(gy < y, U, np.where(gy > y, D, N))
        horizontal = np.where(gx < x, L, np.where(gx > x, R, N))
        move = np.where(vertical != N, vertical, horizontal)
        en_x = slots(st, "en_x")
        in_row = slots(st, "en_alive") & (slots(st, "en_y") == y[:, None])
        ahead = np.where(st["sub_dx"][:, None] > 0, en_x > x[:, None], en_x < x[:, None])
        shoot = (in_row & ahead).any(axis=1) & ~surfacing
        prefs = np.stack([np.where(shoot, F, move), move, horizontal,
                          *(np.full(n, a) for a in (F, N, U, D, L, R))], axis=1)
        choice = prefs[rows, safe[rows[:, None], prefs].argmax(axis=1)]
        return np.where((count == 0) & (y == 1) & (choice == U), N, choice)  # no divers

    return policy


@pytest.mark.parametrize("sticky", [0.1, 0.0, 0.5])
def test_random_policy(sticky):
    env = BatchSeaquest(60, sticky_action_prob=sticky)
    res = run(env, SEAQUEST, 400, random_policy(6), seed=10, rng=np.random.RandomState(0))
    assert res.steps == 60 * 400 and res.episodes > 500 and res.reward > 0
    assert (res.sticky_repeats > 0) == (sticky > 0)


@pytest.mark.slow  # a long parity run (CI's -m slow pass); late-game states against the
# reference in README's command: test_crowded_random_states_step_like_the_reference
def test_scripted_policy_reaches_the_top_of_the_ramp(long_run_kernels):
    # without sticky actions the look-ahead keeps the submarine alive: 6 divers, a full
    # surfacing, then -1 divers and bobbing to the fastest spawn rate; up to 30 enemies
    occupancy: list[int] = []
    env = BatchSeaquest(30, sticky_action_prob=0.0, kernels=long_run_kernels)
    res = run(env, SEAQUEST, 1100, diver_hunter(env, track=occupancy), seed=3,
              rng=np.random.RandomState(1))
    assert res.extra_max == 19  # spawn speed 1, move interval 2: the end of the ramp
    assert max(occupancy) >= 20


@pytest.mark.slow  # a long parity run (CI's -m slow pass)
def test_scripted_policy_with_sticky_actions(kernels):
    env = BatchSeaquest(32, sticky_action_prob=0.1, kernels=kernels)
    res = run(env, SEAQUEST, 900, diver_hunter(env), seed=4, rng=np.random.RandomState(2))
    assert res.extra_max >= 5 and res.episodes > 10
    assert max(res.returns) >= 10  # enemies shot and a full surfacing's bonus


@pytest.mark.slow  # a long parity run (CI's -m slow pass)
def test_scripted_policy_without_ramping(kernels):
    env = BatchSeaquest(16, difficulty_ramping=False, sticky_action_prob=0.0,
                        kernels=kernels)
    res = run(env, SEAQUEST, 700, diver_hunter(env), seed=5, rng=np.random.RandomState(3))
    assert res.extra_max == 0 and res.reward > 0


def test_minimal_action_set(kernels):
    env = BatchSeaquest(30, minimal_action_set=True, sticky_action_prob=0.3,
                        kernels=kernels)
    assert env.single_action_space.n == 6
    run(env, SEAQUEST, 200, random_policy(6), seed=9, rng=np.random.RandomState(4))


# ---------------------------------------------------------------- injected states
def inject(env: BatchSeaquest, refs: list) -> None:
    """Set every env of ``env`` to the state of the reference game of the same index:
    MinAtar's lists become slots (list order: bullet and diver slot 0 first, enemy stamps
    in list order; slot j of a field is the column ``<field>_j``, headings are dx = +-1)."""
    st = env.get_state()
    st[[name for name in st.dtype.names if name not in ("rng_key", "rng_counter")]] = 0
    for i, ref in enumerate(refs):
        g = ref.env
        st["sub_dx"][i] = 1 if g.sub_or else -1
        for ours, theirs in (("sub_x", "sub_x"), ("sub_y", "sub_y"),
                             ("shot_timer", "shot_timer"), ("surface", "surface"),
                             ("e_spawn_speed", "e_spawn_speed"),
                             ("e_spawn_timer", "e_spawn_timer"),
                             ("d_spawn_timer", "d_spawn_timer"), ("move_speed", "move_speed"),
                             ("ramp_index", "ramp_index"), ("oxygen", "oxygen"),
                             ("diver_count", "diver_count")):
            st[ours][i] = getattr(g, theirs)
        for j, (x, y, right) in enumerate(g.f_bullets):
            for name, value in zip(("fb_x", "fb_y", "fb_dx", "fb_alive"),
                                   (x, y, 1 if right else -1, True)):
                st[f"{name}_{j}"][i] = value
        for j, (x, y, right, timer) in enumerate(g.divers):
            for name, value in zip(("dv_x", "dv_y", "dv_dx", "dv_timer", "dv_alive"),
                                   (x, y, 1 if right else -1, timer, True)):
                st[f"{name}_{j}"][i] = value
        enemies = [(*e, 0, False) for e in g.e_fish] + [(*e, True) for e in g.e_subs]
        for j, (x, y, right, timer, shot, sub) in enumerate(enemies):
            for name, value in zip(("en_x", "en_y", "en_dx", "en_timer", "en_shot",
                                    "en_sub", "en_stamp", "en_alive"),
                                   (x, y, 1 if right else -1, timer, shot, sub, j, True)):
                st[f"{name}_{j}"][i] = value
        st["spawn_count"][i] = st["en_slots"][i] = len(enemies)
        for x, y, right in g.e_bullets:
            st[f"eb_{'right' if right else 'left'}_{y}"][i] |= 1 << x
    env.set_state(st)


def random_state(rng: np.random.RandomState, horizon: int) -> dict:
    """A crowded mid-game state: many enemies (fish and subs, any heading, timers due
    soon) packed into a few rows and columns around the submarine, bullets of both sides,
    divers; what MinAtar's own play guarantees is kept (at most two friendly bullets, none
    fired while two fly; at most two divers, none spawning while two swim; no two
    identical enemies; the submarine's back cell on the board)."""
    ms = rng.randint(2, 6)
    x, y = rng.randint(10), rng.randint(9)
    right = bool(rng.rand() < 0.5) if 0 < x < 9 else x == 9

    def cells(k):
        return zip(np.clip(x + rng.randint(-3, 4, k), 0, 9),
                   np.clip(y + rng.randint(-2, 3, k), 1, 8))

    fish = {(int(cx), int(cy), bool(rng.rand() < 0.5), int(rng.randint(0, ms + 1)))
            for cx, cy in cells(rng.randint(0, 12))}
    subs = {(int(cx), int(cy), bool(rng.rand() < 0.5), int(rng.randint(0, ms + 1)),
             int(rng.randint(0, 11))) for cx, cy in cells(rng.randint(0, 12))}
    bullets = {(int(cx), int(cy), bool(rng.rand() < 0.5)) for cx, cy in cells(rng.randint(0, 3))}
    f_bullets = [list(b) for b in list(bullets)[:2]]
    divers = [[int(cx), int(cy), bool(rng.rand() < 0.5), int(rng.randint(0, 6))]
              for cx, cy in cells(rng.randint(0, 3))]
    divers = [d for k, d in enumerate(divers) if d not in divers[:k]]
    e_bullets = [[int(cx), int(cy), bool(rng.rand() < 0.5)] for cx, cy in cells(rng.randint(0, 6))]
    return dict(
        sub_x=x, sub_y=y, sub_or=right, f_bullets=f_bullets,
        e_fish=[list(f) for f in fish], e_subs=[list(s) for s in subs], divers=divers,
        e_bullets=e_bullets, move_speed=ms, e_spawn_speed=rng.randint(1, 21),
        e_spawn_timer=rng.randint(0, 3), ramp_index=rng.randint(0, 20),
        d_spawn_timer=rng.randint(0, 3) if len(divers) < 2 else horizon + 1,
        shot_timer=rng.randint(0, 3) if len(f_bullets) < 2 else 5,
        oxygen=int(rng.choice([0, 2, 50, 200, 200])), diver_count=int(rng.randint(-2, 7)),
        surface=bool(rng.rand() < 0.5))


@pytest.mark.parametrize("ramping", [True, False])
def test_crowded_random_states_step_like_the_reference(ramping, kernels):
    rng = np.random.RandomState(21 if ramping else 22)
    n, horizon = 401, 5
    env = BatchSeaquest(n, sticky_action_prob=0.0, difficulty_ramping=ramping,
                        kernels=kernels)
    env.reset(seed=7)
    refs = []
    for _ in range(n):
        ref = minatar.Environment("seaquest", sticky_action_prob=0.0,
                                  difficulty_ramping=ramping)
        for name, value in random_state(rng, horizon).items():
            setattr(ref.env, name, value)
        refs.append(ref)
    inject(env, refs)
    stand = StandIn()
    for ref in refs:
        ref.random = ref.env.random = stand
    live = np.ones(n, dtype=bool)
    compared = 0
    for t in range(horizon):
        st = env.get_state()
        actions = rng.randint(6, size=n)
        obs, reward, terminated, _, _ = env.step(actions)
        for i in np.flatnonzero(live):
            stand.load(STEP_TABLE, int(st["rng_key"][i]), int(st["rng_counter"][i]), 6)
            r, done = refs[i].act(int(actions[i]))
            where = f"env {i}, step {t}"
            assert (reward[i], terminated[i]) == (r, done), where
            np.testing.assert_array_equal(obs[i], refs[i].state(), err_msg=where)
            compared += 1
        live &= ~terminated
    assert compared > 1.5 * n  # crowded states end soon: most envs live a few steps


# ---------------------------------------------------------------- quirks, hand-made
def one(kernels, **fields):
    """A reference game and our env (one env, sticky off, the given ``kernels``) in the
    same hand-made state."""
    ref = minatar.Environment("seaquest", sticky_action_prob=0.0)
    for name, value in fields.items():
        setattr(ref.env, name, value)
    stand = StandIn()
    ref.random = ref.env.random = stand
    env = BatchSeaquest(1, sticky_action_prob=0.0, kernels=kernels)
    env.reset(seed=0)
    inject(env, [ref])
    return env, ref, stand


def step_one(env, ref, stand, action):
    st = env.get_state()
    stand.load(STEP_TABLE, int(st["rng_key"][0]), int(st["rng_counter"][0]), 6)
    obs, reward, terminated, _, _ = env.step(np.array([action]))
    r, done = ref.act(action)
    assert (reward[0], terminated[0]) == (r, done)
    np.testing.assert_array_equal(obs[0], ref.state())
    return r, done


def test_full_surfacing_leaves_minus_one_divers_and_free_surfacings(kernels):
    env, ref, stand = one(kernels, sub_x=4, sub_y=1, diver_count=6, oxygen=150, surface=False)
    r, done = step_one(env, ref, stand, U)
    assert r == 150 * 10 // 200 and not done and ref.env.diver_count == -1
    assert env.state.diver_count[0] == -1
    for _ in range(3):  # dive and surface again: no diver on board, yet no end
        step_one(env, ref, stand, D)
        r, done = step_one(env, ref, stand, U)
        assert not done
    assert ref.env.diver_count == -4 and ref.env.ramp_index == 4
    assert env.state.ramp_index[0] == 4


def test_sub_shot_as_it_moves_still_fires(kernels):
    # the sub moves left into the bullet's cell and dies; its shot timer is due: it fires
    env, ref, stand = one(kernels, sub_x=0, sub_y=7, sub_or=False, f_bullets=[[6, 3, True]],
                          e_subs=[[8, 3, False, 0, 0]], shot_timer=3)
    step_one(env, ref, stand, N)
    assert ref.env.e_subs == [] and ref.env.e_bullets == [[6, 3, False]]
    assert env.state.eb_left_3[0] == 1 << 6


def test_two_enemies_into_two_bullets_in_one_cell(kernels):
    # two bullets meet in (5, 4) (the older from the left); three enemies move in: the sub
    # (subs go first) takes the older bullet, the newer fish the newer one, and the older
    # fish, finding no bullet left, lives
    env, ref, stand = one(kernels, sub_x=0, sub_y=8, shot_timer=3,
                          f_bullets=[[4, 4, True], [6, 4, False]],
                          e_fish=[[6, 4, False, 0], [4, 4, True, 0]],
                          e_subs=[[6, 4, False, 0, 5]])
    step_one(env, ref, stand, N)
    assert ref.env.e_fish == [[5, 4, False, 5]] and ref.env.f_bullets == []
    assert ref.env.e_subs == []


def test_spawn_is_lost_when_the_row_heads_the_other_way(kernels):
    env, ref, stand = one(kernels, e_spawn_timer=0)
    st = env.get_state()
    # the row and heading this step's words give the spawn (a probe game), then a fish in
    # that row heading the other way
    stand.load(STEP_TABLE, int(st["rng_key"][0]), int(st["rng_counter"][0]), 6)
    probe = minatar.Environment("seaquest", sticky_action_prob=0.0)
    probe.random = probe.env.random = stand
    probe.env.e_spawn_timer = 0
    probe.act(N)
    (_, y, right, *_), = probe.env.e_fish + probe.env.e_subs
    ref.env.e_fish = [[5, y, not right, 3]]
    inject(env, [ref])
    step_one(env, ref, stand, N)
    assert len(ref.env.e_fish) + len(ref.env.e_subs) == 1
    assert slots(env.get_state(), "en_alive")[0].sum() == 1
    assert env.state.e_spawn_timer[0] == 19


def test_oxygen_runs_out_a_step_late(kernels):
    env, ref, stand = one(kernels, sub_y=3, oxygen=1, surface=False)
    assert step_one(env, ref, stand, N) == (0, False)  # oxygen 1 -> 0
    assert step_one(env, ref, stand, N) == (0, True)  # no oxygen: the end


def test_set_state_rejects_enemies_beyond_en_slots(kernels):
    # a reset clears the enemy slots below en_slots only: the slots from there on must be
    # clear, and set_state says so (naming the env) instead of keeping the junk forever
    env = BatchSeaquest(3, sticky_action_prob=0.0, kernels=kernels)
    env.reset(seed=0)
    st = env.get_state()
    st["en_alive_4"][1], st["en_dx_4"][1], st["en_slots"][1] = True, 1, 4
    with pytest.raises(ValueError, match=r"en_slots on is not clear.*env indices \[1\]"):
        env.set_state(st)
    st["en_slots"][1] = 5  # slot 4 in use: fine
    env.set_state(st)
    assert env.state.en_alive_4[1]
    env.reset(options={"reset_mask": np.array([False, True, False])})
    fresh = BatchSeaquest(1, kernels=kernels)
    fresh.reset(seed=0)
    game = [c for c in st.dtype.names if c not in ("rng_key", "rng_counter", "last_action")]
    assert env.get_state()[game][1] == fresh.get_state()[game][0]  # every slot clear


def test_slot_capacity_bound():
    # the bound in ENEMY_SLOTS' comment: at most 30 enemies (29 alive and one spawning)
    assert ENEMY_SLOTS >= 30


def test_a_spawn_with_every_enemy_slot_taken_is_an_error(kernels):
    # beyond the bound (only a set state gets there): every slot holds a fish in row 1
    # heading right, which blocks no spawn but one into row 1 heading left; in 15 envs
    # some spawn is not blocked, and finds no slot
    env = BatchSeaquest(15, sticky_action_prob=0.0, kernels=kernels)
    env.reset(seed=0)
    st = env.get_state()
    for j in range(ENEMY_SLOTS):
        for name, value in (("en_x", 3), ("en_y", 1), ("en_dx", 1), ("en_timer", 5),
                            ("en_alive", True), ("en_stamp", j)):
            st[f"{name}_{j}"] = value
    st["en_slots"], st["spawn_count"], st["e_spawn_timer"] = ENEMY_SLOTS, ENEMY_SLOTS, 0
    env.set_state(st)
    with pytest.raises(RuntimeError, match=f"more than {ENEMY_SLOTS} enemies in envs"):
        env.step(np.zeros(15, dtype=np.int64))


def test_ids():
    ref = minatar.Environment("seaquest")
    assert list(BatchSeaquest.minimal_actions) == ref.minimal_action_set()
    assert list(BatchSeaquest.channels) == sorted(ref.env.channels, key=ref.env.channels.get)
    for env_id in ("MinAtar/Seaquest-v0", "MinAtar/Seaquest-v1", "batchenv/MinAtar-Seaquest-v0",
                   "batchenv/MinAtar-Seaquest-v1"):
        env = batchenv.make(env_id, 3)
        assert isinstance(env, BatchSeaquest) and env.single_action_space.n == 6
        assert env.single_observation_space.shape == (10, 10, 10)
