"""ShardedVectorEnv, process backend: the sharded batch against the unsharded ``BatchEnv``
(an independent oracle: one process, no shards, no shared memory), faults, clean-up.

Every test that starts workers closes them; ``no_leaks`` checks that no shared-memory
block of ours is left in /dev/shm and no worker process survives."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import textwrap
import time

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import batchenv
from batchenv import BatchPong, ShardedVectorEnv, ShardError, StepBeforeResetError
from batchenv.sharded._shm import SHM_PREFIX
from batchenv.testing import CounterEnv

#: Gymnasium's (major, minor): CI runs the suite on the newest and on the oldest supported
#: (.ci/run); where Gymnasium's own behaviour differs, tests expect each's.
GYM_VERSION = tuple(int(x) for x in gymnasium.__version__.split(".")[:2])

N = 37  # not a multiple of the worker counts: shards of unequal size
EPISODE = 40  # a short time limit, so truncations happen within the test


def chase(obs: np.ndarray) -> np.ndarray:
    """A deterministic row-wise policy over BatchPong's state observation (module level,
    so the workers can unpickle it): the action is a function of the env's own row."""
    return (np.floor(obs[:, 0] * 997 + obs[:, 1] * 613).astype(np.int64) % 3)


def chase_with_extras(obs: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    action = chase(obs)
    return action, {"twice": 2 * action, "ball": obs[:, :2].copy()}


def bad_policy(obs: np.ndarray) -> np.ndarray:
    return np.full(len(obs), 7)  # out of Discrete(3)


def our_blocks() -> set[str]:
    return set(glob.glob(f"/dev/shm/{SHM_PREFIX}{os.getpid()}_*"))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes (its parent reaps it)
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture(autouse=True)
def no_leaks():
    before = our_blocks()
    yield
    assert our_blocks() <= before, "shared memory left in /dev/shm"


def actions_for(t: int, n: int = N) -> np.ndarray:
    return np.random.default_rng(t).integers(0, 3, n)


def assert_same_step(ref: tuple, got: tuple, where: str) -> None:
    for name, x, y in zip(("obs", "reward", "terminated", "truncated"), ref[:4], got[:4]):
        assert np.array_equal(x, y), f"{where}: {name} differs"
        assert x.dtype == y.dtype and x.shape == y.shape, f"{where}: {name} dtype/shape"
    ref_info, info = ref[4], got[4]
    assert set(ref_info) == set(info), where
    if "final_obs" in ref_info:
        mask = ref_info["_final_obs"]
        assert np.array_equal(mask, info["_final_obs"]), where
        assert np.array_equal(ref_info["_final_info"], info["_final_info"]), where
        assert np.array_equal(np.stack(ref_info["final_obs"][mask]),
                              np.stack(info["final_obs"][mask])), where
        assert all(x is None for x in info["final_obs"][~mask]), where


# ---------------------------------------------------------------------- identical results
# (num_workers, local_shard): with local_shard, shard 0 is stepped in the driver, and
# num_workers=1 starts no worker process at all
LAYOUTS = [(2, False), (3, False), (1, True), (2, True), (3, True)]


@pytest.mark.parametrize("mode", list(AutoresetMode))
@pytest.mark.parametrize(("workers", "local"), LAYOUTS)
def test_same_as_unsharded(mode: AutoresetMode, workers: int, local: bool) -> None:
    """Every output of every step equals the unsharded env's, through episode ends,
    truncations, masked resets (with and without seeds) and a seed list."""
    kwargs = dict(autoreset_mode=mode, max_episode_steps=EPISODE, points_to_win=1)
    ref = BatchPong(N, **kwargs)
    env = ShardedVectorEnv(BatchPong, N, num_workers=workers, local_shard=local, **kwargs)
    try:
        assert len(env.worker_pids) == workers - local
        assert os.getpid() not in env.worker_pids
        assert env.shard_rows == [range(k * N // workers, (k + 1) * N // workers)
                                  for k in range(workers)]
        ref_obs, ref_info = ref.reset(seed=11)
        obs, info = env.reset(seed=11)
        assert np.array_equal(ref_obs, obs) and ref_info == info
        endings = 0
        for t in range(3 * EPISODE):
            if t == 50:  # a masked reset across shard boundaries, reseeding some envs
                mask = np.zeros(N, bool)
                mask[[0, 12, 13, 30, 36]] = True
                seeds = [None] * N
                seeds[12], seeds[30] = 5, 6
                ref_obs, _ = ref.reset(seed=seeds, options={"reset_mask": mask})
                obs, _ = env.reset(seed=seeds, options={"reset_mask": mask})
                assert np.array_equal(ref_obs, obs)
            if t == 70:  # a mask touching one shard only
                mask = np.zeros(N, bool)
                mask[1] = True
                assert np.array_equal(ref.reset(options={"reset_mask": mask})[0],
                                      env.reset(options={"reset_mask": mask})[0])
            if mode is AutoresetMode.DISABLED and t % 30 == 29:  # wake frozen envs
                done = ref.get_state()["awaiting_reset"]
                if done.any():
                    assert np.array_equal(ref.reset(options={"reset_mask": done})[0],
                                          env.reset(options={"reset_mask": done})[0])
            a = actions_for(t)
            ref_out = ref.step(a)
            out = env.step(a)
            assert_same_step(ref_out, out, f"step {t}")
            endings += int(ref_out[2].sum() + ref_out[3].sum())
        assert endings > 0  # the comparison covered episode ends
        assert np.array_equal(ref.get_state(), env.get_state())
    finally:
        env.close()
        ref.close()


@pytest.mark.parametrize("mode", list(AutoresetMode))
@pytest.mark.parametrize("local", [False, True])
def test_compiled_per_env_shards_equal_the_numpy_kernels(mode: AutoresetMode,
                                                         local: bool) -> None:
    """Shards running BatchPong's compiled per-env kernels (the fused step writing into
    the shards' rows of shared memory) give every output of the unsharded numpy kernels;
    a refused action (in the second shard) changes no shard."""
    kwargs = dict(autoreset_mode=mode, max_episode_steps=EPISODE, points_to_win=1)
    ref = BatchPong(N, kernels="numpy", **kwargs)
    env = ShardedVectorEnv(BatchPong, N, num_workers=2, local_shard=local, kernels="numba",
                           **kwargs)
    try:
        assert env.get_attr("kernels") == ("numba",) * N
        assert np.array_equal(ref.reset(seed=3)[0], env.reset(seed=3)[0])
        for t in range(2 * EPISODE):
            a = actions_for(t)
            assert_same_step(ref.step(a), env.step(a), f"step {t}")
        before = env.get_state()
        bad = actions_for(0)
        bad[N - 2] = 3
        with pytest.raises(ValueError, match=rf"env indices \[{N - 2}\]"):
            env.step(bad)
        assert np.array_equal(env.get_state(), before)
        assert np.array_equal(ref.get_state(), before)
    finally:
        env.close()
        ref.close()


@pytest.mark.parametrize("local", [False, True])
def test_row_i_is_a_batch_of_one_seeded_s_plus_i(local: bool) -> None:
    """Whatever num_workers, row i behaves as a 1-env batch seeded s + i."""
    env = ShardedVectorEnv(BatchPong, 6, num_workers=3, max_episode_steps=EPISODE,
                           local_shard=local)
    try:
        obs, _ = env.reset(seed=100)
        singles = [BatchPong(1, max_episode_steps=EPISODE) for _ in range(6)]
        single_obs = [s.reset(seed=100 + i)[0] for i, s in enumerate(singles)]
        assert np.array_equal(obs, np.concatenate(single_obs))
        for t in range(60):
            a = actions_for(t, 6)
            got = env.step(a)
            for i, s in enumerate(singles):
                one = s.step(a[i:i + 1])
                for x, y in zip(one[:4], got[:4]):
                    assert np.array_equal(x, y[i:i + 1]), (t, i)
    finally:
        env.close()


@pytest.mark.parametrize("local", [False, True])
def test_state_snapshots_and_render(local: bool) -> None:
    """get_state / set_state (whole batch and masked) and render against the oracle."""
    kwargs = dict(max_episode_steps=EPISODE, render_mode="rgb_array")
    ref = BatchPong(N, **kwargs)
    env = ShardedVectorEnv(BatchPong, N, num_workers=2, local_shard=local, **kwargs)
    try:
        with pytest.raises(StepBeforeResetError):
            env.step(actions_for(0))
        with pytest.raises(StepBeforeResetError):
            env.set_state(ref.get_state(), np.ones(N, bool))
        ref.reset(seed=1)
        for t in range(25):
            ref.step(actions_for(t))
        snapshot = ref.get_state()
        assert np.array_equal(env.set_state(snapshot), ref.set_state(snapshot))
        assert np.array_equal(env.get_state(), snapshot)
        frames, ref_frames = env.render(), ref.render()
        assert len(frames) == N and all(np.array_equal(x, y) for x, y in zip(frames, ref_frames))
        # a masked restore from another snapshot touches only the masked rows
        for t in range(25, 40):
            ref.step(actions_for(t))
        later = ref.get_state()
        mask = np.zeros(N, bool)
        mask[[3, 20, 21, 36]] = True
        ref.set_state(snapshot)
        expected = ref.set_state(later[mask], mask)
        assert np.array_equal(env.set_state(later[mask], mask), expected)
        assert np.array_equal(env.get_state(), ref.get_state())
        for t in range(40, 60):
            assert_same_step(ref.step(actions_for(t)), env.step(actions_for(t)), f"step {t}")
        with pytest.raises(TypeError, match="full_state_dtype"):
            env.set_state(np.zeros(N))
        with pytest.raises(ValueError, match="one per True entry"):
            env.set_state(later[:2], mask)
    finally:
        env.close()
        ref.close()


def test_actions_are_validated_with_batch_wide_indices() -> None:
    env = ShardedVectorEnv(BatchPong, N, num_workers=2)
    try:
        env.reset(seed=0)
        bad = np.zeros(N, np.int64)
        bad[30] = 5  # in shard 1, whose local index would be 12
        with pytest.raises(ValueError, match=r"\[30\]"):
            env.step(bad)
        with pytest.raises(ValueError, match="shape"):
            env.step(np.zeros(N - 1, np.int64))
        env.step(np.zeros(N, np.int64))  # still usable: nothing was sent
    finally:
        env.close()


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="num_workers"):
        ShardedVectorEnv(BatchPong, 4, num_workers=5)
    with pytest.raises(ValueError, match="num_workers"):
        ShardedVectorEnv(BatchPong, 4, num_workers=0)
    with pytest.raises(ValueError, match="backend"):
        ShardedVectorEnv(BatchPong, 4, num_workers=2, backend="threads")
    with pytest.raises(ValueError, match="fork"):
        ShardedVectorEnv(BatchPong, 4, num_workers=2, start_method="fork")
    with pytest.raises(TypeError, match="BatchEnv subclass"):
        ShardedVectorEnv(object, 4, num_workers=2)
    with pytest.raises(ValueError, match="obs_type"):  # the env's own check, in the driver
        ShardedVectorEnv(BatchPong, 4, num_workers=2, obs_type="smell")
    with pytest.raises(TypeError, match="local_shard"):
        ShardedVectorEnv(BatchPong, 4, num_workers=2, local_shard="yes")
    with pytest.raises(TypeError, match="local_shard"):
        ShardedVectorEnv(BatchPong, 4, num_workers=2, local_shard=1)
    with pytest.raises(ValueError, match="obs_type"):  # no worker left behind (no_leaks)
        ShardedVectorEnv(BatchPong, 4, num_workers=2, local_shard=True, obs_type="smell")


# ---------------------------------------------------------------------- overlap
@pytest.mark.parametrize("local", [False, True])
def test_step_async_and_double_buffering_match_unsharded(local: bool) -> None:
    """step_async/step_wait is step; in the double-buffered mode, each half sees the same
    calls as in a plain run, so a row-wise policy gives the same trajectories."""
    steps = 30
    kwargs = dict(autoreset_mode=AutoresetMode.SAME_STEP, max_episode_steps=EPISODE,
                  points_to_win=1)
    ref = BatchPong(N, **kwargs)
    obs, _ = ref.reset(seed=3)
    expected = [obs]
    for _ in range(steps):
        out = ref.step(chase(obs))
        obs = out[0]
        expected.append(out)
    env = ShardedVectorEnv(BatchPong, N, num_workers=2, local_shard=local, **kwargs)
    try:
        obs, _ = env.reset(seed=3)
        for t in range(steps):
            env.step_async(chase(obs))
            with pytest.raises(ValueError, match="step_wait"):
                env.step_async(chase(obs))
            out = env.step_wait()
            assert_same_step(expected[t + 1], out, f"step_async {t}")
            obs = out[0]

        env.async_reset(seed=3)
        with pytest.raises(ValueError, match="double-buffered"):
            env.step(chase(obs))
        seen = {0: 0, 1: 0}
        halves = []
        for _ in range(2 * (steps + 1)):
            obs, reward, terminated, truncated, info = env.recv()
            rows = info.pop("env_id")
            h = 0 if rows[0] == 0 else 1
            halves.append(h)
            t = seen[h]
            if t == 0:
                assert np.array_equal(obs, expected[0][rows])
                assert not reward.any() and not terminated.any() and not truncated.any()
            else:
                ref_out = expected[t]
                sub = (ref_out[0][rows], ref_out[1][rows], ref_out[2][rows], ref_out[3][rows],
                       _rows_info(ref_out[4], rows))
                assert_same_step(sub, (obs, reward, terminated, truncated, info),
                                 f"half {h} step {t}")
            seen[h] += 1
            env.send(chase(obs), rows)
        assert halves == [0, 1] * (steps + 1)  # strict alternation
        with pytest.raises(ValueError, match="send"):
            env.send(chase(obs))  # nothing received since
        env.reset(seed=0)  # leaves the mode, waiting for the halves in flight
        env.step(np.zeros(N, np.int64))
    finally:
        env.close()
        ref.close()


def _rows_info(info: dict, rows: np.ndarray) -> dict:
    if "_final_obs" not in info or not info["_final_obs"][rows].any():
        return {}
    return {"final_obs": info["final_obs"][rows], "_final_obs": info["_final_obs"][rows],
            "final_info": {}, "_final_info": info["_final_info"][rows]}


# ---------------------------------------------------------------------- collect
@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP])
@pytest.mark.parametrize(("workers", "local"), [(3, False), (3, True), (1, True)])
def test_collect_matches_stepping_unsharded(mode: AutoresetMode, workers: int,
                                            local: bool) -> None:
    steps = 2 * EPISODE + 5
    kwargs = dict(autoreset_mode=mode, max_episode_steps=EPISODE, points_to_win=1)
    ref = BatchPong(N, **kwargs)
    obs, _ = ref.reset(seed=9)
    cols = {k: [] for k in ("obs", "actions", "rewards", "terminated", "truncated")}
    finals = []
    for t in range(steps):
        a = chase(obs)
        cols["obs"].append(obs)
        cols["actions"].append(a)
        obs, reward, terminated, truncated, info = ref.step(a)
        cols["rewards"].append(reward)
        cols["terminated"].append(terminated)
        cols["truncated"].append(truncated)
        if "_final_obs" in info:
            for i in np.flatnonzero(info["_final_obs"]):
                finals.append(((t, i), info["final_obs"][i]))
    env = ShardedVectorEnv(BatchPong, N, num_workers=workers, local_shard=local, **kwargs)
    try:
        env.reset(seed=9)
        half = steps // 2  # two calls: the second reuses the policy held by the workers
        first = env.collect(chase_with_extras, half)
        second = env.collect(None, steps - half)
        for key, ref_col in cols.items():
            got = np.concatenate([getattr(first, key), getattr(second, key)])
            assert np.array_equal(np.stack(ref_col), got), key
        assert np.array_equal(first.extras["twice"], 2 * first.actions)
        assert np.array_equal(first.extras["ball"], first.obs[:, :, :2])
        assert np.array_equal(second.extras["twice"], 2 * second.actions)  # the held policy
        assert np.array_equal(first.next_obs, second.obs[0])
        assert np.array_equal(second.next_obs, obs)
        index = np.concatenate([first.final_index, second.final_index + [half, 0]])
        final_obs = np.concatenate([first.final_obs, second.final_obs])
        assert [tuple(x) for x in index] == [k for k, _ in finals]
        if finals:
            assert np.array_equal(final_obs, np.stack([o for _, o in finals]))
        assert (len(finals) > 0) == (mode is AutoresetMode.SAME_STEP)
        # step() continues where collect() left off
        assert_same_step(ref.step(chase(obs)), env.step(chase(obs)), "after collect")
    finally:
        env.close()
        ref.close()


# ---------------------------------------------------------------------- faults
class TroubleCounter(CounterEnv):
    """CounterEnv whose step, for the handshake's rare paths (module level: the workers
    import it): raises when an action is 4, sleeps ``nap`` seconds when one is 3, and every
    ``info_every``-th call returns an info entry (arrays over the rows, as Gymnasium's
    vector infos are), so that replies alternate between the fast path and the pipe."""

    def __init__(self, num_envs: int | None = None, *, nap: float = 0.0,
                 info_every: int = 0, **kwargs) -> None:
        super().__init__(num_envs, **kwargs)
        self.nap, self.info_every, self.calls = nap, info_every, 0

    def step(self, actions):
        a = np.asarray(actions)
        if (a == 4).any():
            raise ValueError(f"action 4 at local rows {np.flatnonzero(a == 4).tolist()}")
        if (a == 3).any():
            time.sleep(self.nap)
        obs, reward, terminated, truncated, info = super().step(actions)
        self.calls += 1
        if self.info_every and self.calls % self.info_every == 0:
            info = {**info, "doubled": 2 * np.asarray(obs), "_doubled": np.ones(len(a), bool)}
        return obs, reward, terminated, truncated, info


@pytest.mark.parametrize("how", ["SIGKILL", "SIGSEGV"])
def test_a_dead_worker_is_named_and_close_cleans_up(how: str) -> None:
    env = ShardedVectorEnv(BatchPong, N, num_workers=2)
    pids = env.worker_pids
    env.reset(seed=0)
    os.kill(pids[1], getattr(signal, how))
    with pytest.raises(ShardError, match=rf"shard 1 \(rows 18\.\.36\) died .*{how}") as err:
        env.step(actions_for(0))
    assert err.value.shard == 1 and err.value.rows == range(18, 37)
    with pytest.raises(ShardError, match="unusable"):
        env.step(actions_for(0))
    env.close()
    assert not any(alive(pid) for pid in pids)


@pytest.mark.parametrize("local", [False, True])
def test_an_exception_in_a_worker_is_named_with_its_cause(local: bool) -> None:
    """In a collect, every shard raises: the first is named, the others listed (with
    local_shard, shard 0's exception was raised in the driver itself)."""
    env = ShardedVectorEnv(BatchPong, N, num_workers=2, local_shard=local)
    try:
        env.reset(seed=0)
        with pytest.raises(ShardError, match=r"shard 0 \(rows 0\.\.17\) raised ValueError") \
                as err:
            env.collect(bad_policy, 3)
        assert isinstance(err.value.__cause__, ValueError)
        assert err.value.others == [1]  # shard 1 failed the same way
    finally:
        env.close()
    assert not any(alive(pid) for pid in env.worker_pids)


@pytest.mark.parametrize("local", [False, True])
def test_a_worker_killed_mid_step_is_named_within_the_timeout(local: bool) -> None:
    """Shard 1 sleeps inside its step (the fast path: no pipe message in flight) and is
    killed there: step_wait reports it long before the timeout, and close() cleans up.
    With local_shard, the driver steps shard 0 in step_wait, then finds shard 1 dead."""
    env = ShardedVectorEnv(TroubleCounter, 6, num_workers=2, nap=30.0, timeout=20.0,
                           local_shard=local)
    pids = env.worker_pids
    shard1 = pids[-1]  # with local_shard, worker_pids holds shard 1's only
    env.reset(seed=0)
    actions = np.array([0, 1, 2, 3, 0, 0])  # a 3 in shard 1's rows only
    env.step_async(actions)
    time.sleep(0.3)  # shard 0 has answered, shard 1 sleeps in its step
    os.kill(shard1, signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(ShardError, match=r"shard 1 \(rows 3\.\.5\) died during step "
                                         r"\(killed by signal SIGKILL\)") as err:
        env.step_wait()
    assert time.monotonic() - start < 10.0  # a bound, not a measurement (timeout 20 s)
    assert err.value.others == []
    env.close()
    assert not any(alive(pid) for pid in pids)


def test_an_exception_in_a_step_is_named_and_the_env_closes() -> None:
    """A step that raises in shard 0 (the reply goes through the pipe): ShardError names
    shard 0 and its rows, with the worker's exception as the cause; shard 1 answered."""
    env = ShardedVectorEnv(TroubleCounter, 6, num_workers=2)
    pids = env.worker_pids
    try:
        env.reset(seed=0)
        env.step(np.zeros(6, np.int64))  # the fast path works
        with pytest.raises(ShardError, match=r"shard 0 \(rows 0\.\.2\) raised ValueError: "
                                             r"action 4 at local rows \[1\]") as err:
            env.step(np.array([0, 4, 0, 0, 0, 0]))
        assert isinstance(err.value.__cause__, ValueError) and err.value.others == []
        with pytest.raises(ShardError, match="unusable"):
            env.step(np.zeros(6, np.int64))
    finally:
        env.close()
    assert not any(alive(pid) for pid in pids)


@pytest.mark.parametrize("how", ["SIGKILL", "SIGSEGV"])
def test_local_shard_a_dead_worker_is_named_and_close_cleans_up(how: str) -> None:
    """local_shard=True: the driver holds shard 0, the one worker process shard 1; killing
    it raises ShardError naming shard 1 (the driver's own step went through)."""
    env = ShardedVectorEnv(BatchPong, N, num_workers=2, local_shard=True)
    pids = env.worker_pids
    assert len(pids) == 1
    env.reset(seed=0)
    os.kill(pids[0], getattr(signal, how))
    with pytest.raises(ShardError, match=rf"shard 1 \(rows 18\.\.36\) died .*{how}") as err:
        env.step(actions_for(0))
    assert err.value.shard == 1 and err.value.rows == range(18, 37)
    assert err.value.others == []
    with pytest.raises(ShardError, match="unusable"):
        env.step(actions_for(0))
    env.close()
    assert not any(alive(pid) for pid in pids)


@pytest.mark.parametrize("workers", [1, 2])
def test_local_shard_an_exception_in_the_driver_is_a_shard_error(workers: int) -> None:
    """An exception in the env of the driver's shard 0 is a ShardError naming shard 0 and
    its rows, with the exception as the cause (the worker's step was still collected, so
    close() finds it between commands); the env is then unusable, as after a worker's."""
    env = ShardedVectorEnv(TroubleCounter, 6, num_workers=workers, local_shard=True)
    pids = env.worker_pids
    last = 6 // workers - 1
    try:
        env.reset(seed=0)
        env.step(np.zeros(6, np.int64))
        with pytest.raises(ShardError, match=rf"shard 0 \(rows 0\.\.{last}\) raised "
                                             r"ValueError: action 4 at local rows \[1\] "
                                             r"\(in the driver") as err:
            env.step(np.array([0, 4, 0, 0, 0, 0]))
        assert isinstance(err.value.__cause__, ValueError) and err.value.others == []
        with pytest.raises(ShardError, match="unusable"):
            env.step(np.zeros(6, np.int64))
        if workers == 2:  # both fail: shard 0 named, shard 1 listed
            other = ShardedVectorEnv(TroubleCounter, 6, num_workers=2, local_shard=True)
            try:
                other.reset(seed=0)
                with pytest.raises(ShardError, match=r"shard 0 .*\(in the driver") as err:
                    other.step(np.array([4, 0, 0, 4, 0, 0]))
                assert err.value.others == [1]
            finally:
                other.close()
    finally:
        env.close()
    assert not any(alive(pid) for pid in pids)


@pytest.mark.parametrize("info_every", [1, 3])
def test_step_infos_come_through_the_pipe(info_every: int) -> None:
    """An env whose step returns info entries (every step, or every third so that fast and
    pipe replies alternate): the sharded infos equal the unsharded env's, in all modes."""
    for mode in AutoresetMode:
        kwargs = dict(autoreset_mode=mode, max_count=4, max_episode_steps=6,
                      info_every=info_every)
        ref = TroubleCounter(7, **kwargs)
        env = ShardedVectorEnv(TroubleCounter, 7, num_workers=2, **kwargs)
        try:
            assert np.array_equal(env.reset(seed=0)[0], ref.reset(seed=0)[0])
            with_info = 0
            for t in range(12):
                a = np.random.default_rng(t).integers(0, 3, 7)
                ref_out, out = ref.step(a), env.step(a)
                assert_same_step(ref_out, out, f"{mode} step {t}")
                if "doubled" in ref_out[4]:
                    with_info += 1
                    assert np.array_equal(ref_out[4]["doubled"], out[4]["doubled"])
                    assert np.array_equal(ref_out[4]["_doubled"], out[4]["_doubled"])
            assert with_info == 12 // info_every
        finally:
            env.close()
            ref.close()


def test_semaphores_are_unlinked_on_close() -> None:
    """The handshake's named POSIX semaphores (/dev/shm/sem.*) go with the env."""
    env = ShardedVectorEnv(BatchPong, 4, num_workers=2)
    backend = env._backend
    names = [f"/dev/shm/sem.{sem._semlock.name.lstrip('/')}" for sem in backend.go + backend.done]
    assert len(names) == 4 and all(os.path.exists(name) for name in names)
    env.close()
    assert not any(os.path.exists(name) for name in names)


def test_a_hung_worker_times_out_and_close_returns() -> None:
    env = ShardedVectorEnv(BatchPong, N, num_workers=2, timeout=0.5)
    pids = env.worker_pids
    try:
        env.reset(seed=0)
        os.kill(pids[0], signal.SIGSTOP)
        with pytest.raises(ShardError, match=r"shard 0 \(rows 0\.\.17\) did not answer"):
            env.step(actions_for(0))
    finally:
        env.close()  # terminate() cannot stop a stopped process: close() kills it
    assert not any(alive(pid) for pid in pids)


@pytest.mark.parametrize("local", [False, True])
def test_views_kept_after_close_stay_readable(local: bool) -> None:
    """copy=False outputs are views of shared memory (with local_shard, so are the driver's
    env's buffers, which a traceback may keep): close() unlinks the blocks, and the mapping
    lives on with the views (reading one after close must not crash the driver)."""
    env = ShardedVectorEnv(BatchPong, N, num_workers=2, copy=False, local_shard=local)
    obs, _ = env.reset(seed=2)
    expected = obs.copy()
    kept = obs[3:30]  # a view of a view, across both shards
    env.close()
    del obs
    import gc

    gc.collect()
    assert np.array_equal(kept, expected[3:30])


def test_garbage_collection_frees_the_workers_and_memory() -> None:
    env = ShardedVectorEnv(BatchPong, 8, num_workers=2)
    pids = env.worker_pids
    assert our_blocks()  # the blocks exist while the env does
    del env
    import gc

    gc.collect()
    assert not any(alive(pid) for pid in pids)


_DRIVER = """
import os, signal, sys, time
import numpy as np
import batchenv

# A program started from a shell handles Ctrl-C; this one inherits its parent's handling, and
# a pytest-xdist worker of the whole suite has been seen to pass SIGINT on as ignored.
signal.signal(signal.SIGINT, signal.default_int_handler)


def slow_policy(obs):  # a rollout of 6000 steps then takes a minute at least
    time.sleep(0.01)
    return np.zeros(len(obs), np.int64)


if __name__ == "__main__":
    if sys.argv[1] == "collect":
        env = batchenv.make("batchenv/Pong-v0", 4, num_workers=2)
    else:
        env = batchenv.make("batchenv/Pong-v0", 64, num_workers=2, obs_type="pixels")
    env.reset(seed=0)
    print(" ".join(map(str, env.worker_pids)), flush=True)
    if sys.argv[1] == "collect":
        env.collect(slow_policy, 6000)
    while True:
        env.step(np.zeros(64, np.int64))
"""


@pytest.mark.parametrize("sig", ["SIGINT", "SIGKILL"])
@pytest.mark.parametrize("call", [pytest.param("step", marks=pytest.mark.slow),
                                  pytest.param("collect", marks=pytest.mark.faults)])
def test_ctrl_c_or_a_killed_driver_leaves_nothing_behind(sig: str, call: str,
                                                         tmp_path) -> None:
    """Ctrl-C (SIGINT to the process group) or SIGKILL of the driver alone, mid-loop or
    mid-rollout: the workers exit and /dev/shm holds none of the driver's blocks (after
    SIGKILL, the stdlib's resource tracker unlinks them). Issue 22 item 8: mid-rollout, the
    workers ran the rollout to its end (here: hours) before noticing."""
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(_DRIVER))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.Popen([sys.executable, str(script), call], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=root,
                            env={**os.environ, "PYTHONPATH": root}, start_new_session=True)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2
        blocks = glob.glob(f"/dev/shm/{SHM_PREFIX}{proc.pid}_*")
        assert blocks
        if call == "collect":  # wait for the rollout's last block: the rollout has begun
            # (a SIGKILL while the stdlib creates a block, before it registers it with the
            # resource tracker, would leave that block: nothing in the process can help)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not any("_traj0_flags" in b for b in blocks):
                time.sleep(0.05)
                blocks = glob.glob(f"/dev/shm/{SHM_PREFIX}{proc.pid}_*")
            assert any("_traj0_flags" in b for b in blocks)
            time.sleep(0.2)  # past the blocks' registration, into the rollout
        if sig == "SIGINT":  # as a terminal's Ctrl-C does: the whole process group
            os.killpg(proc.pid, signal.SIGINT)
        else:  # the OOM killer's way: the driver alone
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        deadline = time.monotonic() + 30  # a bound, not a measurement
        while time.monotonic() < deadline and (
                any(alive(p) for p in pids) or any(os.path.exists(b) for b in blocks)):
            time.sleep(0.05)
        assert not any(alive(p) for p in pids)
        assert not any(os.path.exists(b) for b in blocks)
    finally:
        if proc.poll() is None:
            proc.kill()


# ---------------------------------------------------------------------- make
@pytest.mark.parametrize("local", [False, True])
def test_make_passes_num_workers_and_backend(local: bool) -> None:
    env = batchenv.make("CartPole-v1", 10, num_workers=2, max_episode_steps=20,
                        local_shard=local)
    try:
        assert isinstance(env, ShardedVectorEnv) and env.num_workers == 2
        assert env.local_shard is local and len(env.worker_pids) == 2 - local
        assert "local_shard" not in env.spec.kwargs  # the spec makes the env, not the shards
        assert env.spec is not None and env.spec.id == "batchenv/CartPole-v1"
        ref = batchenv.make("CartPole-v1", 10, max_episode_steps=20)
        assert np.array_equal(ref.reset(seed=4)[0], env.reset(seed=4)[0])
        for t in range(30):
            a = np.random.default_rng(t).integers(0, 2, 10)
            assert_same_step(ref.step(a), env.step(a), f"step {t}")
    finally:
        env.close()
    with pytest.raises(ValueError, match="native"):
        batchenv.make("CartPole-v1", 4, num_workers=2, vectorization="thread")
    with pytest.raises(ValueError, match="native"):
        batchenv.make("CartPole-v1", 4, local_shard=True, vectorization="thread")


@pytest.mark.slow  # (three workers started by "spawn", each importing the package anew)
def test_counter_env_uneven_shards_keep_time_limits() -> None:
    """The Gymnasium auto-reset counter env, per-env episode lengths across shards; workers
    started by "spawn" (the default elsewhere than Linux)."""
    max_count = np.arange(1, 8)
    env = ShardedVectorEnv(CounterEnv, 7, num_workers=3, max_count=3, max_episode_steps=4,
                           start_method="spawn")
    ref = CounterEnv(7, max_count=3, max_episode_steps=4)
    try:
        assert np.array_equal(env.reset(seed=0)[0], ref.reset(seed=0)[0])
        for t in range(10):
            a = max_count % 5
            assert_same_step(ref.step(a), env.step(a), f"step {t}")
    finally:
        env.close()


# ---------------------------------------------------------------------- the PPO example
def _load_ppo():
    import importlib.util
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "docs" / "examples"
    if str(examples) not in sys.path:
        sys.path.insert(0, str(examples))
    spec = importlib.util.spec_from_file_location("example_ppo_pong_sharded",
                                                  examples / "ppo_pong.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ppo_episode_stats_match_gymnasium_wrapper() -> None:
    """The example's EpisodeStats (for collect / double-buffer, fed by halves) against
    Gymnasium's RecordEpisodeStatistics on the same run. Gymnasium < 1.4's wrapper ignores
    SAME_STEP and drops the first step of every episode after an env's first
    (docs/integrations.md): there its lengths are one short (its returns equal: a Pong
    episode's first step scores nothing)."""
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    ppo = _load_ppo()
    env = RecordEpisodeStatistics(BatchPong(8, autoreset_mode=AutoresetMode.SAME_STEP,
                                            max_episode_steps=25, points_to_win=1))
    stats = ppo.EpisodeStats(8)
    env.reset(seed=0)
    ended = np.zeros(8, dtype=np.int64)  # episodes ended so far, per env
    for t in range(80):
        _, reward, terminated, truncated, info = env.step(actions_for(t, 8))
        done = terminated | truncated
        mask = info.get("_episode", np.zeros(8, bool))
        short = (ended > 0) if GYM_VERSION < (1, 4) else np.zeros(8, bool)
        for rows in (slice(0, 3), slice(3, 8)):  # two halves, as the double buffer does
            part = stats.update(rows, reward[rows], done[rows])
            expected = np.zeros(8, bool)
            expected[rows] = mask[rows]
            assert np.array_equal(part.get("_episode", np.zeros(8, bool)), expected)
            if part:
                assert np.array_equal(info["episode"]["r"][expected],
                                      part["episode"]["r"][expected])
                assert np.array_equal(info["episode"]["l"][expected],
                                      part["episode"]["l"][expected] - short[expected])
        ended += mask
    assert ended.sum() > ended.size  # some env ended a second episode


@pytest.mark.parametrize(("rollout", "local"),
                         [pytest.param("collect", False, marks=pytest.mark.slow),
                          ("double-buffer", False), ("step", True)])
def test_ppo_example_sharded_smoke(tmp_path, rollout: str, local: bool) -> None:
    ppo = _load_ppo()  # needs the examples extra (torch, tqdm), part of `test`
    csv_path = tmp_path / "pong.csv"
    summary = ppo.main(["--workers", "2", "--rollout", rollout, "--num-envs", "16",
                        "--num-steps", "32", "--total-steps", "2048", "--num-minibatches", "2",
                        "--points-to-win", "2", "--max-episode-steps", "60",
                        "--eval-envs", "4", "--csv", str(csv_path)]
                       + (["--local-shard"] if local else []))
    assert summary["global_step"] == 2048 and summary["rollout"] == rollout
    assert summary["local_shard"] is local
    for key in ("loss", "pg_loss", "v_loss", "entropy", "approx_kl"):
        assert np.isfinite(summary[key]), key
    returns = np.genfromtxt(csv_path, delimiter=",", names=True, ndmin=1)["episode_return"]
    assert len(returns) == summary["episodes"] > 0
    assert np.all((returns >= -2) & (returns <= 2))
    assert summary["truncations"] > 0  # the time limit was hit: the bootstrap path ran


# ---------------------------------------------------------------------- SyncVectorEnv's API
@pytest.mark.parametrize("local", [False, True])
def test_sync_api_matches_unsharded(local: bool) -> None:
    """np_random_seed, call / get_attr / set_attr, an all-True first reset mask and
    SAME_STEP's final_obs entry types, against the unsharded env."""
    kwargs = dict(autoreset_mode=AutoresetMode.SAME_STEP, max_count=np.int64(2),
                  max_episode_steps=5, render_mode=None)
    ref = CounterEnv(5, **kwargs)
    env = ShardedVectorEnv(CounterEnv, 5, num_workers=2, local_shard=local, **kwargs)
    try:
        everything = {"reset_mask": np.ones(5, bool)}
        ref.reset(seed=[3, None, 4, 5, 6], options=everything)
        env.reset(seed=[3, None, 4, 5, 6], options=everything)
        assert env.np_random_seed[0] == 3 and env.np_random_seed[2:] == (4, 5, 6)
        ref.reset(seed=40)
        env.reset(seed=40)
        assert env.np_random_seed == ref.np_random_seed == (40, 41, 42, 43, 44)
        assert env.get_attr("np_random_seed") == ref.get_attr("np_random_seed")
        assert env.get_attr("num_envs") == ref.get_attr("num_envs") == (5,) * 5
        assert env.get_attr("max_episode_steps") == (5,) * 5
        assert env.call("render") == ref.call("render") == (None,) * 5
        env.set_attr("max_episode_steps", 3)
        ref.set_attr("max_episode_steps", 3)
        assert env.get_attr("max_episode_steps") == (3,) * 5  # on the shards too:
        for t in range(4):
            out, ref_out = env.step(np.ones(5, np.int64)), ref.step(np.ones(5, np.int64))
            assert_same_step(ref_out, out, f"step {t}")
            if "final_obs" in ref_out[4]:
                assert [type(x) for x in out[4]["final_obs"]] == \
                    [type(x) for x in ref_out[4]["final_obs"]]
        with pytest.raises(ValueError, match=r"env indices \[3\]"):
            env.set_attr("max_episode_steps", [3, 3, 3, 4, 3])
    finally:
        env.close()
        ref.close()


def test_a_failed_start_leaves_nothing_behind() -> None:
    """An env class the workers cannot get (a local class does not pickle): the error
    propagates and the shared memory already created is unlinked (checked by no_leaks)."""

    class Local(CounterEnv):
        pass

    with pytest.raises(Exception, match="Local"):
        ShardedVectorEnv(Local, 4, num_workers=2)


@pytest.mark.parametrize("local", [False, True])
def test_refused_set_state_changes_no_shard(local: bool) -> None:
    """Issue 22 item 4: set_state with a bad record in shard 1 is refused before any shard
    is touched (shard 0's rows unchanged), names the caller's env index (7, not the shard's
    3), and the env stays usable and equal to the unsharded one."""
    n = 8
    ref = BatchPong(n)
    env = ShardedVectorEnv(BatchPong, n, num_workers=2, local_shard=local)
    try:
        ref.reset(seed=3)
        env.reset(seed=3)
        before = env.get_state()
        field = next(f for f in env.full_state_dtype.names
                     if env.full_state_dtype[f].kind == "f")
        bad = before.copy()
        bad[field] += 1  # every row changes...
        bad[field][7] = np.nan  # ...but row 7 is refused, so nothing may change
        for mask in (None, np.ones(n, bool)):
            with pytest.raises(ValueError, match=r"env indices \[7\]"):
                env.set_state(bad, mask)
            assert np.array_equal(env.get_state(), before)
        a = np.zeros(n, np.int64)
        assert_same_step(ref.step(a), env.step(a), "after the refused set_state")
    finally:
        env.close()
        ref.close()


def _mapped_trajectory_blocks(pid: int) -> set[str]:
    """The trajectory blocks process ``pid`` maps (from /proc: deleted ones too)."""
    with open(f"/proc/{pid}/maps") as f:
        return {line.split()[5] for line in f
                if len(line.split()) > 5 and SHM_PREFIX in line and "_traj" in line}


@pytest.mark.parametrize("local", [False, True])
def test_collect_lengths_used_again_return_the_rollout(local: bool) -> None:
    """Issue 22 items 1 and 2: collect of 10, then 20, then 10 steps returns the rollout
    every time (it returned zeros from every worker shard: workers kept writing into the
    unlinked block of the first 10), and a worker maps one set of trajectory blocks, not
    one per length used."""
    n, kwargs = 8, dict(autoreset_mode=AutoresetMode.SAME_STEP, max_episode_steps=EPISODE)
    ref = BatchPong(n, **kwargs)
    env = ShardedVectorEnv(BatchPong, n, num_workers=2, local_shard=local, **kwargs)
    try:
        obs, _ = ref.reset(seed=4)
        env.reset(seed=4)
        for length in (10, 20, 10, 5, 20, 10):
            got = env.collect(chase, length)
            for t in range(length):
                a = chase(obs)
                assert np.array_equal(got.obs[t], obs), (length, t)
                assert np.array_equal(got.actions[t], a), (length, t)
                obs, reward, terminated, truncated, _ = ref.step(a)
                assert np.array_equal(got.rewards[t], reward), (length, t)
                assert np.array_equal(got.terminated[t], terminated), (length, t)
                assert np.array_equal(got.truncated[t], truncated), (length, t)
            assert np.array_equal(got.next_obs, obs)
            for pid in env.worker_pids:
                assert len(_mapped_trajectory_blocks(pid)) == 4  # obs, actions, rewards, flags
    finally:
        env.close()
        ref.close()


@pytest.mark.parametrize("env_id", batchenv.list_envs())
def test_every_registered_id_sharded_equals_unsharded(env_id: str) -> None:
    """Issue 22 item 10: make(id, n, num_workers=2) builds what make(id, n) builds: the
    id's registered kwargs kept (MinAtar-*-v1's minimal_action_set), the same spaces and
    spec, the same first steps. Per-env kernels compiled: the worker loads the loop the
    unsharded env compiled from the compile cache."""
    n = 4
    ref = batchenv.make(env_id, n)
    first = ref.reset(seed=1)[0]  # (compiled here, before the worker needs the loop)
    env = batchenv.make(env_id, n, num_workers=2, local_shard=True)
    try:
        assert env.single_action_space == ref.single_action_space
        assert env.single_observation_space == ref.single_observation_space
        assert env.spec == ref.spec
        assert np.array_equal(first, env.reset(seed=1)[0])
        ref.action_space.seed(2)
        for t in range(3):
            a = ref.action_space.sample()
            assert_same_step(ref.step(a), env.step(a), f"{env_id} step {t}")
    finally:
        env.close()
        ref.close()


def test_an_authors_registered_id_is_sharded_with_its_kwargs() -> None:
    """Issue 22 item 9: an id registered with gymnasium.register(..., vector_entry_point=)
    is sharded by make(..., num_workers=2) and by ShardedVectorEnv(id, ...), keeping the
    id's kwargs and max_episode_steps, with the same results as unsharded."""
    import gymnasium as gym

    gym.register("you/Counter-v0", vector_entry_point=CounterEnv, max_episode_steps=4,
                 kwargs={"max_count": 3})
    try:
        ref = batchenv.make("you/Counter-v0", 5)
        assert type(ref) is CounterEnv and ref.max_episode_steps == 4
        for env in (batchenv.make("you/Counter-v0", 5, num_workers=2),
                    ShardedVectorEnv("you/Counter-v0", 5, num_workers=2)):
            try:
                assert env.max_episode_steps == 4
                assert np.array_equal(ref.reset(seed=0)[0], env.reset(seed=0)[0])
                for t in range(6):  # through max_count's terminations
                    a = np.full(5, t % 2)
                    assert_same_step(ref.step(a), env.step(a), f"step {t}")
            finally:
                env.close()
        with pytest.raises(ValueError, match="not one"):
            batchenv.make("CartPole-v1", 2, num_workers=2, vectorization="thread")
    finally:
        gym.registry.pop("you/Counter-v0")
        ref.close()


@pytest.mark.parametrize("local", [False, True])
def test_an_attribute_typo_leaves_the_env_usable(local: bool) -> None:
    """Issue 22 item 6: get_attr/call of a missing name raise AttributeError, as the
    unsharded env does, and the env carries on (it was unusable, every env's state lost);
    set_attr of a new name makes it readable."""
    ref = BatchPong(6)
    env = ShardedVectorEnv(BatchPong, 6, num_workers=2, local_shard=local)
    try:
        ref.reset(seed=5)
        env.reset(seed=5)
        for bad in (lambda e: e.get_attr("paddle_sped"), lambda e: e.call("rset")):
            with pytest.raises(AttributeError):
                bad(ref)
            with pytest.raises(AttributeError):
                bad(env)
        a = np.ones(6, np.int64)
        assert_same_step(ref.step(a), env.step(a), "after the typo")
        env.set_attr("note", 3)
        assert env.get_attr("note") == (3,) * 6
    finally:
        env.close()
        ref.close()


def test_two_threads_calling_one_env_get_a_clear_error() -> None:
    """Issue 22 item 3: while one thread's step waits for the workers, another thread's
    step raises RuntimeError (it mixed rows of two steps, silently) and changes nothing;
    the first step's results are the unsharded env's."""
    import threading

    ref = BatchPong(6)
    env = ShardedVectorEnv(BatchPong, 6, num_workers=2)
    try:
        ref.reset(seed=8)
        env.reset(seed=8)
        inside, release = threading.Event(), threading.Event()
        real_finish = env._backend.finish

        def held_finish(*args, **kwargs):  # the first thread waits here, inside its step
            inside.set()
            assert release.wait(30)
            return real_finish(*args, **kwargs)

        env._backend.finish = held_finish
        a = np.full(6, 2)
        results = []
        first = threading.Thread(target=lambda: results.append(env.step(a)))
        first.start()
        assert inside.wait(30)
        for other in (lambda: env.step(np.zeros(6, np.int64)), env.get_state,
                      lambda: env.reset(seed=0)):
            with pytest.raises(RuntimeError, match="another thread"):
                other()
        release.set()
        first.join(30)
        env._backend.finish = real_finish
        assert_same_step(ref.step(a), results[0], "the first thread's step")
        assert np.array_equal(ref.get_state(), env.get_state())
    finally:
        env.close()
        ref.close()


def test_pickling_is_refused_with_a_reason() -> None:
    """Issue 22 item 8: pickling said "Can't pickle local object '_discrete_checker...'"."""
    import pickle

    env = ShardedVectorEnv(BatchPong, 2, num_workers=1, local_shard=True)
    try:
        with pytest.raises(TypeError, match="cannot be pickled: it owns worker processes"):
            pickle.dumps(env)
    finally:
        env.close()


_FORKING = """
import os, sys
import numpy as np
from batchenv import BatchPong, ShardedVectorEnv

if __name__ == "__main__":
    env = ShardedVectorEnv(BatchPong, 4, num_workers=2)
    env.reset(seed=0)
    child = os.fork()
    if child == 0:  # the child uses the inherited object a little, then exits normally
        env.num_envs
        sys.exit(0)  # runs the finalizers at exit
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    env.step(np.zeros(4, np.int64))  # the parent's workers are alive and serving
    env.close()
    print("parent ok")
"""


@pytest.mark.slow  # (a new interpreter, forking with workers running)
def test_a_forked_child_exiting_leaves_the_parents_workers_alone(tmp_path) -> None:
    """Issue 22 item 5: a child made by os.fork() that exits normally used to stop the
    parent's workers (ShardError ... SIGTERM in the parent) and print an AssertionError."""
    script = tmp_path / "forking.py"
    script.write_text(textwrap.dedent(_FORKING))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", str(script)],
                          capture_output=True, text=True, cwd=root, timeout=120,
                          env={**os.environ, "PYTHONPATH": root})
    assert done.returncode == 0, done.stderr
    assert "parent ok" in done.stdout
    assert "Error" not in done.stderr, done.stderr


class Watchdog(Exception):
    """What a caller's alarm handler raises (a watchdog on a step that takes too long)."""


def _raise_watchdog(signum, frame):
    raise Watchdog


@pytest.mark.faults
@pytest.mark.parametrize("local", [False, True])
def test_an_interrupt_names_no_shard_and_the_env_says_why_it_is_unusable(local: bool) -> None:
    """Issue 22 item 8: an exception raised in the driver while it waits (an alarm, a
    Ctrl-C) propagates; later calls say the call was interrupted, without naming shard 0
    as if it had failed; close() cleans up."""
    env = ShardedVectorEnv(TroubleCounter, 4, num_workers=2, local_shard=local, nap=5.0)
    old = signal.signal(signal.SIGALRM, _raise_watchdog)
    try:
        env.reset(seed=0)
        actions = np.array([0, 0, 0, 3])  # shard 1 naps: the driver waits for it
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(Watchdog):
            env.step(actions)
        with pytest.raises(RuntimeError, match="interrupted") as info:
            env.step(np.zeros(4, np.int64))
        assert "shard" not in str(info.value) and not isinstance(info.value, ShardError)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        env.close()


@pytest.mark.faults
def test_a_killed_worker_is_named_while_another_shard_is_still_busy() -> None:
    """Issue 22 item 8: a killed worker was reported only after the slowest other shard
    answered (here shard 0 naps for an hour: it was reported as not answering within the
    timeout, the dead shard 1 only among the others)."""
    env = ShardedVectorEnv(TroubleCounter, 4, num_workers=2, nap=3600.0, timeout=60)
    try:
        env.reset(seed=0)
        env.step_async(np.array([3, 0, 0, 0]))  # shard 0 naps
        os.kill(env.worker_pids[1], signal.SIGKILL)
        with pytest.raises(ShardError, match=r"killed by signal SIGKILL") as err:
            env.step_wait()
        assert err.value.shard == 1 and err.value.rows == range(2, 4)
    finally:
        env.close()


class _FakeRay:
    """What check_placeable reads of Ray (ray.nodes, cluster_resources, available_resources):
    two nodes of 3 CPUs, one with a custom resource."""

    def __init__(self, free_cpus: float = 6.0) -> None:
        self.free_cpus = free_cpus

    def nodes(self):
        return [{"Alive": True, "Resources": {"CPU": 3.0, "board": 1.0}},
                {"Alive": True, "Resources": {"CPU": 3.0}},
                {"Alive": False, "Resources": {"CPU": 64.0}}]  # a dead node places nothing

    def cluster_resources(self):
        return {"CPU": 6.0, "board": 1.0}

    def available_resources(self):
        return {"CPU": self.free_cpus, "board": 1.0}


def test_ray_actors_the_nodes_cannot_hold_are_refused_before_any_is_made(monkeypatch):
    """Each actor on one node: two CPUs each fit once per 3-CPU node (room for 2, though the
    cluster has 6 CPUs in all); a custom resource on one node only, once."""
    from batchenv.sharded import _ray

    monkeypatch.setattr(_ray, "FREE_WAIT", 0.2)
    fake = _FakeRay()
    _ray.check_placeable(fake, {"num_cpus": 2}, 2, 0)  # fits: nothing raised
    with pytest.raises(ValueError, match=r"^num_workers=3 Ray actors, each asking for 2 CPU "
                       r"\(ray_options\): the Ray cluster has room for 2 \(its 2 node\(s\) "
                       r"hold 6 CPU in all\); use num_workers <= 2"):
        _ray.check_placeable(fake, {"num_cpus": 2}, 3, 0)
    with pytest.raises(ValueError, match=r"1 CPU, 1 board .*room for 1 .*num_workers <= 2"):
        _ray.check_placeable(fake, {"resources": {"board": 1}}, 2, 1)
    _ray.check_placeable(fake, {"num_cpus": 0}, 100, 0)  # asks for nothing: no bound
    with pytest.raises(ValueError, match=r"room for 6 but only 1 free \(1.5 CPU free"):
        _ray.check_placeable(_FakeRay(free_cpus=1.5), {}, 2, 0)


def test_closing_a_sharded_env_whose_constructor_raised_is_quiet() -> None:
    """Gymnasium 1.1's VectorEnv.__del__ closes an object whose __init__ raised (bad
    arguments, before any worker): close() then has no workers to stop and must not raise."""
    half_made = ShardedVectorEnv.__new__(ShardedVectorEnv)
    half_made.close()
    assert half_made.closed
