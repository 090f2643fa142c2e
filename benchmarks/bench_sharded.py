"""Sharded batches against one process, as ratios measured side by side in one run.

    python benchmarks/bench_sharded.py               # all cases; exits 1 if a target is missed
    python benchmarks/bench_sharded.py --no-targets  # just print
    python benchmarks/bench_sharded.py --only process --rounds 7
    python benchmarks/bench_sharded.py --only cluster  # simulated two-node Ray cluster
    python benchmarks/bench_sharded.py --only share --ref 36ac6c9  # the ceiling share table
    python benchmarks/bench_sharded.py --only options  # local_shard and the double buffer A/B

Cases (BatchPong against the CPU paddle, ``copy=False`` everywhere, as a trainer runs it):

* the ceiling: two independent processes (no communication) of 32,768 envs against one of
  65,536 — what the machine allows right now; every sharded ratio is bounded by it.
* process backend, 2 shards vs one process: state obs at 65,536 envs and 84x84 pixels at
  4,096 envs (target: >= 1.6x env-steps/s each), as 2 worker processes ("process ...")
  and as the driver stepping shard 0 itself plus 1 worker process (``local_shard=True``,
  "process+local ..."), the three contenders timed in the same rounds; the per-step
  overhead of sharding at 64 envs (µs per step, sharded minus unsharded), for both.
* process backend, ``collect`` as below (no target: the same rollout with one message per
  worker per rollout instead of one per step).
* ray backend, 2 actors: ``collect`` of 128 steps at 2 x 32,768 envs with a scripted policy
  held by the actors, vs one process stepping 65,536 envs 128 times with the same policy
  (target: >= 1.5x); both actors are on the driver's node, so they write the trajectories
  into its shared memory. The same through the object store (no target: what an actor on
  another node costs, the 352 MB per call serialized into Ray's object store and copied
  into the driver's arrays). For both, the CPU time per call of the driver, of each actor
  and of Ray's daemons (raylet, GCS, agents; from /proc, Linux), which unlike wall time
  does not depend much on what else runs. The per-call overhead of a plain sharded
  ``step`` at 64 envs. Ray is started for a small machine (``RAY_ENV``, ``RAY_INIT``): no
  dashboard, actors at nice 0 instead of Ray's 15, and a 1 GB object store whose memory is
  touched once at start (otherwise each 176 MB result pays its page faults again, ~140 ms
  of CPU per actor per call here).

``--only share`` (issue 22's table, ~1 min): 2 workers and ``local_shard`` (driver + 1
worker) against one process at BatchPong 65,536 state and 4,096 pixel envs, next to this
machine's ceiling measured in the same rounds: two processes each running half of a pure
Python compute loop against one process running all of it (no memory traffic, no
communication: what two cores give right now). Each ratio divided by its round's ceiling
is the share of the ceiling reached. With ``--ref COMMIT`` (repeatable) the same runs for
that revision (extracted with ``git archive``) alternate with this checkout's in the same run: each
measurement is a fresh process whose ``PYTHONPATH`` holds one tree (workers import
``batchenv`` by name), the order reversed on every other run (new, old, old, new, ...).

``--only options``: whether ``local_shard`` and the double buffer pay, each against the
plain form in the same rounds: 2 workers vs ``local_shard`` for ``step``; a loop of
``policy + step`` vs the double-buffered ``recv / policy / send`` loop over the two halves
(2 workers, then ``local_shard``), with a linear policy over the state or a subsampled
frame, so that there is work to overlap (of the order of a step).

Each round times every contender once (interleaved), and the ratio of each round's pair is
taken; the median over rounds is printed with the range. The figures depend on what else
runs on the machine: say so when you quote them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from batchenv import BatchPong, ShardedVectorEnv  # noqa: E402

TARGETS = {"process state 65536": 1.6, "process pixels 4096": 1.6,
           "process+local state 65536": 1.6, "process+local pixels 4096": 1.6,
           "ray collect 2x32768": 1.5}

# Ray for a small machine, set before it starts: its workers at the driver's priority (Ray
# starts them at nice 15, so that on a shared machine the actors lose every core to other
# work while the one process they are compared with does not), and the object store's
# memory touched once at start, not once per result (each 176 MB result otherwise pays its
# page faults again). The --ray-defaults flag leaves both as Ray has them.
RAY_ENV = {"RAY_worker_niceness": "0", "RAY_preallocate_plasma_memory": "1"}
RAY_INIT = {"num_cpus": 2, "include_dashboard": False, "log_to_driver": False,
            "object_store_memory": 1 << 30}


def chase(obs: np.ndarray) -> np.ndarray:
    """A scripted policy over the state observation: move toward the ball (one cheap
    vectorized rule, so that the env dominates the time)."""
    return np.where(obs[:, 1] < obs[:, 4], 1, 2)


def block_time(fn: Callable[[], None], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def stepper(env, num_envs: int) -> Callable[[], None]:
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 3, num_envs) for _ in range(8)]
    counter = iter(range(1 << 62))

    def step() -> None:
        env.step(actions[next(counter) & 7])

    return step


def compare(name: str, make_a: Callable, make_b: Callable, calls: int, rounds: int,
            results: dict) -> None:
    """Seconds per call of two contenders, interleaved over ``rounds``; prints b/a."""
    compare_many(make_a, {name: make_b}, calls, rounds, results)


def compare_many(make_a: Callable, others: dict[str, Callable], calls: int, rounds: int,
                 results: dict) -> None:
    """``make_a`` against each of ``others`` (name: maker), all timed once per round
    (interleaved), each ratio taken against ``make_a``'s time of the same round."""
    envs, fns = [], []
    try:
        for make in (make_a, *others.values()):
            env, fn = make()
            envs.append(env)
            fns.append(fn)
        for fn in fns:  # warm up
            fn()
        times: list[list[float]] = [[] for _ in fns]
        for _ in range(rounds):
            for i, fn in enumerate(fns):
                times[i].append(block_time(fn, calls))
    finally:
        for env in envs:
            env.close()
    for i, name in enumerate(others, 1):
        ratios = [ta / tb for ta, tb in zip(times[0], times[i])]
        results[name] = (statistics.median(ratios), min(ratios), max(ratios),
                         statistics.median(times[0]), statistics.median(times[i]))


def _independent(num_envs: int, calls: int, kwargs: dict, queue) -> None:
    env = BatchPong(num_envs, copy=False, **kwargs)
    env.reset(seed=0)
    step = stepper(env, num_envs)
    step()
    queue.put(block_time(step, calls))


def ceiling_case(rounds: int, results: dict) -> None:
    """What two processes can do on this machine right now, with no communication at all:
    two independent BatchPong(32768) processes against one BatchPong(65536). The sharded
    ratios are bounded by this one; on a loaded machine it falls toward 1x or below."""
    import multiprocessing as mp

    ctx = mp.get_context("forkserver")
    ratios, times_one, times_two = [], [], []
    env = BatchPong(65536, copy=False)
    env.reset(seed=0)
    step = stepper(env, 65536)
    for _ in range(rounds):
        t_one = block_time(step, 20)
        queue = ctx.Queue()
        procs = [ctx.Process(target=_independent, args=(32768, 20, {}, queue))
                 for _ in range(2)]
        for proc in procs:
            proc.start()
        t_two = max(queue.get() for _ in procs)
        for proc in procs:
            proc.join()
        ratios.append(t_one / t_two)
        times_one.append(t_one)
        times_two.append(t_two)
    env.close()
    results["ceiling state 65536"] = (statistics.median(ratios), min(ratios), max(ratios),
                                      statistics.median(times_one),
                                      statistics.median(times_two))


def process_cases(rounds: int, results: dict) -> None:
    ceiling_case(rounds, results)
    for what, n, kwargs, calls in (("state 65536", 65536, {}, 20),
                                   ("pixels 4096", 4096, {"obs_type": "pixels"}, 5),
                                   ("overhead 64", 64, {}, 300)):
        def one(n=n, kwargs=kwargs):
            env = BatchPong(n, copy=False, **kwargs)
            env.reset(seed=0)
            return env, stepper(env, n)

        def sharded(n=n, kwargs=kwargs, local=False):
            env = ShardedVectorEnv(BatchPong, n, num_workers=2, copy=False,
                                   local_shard=local, **kwargs)
            env.reset(seed=0)
            return env, stepper(env, n)

        compare_many(one, {f"process {what}": sharded,
                           f"process+local {what}": lambda s=sharded: s(local=True)},
                     calls, rounds, results)
    # no target: what the process backend gives when a call carries a whole rollout
    collect_case("process collect 2x32768", "process", rounds, results)


def collect_case(name: str, backend: str, rounds: int, results: dict,
                 store: bool = False) -> None:
    """``collect`` of 128 steps at 2 x 32,768 envs against one process doing the same
    (stepping 65,536 envs 128 times with the same policy and recording the trajectories).
    ``store`` (Ray): every actor returns its trajectories through the object store, as an
    actor on another node does."""
    n, steps = 65536, 128

    def one():
        env = BatchPong(n, copy=False)
        obs = [env.reset(seed=0)[0]]
        space = env.single_observation_space

        # preallocated once, as the sharded env's (copy=False) trajectory arrays are
        out = {"obs": np.empty((steps, n, *space.shape), space.dtype),
               "actions": np.empty((steps, n), np.int64), "rewards": np.empty((steps, n)),
               "terminated": np.empty((steps, n), bool), "truncated": np.empty((steps, n), bool)}

        def rollout() -> None:  # what collect does, in one process: step and record
            o = obs[0]
            for t in range(steps):
                out["obs"][t] = o
                out["actions"][t] = a = chase(o)
                o, out["rewards"][t], out["terminated"][t], out["truncated"][t], _ = \
                    env.step(a)
            obs[0] = o

        return env, rollout

    def sharded():
        env = ShardedVectorEnv(BatchPong, n, num_workers=2, backend=backend, copy=False)
        if store:  # as if both actors were on other nodes
            env._backend.same_node = [False] * env.num_workers
        env.reset(seed=0)
        env.collect(chase, 1)  # the workers hold the policy from here on

        def rollout() -> None:
            env.collect(None, steps)

        return env, rollout

    compare(name, one, sharded, 1, rounds, results)
    if backend == "ray" and os.path.isdir("/proc/self"):
        cpu_case(name, one, sharded, rounds)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (nan once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _ray_daemons(exclude: set[int]) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in exclude:
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if b"ray" in cmd:  # raylet, gcs_server, ray::... agents and idle workers
                pids.append(int(entry))
    return pids


def cpu_case(name: str, make_one: Callable, make_sharded: Callable, calls: int) -> None:
    """CPU seconds per ``collect`` call, per process (driver, each actor, Ray's daemons),
    against the one process's: where the cores go, whatever else runs."""
    env_a, fn_a = make_one()
    env_b, fn_b = make_sharded()
    try:
        fn_a(), fn_b()
        me = os.getpid()
        start = _cpu_seconds(me)
        for _ in range(calls):
            fn_a()
        one = (_cpu_seconds(me) - start) / calls
        actors = env_b.worker_pids
        daemons = _ray_daemons({me, *actors})
        pids = [me, *actors, *daemons]
        before = [_cpu_seconds(p) for p in pids]
        for _ in range(calls):
            fn_b()
        # a daemon that exited meanwhile (an idle worker Ray retired) is left out
        used = [(_cpu_seconds(p) - b) / calls for p, b in zip(pids, before)]
        used = [u if u == u else 0.0 for u in used]
    finally:
        env_a.close()
        env_b.close()
    driver, per_actor, ray_own = used[0], used[1:1 + len(actors)], sum(used[1 + len(actors):])
    print(f"{name:24s} CPU ms per call: one process {one * 1e3:.0f}; sharded: driver "
          f"{driver * 1e3:.0f}, actors {' + '.join(f'{a * 1e3:.0f}' for a in per_actor)}, "
          f"Ray daemons {ray_own * 1e3:.0f}, total {sum(used) * 1e3:.0f} "
          f"({sum(used) / one:.2f}x the one process's)")


def ray_cases(rounds: int, results: dict) -> None:
    import ray

    if not ray.is_initialized():
        ray.init(**RAY_INIT)
    collect_case("ray collect 2x32768", "ray", rounds, results)
    collect_case("ray collect via store", "ray", rounds, results, store=True)

    def one64():
        env = BatchPong(64, copy=False)
        env.reset(seed=0)
        return env, stepper(env, 64)

    def sharded64():
        env = ShardedVectorEnv(BatchPong, 64, num_workers=2, backend="ray", copy=False)
        env.reset(seed=0)
        return env, stepper(env, 64)

    compare("ray overhead 64", one64, sharded64, 50, rounds, results)


def cluster_case(rounds: int) -> None:
    """``collect`` on a simulated two-node Ray cluster (``ray.cluster_utils.Cluster``, one
    CPU per node, one actor per node) against one actor: env-steps/s and the bytes moved,
    for the throughput model of docs/scaling-out.md. Prints figures only (no target)."""
    import ray
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    store = RAY_INIT["object_store_memory"]  # preallocated (RAY_ENV): keep it small
    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 1, "include_dashboard": False,
                                      "object_store_memory": store})
    cluster.add_node(num_cpus=1, object_store_memory=store)
    ray.init(address=cluster.address, log_to_driver=False)
    per_actor, steps = 16384, 64
    try:
        envs = {w: ShardedVectorEnv(BatchPong, w * per_actor, num_workers=w, backend="ray",
                                    copy=False,
                                    # three actors on two 1-CPU nodes: half a CPU each;
                                    # SPREAD puts the pair's actors on different nodes
                                    ray_options={"num_cpus": 0.5,
                                                 "scheduling_strategy": "SPREAD"})
                for w in (1, 2)}
        for env in envs.values():
            env.reset(seed=0)
            env.collect(chase, 1)
        nodes = ray.get([a.node_id.remote() for a in envs[2]._backend.actors])
        print(f"# the 2-actor env runs on {len(set(nodes))} node(s)")
        times: dict[int, list[float]] = {1: [], 2: []}
        for _ in range(rounds):
            for w, env in envs.items():
                start = time.perf_counter()
                traj = env.collect(None, steps)
                times[w].append(time.perf_counter() - start)
        nbytes = sum(a.nbytes for a in (traj.obs, traj.actions, traj.rewards,
                                        traj.terminated, traj.truncated))
        per_step = nbytes / traj.rewards.size
        for w, ts in times.items():
            t = statistics.median(ts)
            print(f"cluster collect {w} actor(s) x {per_actor} envs x {steps} steps: "
                  f"{w * per_actor * steps / t / 1e6:6.2f} M env-steps/s, "
                  f"{w * per_actor * steps * per_step / t / 1e6:7.1f} MB/s of trajectories "
                  f"({per_step:.0f} B per env-step), {t * 1e3:7.1f} ms per call")
        ratio = statistics.median(times[1]) / statistics.median(times[2]) * 2
        print(f"cluster 2 nodes vs 1: {ratio:.2f}x env-steps/s")
        for env in envs.values():
            env.close()
    finally:
        ray.shutdown()
        cluster.shutdown()


# ---------------------------------------------------------------- the ceiling share table
# Run by a fresh interpreter whose PYTHONPATH is the tree measured (this checkout or
# --ref's): it imports only what every revision of ShardedVectorEnv has.
_SHARE_PROBE = r"""
import json, multiprocessing as mp, sys, time
import numpy as np
from batchenv import BatchPong, ShardedVectorEnv

UNIT = 1_000_000  # iterations of the pure compute loop per process and round


def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def spinner(conn):
    while True:
        n = conn.recv()
        if n is None:
            return
        start = time.perf_counter()
        spin(n)
        conn.send(time.perf_counter() - start)


def per_call(fn, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def stepper(env, n):
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 3, n) for _ in range(8)]
    count = [0]

    def step():
        env.step(actions[count[0] & 7])
        count[0] += 1

    return step


if __name__ == "__main__":
    rounds = int(sys.argv[1])
    ctx = mp.get_context("forkserver")
    spinners = []
    for _ in range(2):
        ours, theirs = ctx.Pipe()
        proc = ctx.Process(target=spinner, args=(theirs,), daemon=True)
        proc.start()
        spinners.append((ours, proc))
    cases = {"state 65536": (65536, {}, 20), "pixels 4096": (4096, {"obs_type": "pixels"}, 20)}
    steps = {}
    envs = []
    for case, (n, kwargs, calls) in cases.items():
        one = BatchPong(n, copy=False, **kwargs)
        contenders = {"one": one,
                      "workers": ShardedVectorEnv(BatchPong, n, num_workers=2, copy=False,
                                                  **kwargs)}
        try:  # a revision from before local_shard has no such keyword
            contenders["local"] = ShardedVectorEnv(BatchPong, n, num_workers=2, copy=False,
                                                   local_shard=True, **kwargs)
        except TypeError:
            pass
        for env in contenders.values():
            env.reset(seed=0)
            envs.append(env)
        steps[case] = ({key: stepper(env, n) for key, env in contenders.items()}, calls)
    times = {"ceiling": {"one": [], "two": []}}
    times.update({case: {k: [] for k in fns} for case, (fns, _) in steps.items()})
    for fns, calls in steps.values():  # warm up
        for fn in fns.values():
            per_call(fn, 2)
    spin(UNIT)
    for _ in range(rounds):
        start = time.perf_counter()
        spin(2 * UNIT)
        times["ceiling"]["one"].append(time.perf_counter() - start)
        for conn, _ in spinners:
            conn.send(UNIT)
        times["ceiling"]["two"].append(max(conn.recv() for conn, _ in spinners))
        for case, (fns, calls) in steps.items():
            for key, fn in fns.items():
                times[case][key].append(per_call(fn, calls))
    for env in envs:
        env.close()
    for conn, proc in spinners:
        conn.send(None)
        proc.join()
    print(json.dumps(times))
"""


def _tree_of(ref: str, where: str) -> str:
    """The ``batchenv`` package of git revision ``ref``, extracted under ``where/ref``."""
    import subprocess
    import tarfile

    root = str(Path(__file__).resolve().parents[1])
    archive = os.path.join(where, f"{ref}.tar")
    subprocess.run(["git", "-C", root, "archive", "-o", archive, ref, "batchenv"], check=True)
    tree = os.path.join(where, ref)
    os.makedirs(tree)
    with tarfile.open(archive) as tar:
        tar.extractall(tree)
    return tree


def share_cases(rounds: int, runs: int, refs: list[str]) -> None:
    """Issue 22's table: the share of this machine's ceiling that 2 shards reach, for this
    checkout and the revisions ``refs``, runs alternating in one invocation."""
    import json
    import subprocess
    import tempfile

    root = str(Path(__file__).resolve().parents[1])
    with tempfile.TemporaryDirectory() as tmp:
        probe = os.path.join(tmp, "probe.py")
        with open(probe, "w") as f:
            f.write(_SHARE_PROBE)
        trees = {"this checkout": root}
        for ref in refs:
            trees[ref] = _tree_of(ref, tmp)
        got: dict[str, list[dict]] = {label: [] for label in trees}
        for r in range(runs):
            order = list(trees) if r % 2 == 0 else list(trees)[::-1]
            for label in order:
                out = subprocess.run([sys.executable, probe, str(rounds)], check=True,
                                     capture_output=True, text=True, cwd=tmp,
                                     env={**os.environ, "PYTHONPATH": trees[label]}).stdout
                got[label].append(json.loads(out.splitlines()[-1]))
    print(f"# share of the ceiling: {runs} run(s) per tree of {rounds} interleaved rounds; "
          f"ratio = one process time / sharded time; ceiling = one process's pure compute "
          f"loop time / two processes' (each half the loop) in the same round; share = "
          f"ratio / ceiling, round by round; medians (range over rounds)")
    print(f"{'tree':16s} {'case':12s} {'form':9s} {'ratio':>20s} {'ceiling':>20s} "
          f"{'share of ceiling':>18s}")
    for label, results in got.items():
        ceilings = [one / two for res in results
                    for one, two in zip(res["ceiling"]["one"], res["ceiling"]["two"])]
        for case in ("state 65536", "pixels 4096"):
            for form, name in (("workers", "2 workers"), ("local", "local")):
                if form not in results[0][case]:
                    print(f"{label[:16]:16s} {case:12s} {name:9s} (no local_shard there)")
                    continue
                ratios = [o / t for res in results
                          for o, t in zip(res[case]["one"], res[case][form])]
                shares = [ratio / ceiling for ratio, ceiling in zip(ratios, ceilings)]
                print(f"{label[:16]:16s} {case:12s} {name:9s} "
                      f"{_spread(ratios, 'x'):>20s} {_spread(ceilings, 'x'):>20s} "
                      f"{_spread([100 * s for s in shares], '%'):>18s}")


def _spread(values: list[float], unit: str) -> str:
    return (f"{statistics.median(values):.2f}{unit} ({min(values):.2f}-{max(values):.2f})"
            if unit == "x" else
            f"{statistics.median(values):.0f}{unit} ({min(values):.0f}-{max(values):.0f})")


# ---------------------------------------------------------------- local_shard, double buffer
def _linear(inputs: int, seed: int = 0) -> Callable[[np.ndarray], np.ndarray]:
    """A fixed linear policy (action 1 or 2 by the sign of ``obs @ w``): work to overlap,
    of the order of a step of the same batch (a larger network only dilutes the env's
    share, and so the most the double buffer can hide)."""
    w = np.random.default_rng(seed).standard_normal(inputs).astype(np.float32)

    def policy(obs: np.ndarray) -> np.ndarray:
        return 1 + (obs.reshape(len(obs), -1).astype(np.float32) @ w > 0)

    return policy


def _subsampled(policy: Callable[[np.ndarray], np.ndarray]) -> Callable:
    return lambda obs: policy(obs[:, ::6, ::6])  # 84x84 -> 14x14


def options_cases(rounds: int) -> None:
    """``local_shard`` against 2 workers (``step``; also at 64 envs, where the handshake is
    most of a step), and the double buffer against the
    plain loop with a linear policy (both 2 workers, then both ``local_shard``). Ratio = the
    plain form's time / the option's: above 1, the option pays."""
    results: dict = {}
    for what, n, kwargs, calls, policy in (
            ("state 65536", 65536, {}, 20, _linear(6)),
            ("pixels 4096", 4096, {"obs_type": "pixels"}, 20, _subsampled(_linear(196)))):
        def sharded(n=n, kwargs=kwargs, local=False):
            env = ShardedVectorEnv(BatchPong, n, num_workers=2, copy=False,
                                   local_shard=local, **kwargs)
            env.reset(seed=0)
            return env, stepper(env, n)

        compare(f"local_shard {what}", sharded, lambda s=sharded: s(local=True),
                calls, rounds, results)
        if what.startswith("state"):  # where the handshake is most of a step
            compare("local_shard state 64", lambda s=sharded: s(n=64),
                    lambda s=sharded: s(n=64, local=True), 300, rounds, results)

        def plain(n=n, kwargs=kwargs, policy=policy, local=False):
            env = ShardedVectorEnv(BatchPong, n, num_workers=2, copy=False,
                                   local_shard=local, **kwargs)
            obs = [env.reset(seed=0)[0]]

            def loop() -> None:  # policy on the whole batch, then the whole batch steps
                obs[0] = env.step(policy(obs[0]))[0]

            return env, loop

        def double(n=n, kwargs=kwargs, policy=policy, local=False):
            env = ShardedVectorEnv(BatchPong, n, num_workers=2, copy=False,
                                   local_shard=local, **kwargs)
            env.async_reset(seed=0)

            def loop() -> None:  # one step of every env: each half's policy, in turn
                for _ in range(2):
                    obs, *_, info = env.recv()
                    env.send(policy(obs), info["env_id"])

            return env, loop

        compare(f"double buffer {what}", plain, double, calls, rounds, results)
        compare(f"double buffer local {what}", lambda p=plain: p(local=True),
                lambda d=double: d(local=True), calls, rounds, results)
        one = BatchPong(n, copy=False, **kwargs)
        obs = one.reset(seed=0)[0]
        results[f"policy alone {what}"] = block_time(lambda o=obs, p=policy: p(o), calls)
        one.close()
    for name, value in results.items():
        if name.startswith("policy"):
            print(f"{name:30s} {value * 1e3:8.2f} ms per whole batch")
            continue
        ratio, lo, hi, t_plain, t_option = value
        print(f"{name:30s} {ratio:5.2f}x (rounds {lo:.2f}-{hi:.2f})  plain "
              f"{t_plain * 1e3:8.2f} ms/step, option {t_option * 1e3:8.2f} ms/step")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", choices=["process", "ray", "cluster", "share", "options"],
                   default=None,
                   help="one group of cases (cluster: a simulated two-node Ray cluster, "
                        "figures for docs/scaling-out.md; share: the ceiling share table; "
                        "options: local_shard and the double buffer; these three are not "
                        "run by default)")
    p.add_argument("--ref", action="append", default=[],
                   help="with --only share: also measure this git revision, in the same run "
                        "(repeatable)")
    p.add_argument("--runs", type=int, default=2,
                   help="with --only share: fresh processes per tree (alternating)")
    p.add_argument("--no-targets", action="store_true", help="print only; always exit 0")
    p.add_argument("--ray-defaults", action="store_true",
                   help="start Ray as it comes (actors at nice 15, object store not "
                        "preallocated) instead of RAY_ENV")
    args = p.parse_args(argv)
    if not args.ray_defaults:
        for key, value in RAY_ENV.items():
            os.environ.setdefault(key, value)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# {os.cpu_count()} cores, load average {load:.1f} at start; "
          f"{args.rounds} interleaved rounds; ratio = one process time / sharded time")
    results: dict = {}
    if args.only in (None, "process"):
        process_cases(args.rounds, results)
    if args.only in (None, "ray"):
        ray_cases(args.rounds, results)
    if args.only == "cluster":
        cluster_case(args.rounds)
    if args.only == "share":
        share_cases(args.rounds, args.runs, args.ref)
    if args.only == "options":
        options_cases(args.rounds)
    missed = []
    ceiling = results.get("ceiling state 65536", (None,))[0]
    for name, (ratio, lo, hi, t_one, t_sharded) in results.items():
        if "overhead" in name:
            print(f"{name:24s} one process {t_one * 1e6:9.1f} us/step   sharded "
                  f"{t_sharded * 1e6:9.1f} us/step   overhead "
                  f"{(t_sharded - t_one) * 1e6:9.1f} us/step")
            continue
        target = TARGETS.get(name)
        verdict = "" if target is None else (" ok" if ratio >= target else " MISSED")
        if target is not None and ratio < target:
            missed.append(name)
        of_ceiling = ("" if ceiling is None or name.startswith("ceiling")
                      else f"  ({ratio / ceiling:.0%} of the ceiling)")
        print(f"{name:24s} {ratio:5.2f}x (rounds {lo:.2f}-{hi:.2f})  one process "
              f"{t_one * 1e3:8.2f} ms/call, sharded {t_sharded * 1e3:8.2f} ms/call"
              f"{'' if target is None else f'  target {target}x'}{verdict}{of_ceiling}")
    print(f"# load average {os.getloadavg()[0]:.1f} at the end")
    if missed and not args.no_targets:
        print(f"targets missed: {missed}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
