"""ShardedVectorEnv, Ray backend, against the unsharded env: on a local Ray instance
(``ray.init(num_cpus=2)``) and on a simulated two-node cluster (``ray.cluster_utils``), one
instance per test class (Ray takes seconds to start: the tests are few)."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import ray  # the `ray` extra (in `test`): pip install batchenv[ray]
from gymnasium.vector import AutoresetMode

from batchenv import BatchPong, ShardedVectorEnv, ShardError

# Ray takes seconds to start per instance, and these are fault suites: marked slow (CI runs
# them in its `-m slow` pass); under pytest-xdist they stay on one worker (one Ray at a time).
pytestmark = pytest.mark.slow

N = 21
EPISODE = 30


def assert_same(ref: tuple, got: tuple, where: str) -> None:
    for x, y in zip(ref[:4], got[:4]):
        assert np.array_equal(x, y) and x.dtype == y.dtype, where
    assert set(ref[4]) == set(got[4]), where
    if "_final_obs" in ref[4]:
        mask = ref[4]["_final_obs"]
        assert np.array_equal(mask, got[4]["_final_obs"]), where
        assert np.array_equal(np.stack(ref[4]["final_obs"][mask]),
                              np.stack(got[4]["final_obs"][mask])), where


def check_same_as_unsharded(mode: AutoresetMode, store: bool = False, local: bool = False,
                            **ray_options) -> tuple[list[str], list[bool]]:
    """Steps, a masked reset, a state round trip and three collects (of 60, 5 and 60 steps:
    the trajectory buffers reused, then remade) against the unsharded env; ``store``: every
    actor returns its trajectories through the object store, as from another node;
    ``local``: shard 0 in the driver (``local_shard``), shard 1 an actor. Returns the
    actors' node ids and which of their shards wrote into the driver's shared memory."""
    kwargs = dict(autoreset_mode=mode, max_episode_steps=EPISODE, points_to_win=1)
    ref = BatchPong(N, **kwargs)
    env = ShardedVectorEnv(BatchPong, N, num_workers=2, backend="ray",
                           ray_options=ray_options, local_shard=local, **kwargs)
    try:
        backend = env._backend.remote if local else env._backend
        nodes = ray.get([a.node_id.remote() for a in backend.actors])
        if store:
            backend.same_node = [False] * len(backend.actors)
        shared = list(backend.same_node)
        assert np.array_equal(ref.reset(seed=7)[0], env.reset(seed=7)[0])
        endings = 0
        for t in range(2 * EPISODE):
            if t == 20:
                mask = np.zeros(N, bool)
                mask[[2, 15]] = True
                assert np.array_equal(ref.reset(seed=[1] * N, options={"reset_mask": mask})[0],
                                      env.reset(seed=[1] * N, options={"reset_mask": mask})[0])
            a = np.random.default_rng(t).integers(0, 3, N)
            out = ref.step(a)
            assert_same(out, env.step(a), f"step {t}")
            endings += int(out[2].sum() + out[3].sum())
        assert endings
        snapshot = ref.get_state()
        assert np.array_equal(env.get_state(), snapshot)
        obs = ref.set_state(snapshot)
        # collect: a policy the actors hold (a lambda: Ray pickles closures)
        policy = lambda obs: (obs[:, 1] > obs[:, 4]).astype(np.int64) + 1  # noqa: E731
        for i, steps in enumerate((2 * EPISODE, 5, 2 * EPISODE)):
            traj = env.collect(policy if i == 0 else None, steps)
            finals = 0
            for t in range(steps):
                assert np.array_equal(traj.obs[t], obs), (i, t)
                out = ref.step(policy(obs))
                assert np.array_equal(traj.actions[t], policy(obs)), (i, t)
                assert_same(out, (traj.obs[t + 1] if t + 1 < steps else traj.next_obs,
                                  traj.rewards[t], traj.terminated[t], traj.truncated[t],
                                  out[4]), f"collect {i} step {t}")
                if "_final_obs" in out[4]:
                    rows = np.flatnonzero(out[4]["_final_obs"])
                    picked = traj.final_index[:, 0] == t
                    assert np.array_equal(traj.final_index[picked, 1], rows)
                    assert np.array_equal(traj.final_obs[picked],
                                          np.stack(out[4]["final_obs"][rows]))
                    finals += len(rows)
                obs = out[0]
            assert len(traj.final_index) == finals
        return nodes, shared
    finally:
        env.close()
        ref.close()


def shm_blocks() -> set[str]:
    return {name for name in os.listdir("/dev/shm") if name.startswith(f"batchenv_{os.getpid()}_")}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def check_killed_actor() -> None:
    env = ShardedVectorEnv(BatchPong, N, num_workers=2, backend="ray", timeout=60)
    pids = env.worker_pids
    env.reset(seed=0)
    os.kill(pids[0], signal.SIGKILL)
    with pytest.raises(ShardError, match=r"shard 0 \(rows 0\.\.9\) died"):
        env.step(np.zeros(N, np.int64))
    env.close()
    deadline = time.monotonic() + 30  # a bound for Ray to reap the actor, not a timing
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    assert not any(alive(p) for p in pids)


def _all_cpus_free(timeout: float = 60.0) -> float:
    """The cluster's CPUs (2), once none is held: Ray reports a fresh instance's resources,
    and releases a closed env's actors' CPUs, a moment later (``available_resources``
    leaves out a resource with none free). A CPU still held after ``timeout`` is an actor
    some test left alive."""
    deadline = time.monotonic() + timeout
    while ray.available_resources().get("CPU", 0.0) < 2:
        assert time.monotonic() < deadline, (
            f"CPU free {ray.available_resources().get('CPU', 0.0)} of "
            f"{ray.cluster_resources().get('CPU', 0.0)} after {timeout} s: an actor some "
            f"test left alive holds the rest")
        time.sleep(0.2)
    return ray.available_resources()["CPU"]


class TestLocalRay:
    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def local_ray(cls):
        if ray.is_initialized():  # a Ray instance another test (or a docs example) left running
            ray.shutdown()
        # address="local": a new instance, never a cluster some other process left running
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        yield
        ray.shutdown()

    @pytest.mark.faults
    def test_an_alarm_handlers_exception_is_not_swallowed(self) -> None:
        """Issue 22 item 7: RayBackend.finish caught every Exception, so an exception a
        signal handler raised (a watchdog's alarm) was swallowed and the wait went on."""
        env = ShardedVectorEnv(BatchPong, 4, num_workers=2, backend="ray")

        class Watchdog(Exception):
            pass

        def bark(signum, frame):
            raise Watchdog

        old = signal.signal(signal.SIGALRM, bark)
        try:
            env.reset(seed=0)
            backend = env._backend
            def nap(seconds: float) -> None:  # a local function: Ray pickles it by value
                time.sleep(seconds)

            slow = ray.remote(num_cpus=0)(nap)
            for k in range(2):  # calls still running, as a slow rollout's
                backend._pending[k] = slow.remote(20)
            signal.setitimer(signal.ITIMER_REAL, 0.5)
            with pytest.raises(Exception) as info:  # noqa: B017  (checked below)
                backend.finish(range(2), what="collect", timeout=60)
            # Ray's compiled ray.get may wrap it (SystemError, with it as the context)
            chain = [info.value, info.value.__context__, info.value.__cause__]
            assert any(isinstance(e, Watchdog) for e in chain), repr(info.value)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
            env.close()

    def test_more_workers_than_the_cluster_can_place_are_refused(self, monkeypatch) -> None:
        """Issue 36: three actors on two CPUs waited five minutes for room, then failed with
        Ray's own error; now a ValueError naming num_workers, the ask and the cluster's
        room, before any actor is made."""
        cpus = _all_cpus_free()
        with pytest.raises(ValueError, match=r"num_workers=3 Ray actors, each asking for 1 "
                           r"CPU .*room for 2 .*2 CPU in all.*num_workers <= 2"):
            ShardedVectorEnv(BatchPong, N, num_workers=3, backend="ray")
        with pytest.raises(ValueError, match=r"num_workers=2 Ray actors, each asking for "
                           r"1\.5 CPU .*room for 1 "):
            ShardedVectorEnv(BatchPong, N, num_workers=2, backend="ray",
                             ray_options={"num_cpus": 1.5})
        with pytest.raises(ValueError, match=r"1 GPU .*room for 0 "):
            ShardedVectorEnv(BatchPong, N, num_workers=2, backend="ray",
                             ray_options={"num_gpus": 1})
        with pytest.raises(ValueError, match=r"num_workers=4 with local_shard \(3 Ray "
                           r"actors\).*num_workers <= 3"):
            ShardedVectorEnv(BatchPong, N, num_workers=4, backend="ray", local_shard=True)
        assert ray.available_resources().get("CPU", 0.0) == cpus  # no actor was made
        # room in all, but held by another env's actors: refused once FREE_WAIT has passed
        import batchenv.sharded._ray as ray_backend

        monkeypatch.setattr(ray_backend, "FREE_WAIT", 0.5)
        holder = ShardedVectorEnv(BatchPong, 4, num_workers=2, backend="ray")
        try:
            with pytest.raises(ValueError, match=r"room for 2 but only 0 free .*other actors"):
                ShardedVectorEnv(BatchPong, 4, num_workers=1, backend="ray")
        finally:
            holder.close()

    @pytest.mark.parametrize("store", [False, True], ids=["shared-memory", "object-store"])
    def test_same_as_unsharded(self, store: bool) -> None:
        before = shm_blocks()
        _nodes, shared = check_same_as_unsharded(AutoresetMode.NEXT_STEP, store=store)
        assert shared == [not store, not store]  # both actors are on the driver's node
        assert shm_blocks() == before  # close() unlinked the trajectory blocks

    @pytest.mark.parametrize("store", [False, True], ids=["shared-memory", "object-store"])
    def test_same_as_unsharded_with_local_shard(self, store: bool) -> None:
        """Shard 0 in the driver, shard 1 an actor whose collect writes into the same
        trajectory arrays (shared memory) or is copied into them (object store)."""
        _nodes, shared = check_same_as_unsharded(AutoresetMode.SAME_STEP, store=store,
                                                 local=True)
        assert shared == [not store]

    def test_a_killed_actor_leaves_the_drivers_blocks_to_the_driver(self) -> None:
        """Shared memory has one owner: an actor that mapped the driver's trajectory blocks
        unlinks none of them when it dies (attaching with SharedMemory registered them with
        the actor's resource tracker, which unlinks at exit unless told otherwise through a
        private API); close() unlinks them all."""
        before = shm_blocks()
        env = ShardedVectorEnv(BatchPong, N, num_workers=2, backend="ray", timeout=60)
        try:
            env.reset(seed=0)
            env.collect(lambda obs: np.zeros(len(obs), np.int64), 5)  # by value
            ours = shm_blocks() - before
            assert sum("_traj" in name for name in ours) == 4  # obs, actions, rewards, flags
            pid = env.worker_pids[0]
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 30  # a bound for Ray to reap it, not a timing
            while time.monotonic() < deadline and alive(pid):
                time.sleep(0.1)
            time.sleep(1.0)  # what a tracker of the actor's would take to unlink
            assert shm_blocks() - before == ours
        finally:
            env.close()
        assert shm_blocks() == before

    def test_refused_calls_change_nothing_and_leave_the_env_usable(self) -> None:
        """Issue 22 items 4 and 6 on Ray actors (the driver's own checks, as with worker
        processes): a set_state with one bad record in shard 1 is refused naming the
        caller's env index, and no shard changes; get_attr/call typos raise
        AttributeError; the env then steps as the unsharded one."""
        ref = BatchPong(N)
        env = ShardedVectorEnv(BatchPong, N, num_workers=2, backend="ray")
        try:
            ref.reset(seed=3)
            env.reset(seed=3)
            before = env.get_state()
            field = next(f for f in env.full_state_dtype.names
                         if env.full_state_dtype[f].kind == "f")
            bad = before.copy()
            bad[field] += 1  # every row changes, but row 17 (shard 1) is refused
            bad[field][17] = np.nan
            with pytest.raises(ValueError, match=r"env indices \[17\]"):
                env.set_state(bad)
            assert np.array_equal(env.get_state(), before)
            with pytest.raises(AttributeError):
                env.get_attr("paddle_sped")
            with pytest.raises(AttributeError):
                env.call("rset")
            a = np.ones(N, np.int64)
            assert_same(ref.step(a), env.step(a), "after the refused calls")
        finally:
            env.close()
            ref.close()

    def test_double_buffered_halves_alternate(self) -> None:
        env = ShardedVectorEnv(BatchPong, N, num_workers=2, backend="ray")
        ref = BatchPong(N)
        try:
            env.async_reset(seed=5)
            obs = ref.reset(seed=5)[0]
            actions = np.zeros(N, np.int64)
            for t in range(6):
                for h, rows in enumerate((range(0, 10), range(10, N))):
                    got = env.recv()
                    assert np.array_equal(got[4]["env_id"], np.array(rows))
                    assert np.array_equal(got[0], obs[rows.start:rows.stop]), (t, h)
                    env.send(actions[rows.start:rows.stop])
                obs = ref.step(actions)[0]
        finally:
            env.close()


class TestTwoNodeCluster:
    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def cluster(cls):
        from ray.cluster_utils import Cluster

        if ray.is_initialized():
            ray.shutdown()

        cluster = Cluster(initialize_head=True,
                          head_node_args={"num_cpus": 1, "include_dashboard": False})
        cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address, log_to_driver=False)
        yield cluster
        ray.shutdown()
        cluster.shutdown()

    def test_same_as_unsharded_across_nodes(self) -> None:
        nodes, shared = check_same_as_unsharded(AutoresetMode.SAME_STEP, num_cpus=1)
        assert len(set(nodes)) == 2  # one CPU per node: one actor on each
        # the actor on the driver's (head) node writes into shared memory; the other's
        # trajectories come through the object store, though both "nodes" share /dev/shm
        assert shared == [node == ray.get_runtime_context().get_node_id() for node in nodes]
        assert sorted(shared) == [False, True]

    def test_a_killed_actor_is_named(self) -> None:
        check_killed_actor()


_RAY_DRIVER = """
import time
import numpy as np
import ray
import batchenv

if __name__ == "__main__":
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    env = batchenv.make("batchenv/Pong-v0", 4, num_workers=2, backend="ray")
    env.reset(seed=0)
    env.collect(lambda obs: np.zeros(len(obs), np.int64), 5)  # into shared memory
    print("ready", flush=True)
    time.sleep(600)
"""


@pytest.mark.faults
def test_a_killed_driver_leaves_no_blocks(tmp_path) -> None:
    """SIGKILL of a Ray driver whose actors write into its shared memory: the driver's
    resource tracker (with which creating the blocks registered them) unlinks them; the
    actors, which only mapped them, have nothing to do with it."""
    script = tmp_path / "ray_driver.py"
    script.write_text(textwrap.dedent(_RAY_DRIVER))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=root,
                            env={**os.environ, "PYTHONPATH": root}, start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        blocks = glob.glob(f"/dev/shm/batchenv_{proc.pid}_*")
        assert sum("_traj" in b for b in blocks) == 4
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        deadline = time.monotonic() + 30  # a bound, not a measurement
        while time.monotonic() < deadline and any(os.path.exists(b) for b in blocks):
            time.sleep(0.1)
        assert not any(os.path.exists(b) for b in blocks)
    finally:
        try:  # Ray's own processes, started by the killed driver in its session
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
