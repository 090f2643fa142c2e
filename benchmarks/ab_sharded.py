"""ShardedVectorEnv's ``step`` and ``collect`` time, this checkout against another git
revision, interleaved in one run.

    python benchmarks/ab_sharded.py                       # against main
    python benchmarks/ab_sharded.py --ref 4a35d40 --rounds 4

Workers import ``batchenv`` by name, so the two versions cannot share a process (as
``ab_versions.py`` does for unsharded envs): each measurement is a fresh process whose
``PYTHONPATH`` holds one version (the other revision extracted with ``git archive``), the
rounds alternating old, new, new, old, ... so both see the same machine load. Prints the
median milliseconds per ``step`` and per ``collect`` step of each, and new/old.
Cases: BatchPong 65536 (state) and 4096 (pixels), 2 workers, process backend (``--backend
ray``: Ray actors, on a local Ray instance of 2 CPUs started per measurement); ``--small``
adds 64 state envs (where the per-step handshake is most of the time).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = [("BatchPong 65536 state", 65536, "state"), ("BatchPong 4096 pixels", 4096, "pixels")]

_PROBE = """
import json, sys, time
import numpy as np
from batchenv import BatchPong, ShardedVectorEnv

def policy(obs):
    return np.zeros(len(obs), np.int64)

if __name__ == "__main__":
    n, obs_type, steps, backend = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
    if backend == "ray":
        import ray
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    env = ShardedVectorEnv(BatchPong, n, num_workers=2, obs_type=obs_type, backend=backend)
    env.reset(seed=0)
    a = np.random.default_rng(0).integers(0, 3, (steps, n))
    for t in range(10):
        env.step(a[t])
    times = []
    for t in range(steps):
        t0 = time.perf_counter()
        env.step(a[t])
        times.append(time.perf_counter() - t0)
    env.collect(policy, 8)
    t0 = time.perf_counter()
    env.collect(policy, steps)
    collect = (time.perf_counter() - t0) / steps
    env.close()
    print(json.dumps({"step": sorted(times)[len(times) // 2], "collect": collect}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="main")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--small", action="store_true", help="also 64 state envs")
    parser.add_argument("--backend", choices=["process", "ray"], default="process")
    args = parser.parse_args()
    cases = CASES + ([("BatchPong 64 state", 64, "state")] if args.small else [])
    with tempfile.TemporaryDirectory() as tmp:
        old = os.path.join(tmp, "old")
        os.makedirs(old)
        archive = os.path.join(tmp, "old.tar")
        subprocess.run(["git", "-C", ROOT, "archive", "-o", archive, args.ref, "batchenv"],
                       check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(old)
        probe = os.path.join(tmp, "probe.py")
        with open(probe, "w") as f:
            f.write(_PROBE)
        print(f"new: {ROOT} (this checkout); old: {args.ref}; {args.backend} backend; "
              f"{args.rounds} rounds, "
              f"{args.steps} steps each; load average {os.getloadavg()[0]:.1f}")
        for label, n, obs_type in cases:
            got: dict[str, dict[str, list[float]]] = {
                "old": {"step": [], "collect": []}, "new": {"step": [], "collect": []}}
            for r in range(args.rounds):
                order = ("old", "new") if r % 2 == 0 else ("new", "old")
                for version in order:
                    path = old if version == "old" else ROOT
                    out = subprocess.run(
                        [sys.executable, probe, str(n), obs_type, str(args.steps), args.backend],
                        check=True, capture_output=True, text=True, cwd=path,
                        env={**os.environ, "PYTHONPATH": path}).stdout
                    for key, value in json.loads(out.splitlines()[-1]).items():
                        got[version][key].append(value)
            for key in ("step", "collect"):
                o, w = (statistics.median(got[v][key]) for v in ("old", "new"))
                print(f"{label:24s} {key:8s} old {o * 1e3:8.2f} ms  new {w * 1e3:8.2f} ms  "
                      f"new/old {w / o:5.2f}", flush=True)
        print(f"# load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
