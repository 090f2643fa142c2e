"""The process backend's step against another git revision's, side by side in one process.

    python benchmarks/ab_sharded_handshake.py               # against main
    python benchmarks/ab_sharded_handshake.py --ref 684e38e --rounds 7

The other revision's ``batchenv/sharded/_process.py`` is extracted with ``git show`` into a
temporary directory and imported as the module ``_process_ref`` (the workers import it
from there too); an env is built with that revision's ``ProcessBackend`` and everything
else from this checkout. Timed blocks alternate (ref, this, this, ref, ...), so every round
sees the same machine load. Prints, per case (BatchPong, 2 workers, ``copy=False``): the
median µs per step of each, and the ratio ref time / this time (above 1: this checkout is
faster), with its range over the rounds.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from batchenv import BatchPong, ShardedVectorEnv  # noqa: E402
from batchenv.sharded import _process  # noqa: E402

CASES = [("state 64", 64, {}, 300), ("state 65536", 65536, {}, 20),
         ("pixels 4096", 4096, {"obs_type": "pixels"}, 5)]


def make(backend_cls: type, n: int, kwargs: dict) -> ShardedVectorEnv:
    mine = _process.ProcessBackend
    _process.ProcessBackend = backend_cls  # type: ignore[misc]  # read by the constructor
    try:
        env = ShardedVectorEnv(BatchPong, n, num_workers=2, copy=False, **kwargs)
    finally:
        _process.ProcessBackend = mine  # type: ignore[misc]
    env.reset(seed=0)
    return env


def per_step(env: ShardedVectorEnv, actions: list[np.ndarray], calls: int) -> float:
    start = time.perf_counter()
    for t in range(calls):
        env.step(actions[t & 7])
    return (time.perf_counter() - start) / calls


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ref", default="main")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    source = subprocess.run(["git", "show", f"{args.ref}:batchenv/sharded/_process.py"],
                            cwd=ROOT, check=True, capture_output=True, text=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "_process_ref.py").write_text(source)
        sys.path.insert(0, tmp)  # the workers get the driver's sys.path
        ref_backend = importlib.import_module("_process_ref").ProcessBackend
        print(f"# {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start; "
              f"ref = {args.ref}; {args.rounds} rounds; ratio = ref time / this time")
        for label, n, kwargs, calls in CASES:
            actions = [np.random.default_rng(i).integers(0, 3, n) for i in range(8)]
            envs = {"ref": make(ref_backend, n, kwargs), "this": make(_process.ProcessBackend,
                                                                      n, kwargs)}
            try:
                times: dict[str, list[float]] = {"ref": [], "this": []}
                for env in envs.values():
                    per_step(env, actions, 3)  # warm up
                for r in range(args.rounds):
                    order = ("ref", "this") if r % 2 == 0 else ("this", "ref")
                    for key in order:
                        times[key].append(per_step(envs[key], actions, calls))
            finally:
                for env in envs.values():
                    env.close()
            ratios = [a / b for a, b in zip(times["ref"], times["this"])]
            print(f"{label:12s} ref {statistics.median(times['ref']) * 1e6:8.1f} us/step  "
                  f"this {statistics.median(times['this']) * 1e6:8.1f} us/step  "
                  f"{statistics.median(ratios):5.2f}x (rounds {min(ratios):.2f}-"
                  f"{max(ratios):.2f})")
        print(f"# load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
