"""CPU time of BatchCrafter's world generation alone, per world:
``python benchmarks/crafter_worldgen_time.py [worlds]`` (default 256).

Compiles a loop that calls ``worldgen.generate_world`` on each row of a BatchCrafter's state
(its arrays borrowed as the env's own loop borrows them), runs it three times over the same
start state and prints the best per-world CPU time and a digest of the worlds made (the
material maps, creatures, draws: equal digests, equal worlds, for an A/B of two versions).
"""

from __future__ import annotations

import collections
import hashlib
import sys
import time
from typing import Any

import numba
import numpy as np

from batchenv import _borrow
from batchenv.envs.crafter import BatchCrafter, worldgen


def main(n: int) -> None:
    env = BatchCrafter(n, obs_type="symbolic")
    form: Any = env.kernel_form
    names = [name for name, _ in env.state if name not in form.hidden]
    state_type: Any = collections.namedtuple("S", names)  # type: ignore[misc]
    s: Any = state_type(*form.fields(env.state))
    s.rng_key[:] = np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    start: list[np.ndarray] = [a.copy() for a in s]
    _borrow.install()

    @numba.njit
    def generate(s, lo, hi):  # type: ignore[no-untyped-def,unused-ignore]
        s = _borrow.borrow(s)
        for i in range(lo, hi):
            worldgen.generate_world(s, i)

    t0 = time.process_time()
    generate(s, 0, 1)
    print(f"compile: {time.process_time() - t0:.1f} s CPU")
    best = float("inf")
    for _ in range(3):
        for a, b in zip(s, start):
            a[...] = b
        t0 = time.process_time()
        generate(s, 0, n)
        best = min(best, time.process_time() - t0)
    digest = hashlib.sha1(b"".join(a.tobytes() for a in (
        s.mat, s.kind, s.obj_x, s.obj_y, s.n_objects, s.rng_counter, s.noise_perm)))
    print(f"{best / n * 1e3:.3f} ms CPU per world (best of 3 runs of {n} worlds); "
          f"worlds' digest {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 256)
