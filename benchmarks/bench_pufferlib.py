"""PufferLib 3.0 Ocean (C, one vectorized C batch per env) vs batchenv, side by side: BatchPong
as numpy kernels and as per-env kernels (compiled by numba, one thread), CartPole.

A copy of shared/anchors/pufferlib/bench.py (PufferLib's code is not in this repository),
extended with the per-env form. Run it in the venv that
``shared/anchors/pufferlib/build.sh VENV PROJECT_ROOT`` builds (PufferLib's Ocean Pong and
CartPole, and this project installed editable), with numba added to it:

    VENV/bin/pip install numba && VENV/bin/python benchmarks/bench_pufferlib.py

One process; for each N every case is built up front, then ROUNDS interleaved rounds time
every case once for about BLOCK seconds each (order rotated per round); the figure for a case
is the median over rounds of env-steps per second. Random actions are drawn beforehand
(16 batches per case, cycled); both libraries get the same action arrays.
"""

from __future__ import annotations

import platform
import statistics
import sys
import time

import gymnasium
import numpy as np
from pufferlib.ocean.cartpole.cartpole import Cartpole as PufferCartPole
from pufferlib.ocean.pong.pong import Pong as PufferPong

import batchenv

NS = (256, 4096, 65536)
ROUNDS = 5
BLOCK = 1.0  # seconds per timed block
K = 16  # action batches drawn beforehand per N
HUGE = 10**15  # PufferLib log/report interval: vec_log never runs inside the timed blocks


def stepper(env, actions):
    step = env.step

    def run(t: int) -> None:
        step(actions[t & (K - 1)])

    return run


def timed_block(run, seconds: float) -> tuple[float, int]:
    calls = 0
    start = time.perf_counter()
    while True:
        for _ in range(4):
            run(calls)
            calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return elapsed, calls


def build_cases(n: int):
    rng = np.random.default_rng(n)
    pong_actions = [rng.integers(0, 3, n) for _ in range(K)]
    cart_actions = [rng.integers(0, 2, n) for _ in range(K)]

    cases = {}
    pp = PufferPong(num_envs=n, log_interval=HUGE)
    pp.reset(seed=0)
    cases["puffer_pong"] = (pp, stepper(pp, pong_actions))

    for name, kw in {"batch_pong": dict(kernels="numpy"),
                     "batch_pong_nocopy": dict(kernels="numpy", copy=False),
                     "batch_pong_perenv": dict(kernels="numba"),
                     "batch_pong_perenv_nocopy": dict(kernels="numba", copy=False)}.items():
        bp = batchenv.BatchPong(num_envs=n, **kw)
        bp.reset(seed=0)
        cases[name] = (bp, stepper(bp, pong_actions))

    pc = PufferCartPole(num_envs=n, report_interval=HUGE)
    pc.reset(seed=0)
    cases["puffer_cartpole"] = (pc, stepper(pc, cart_actions))

    bc = batchenv.BatchCartPole(num_envs=n)
    bc.reset(seed=0)
    cases["batch_cartpole"] = (bc, stepper(bc, cart_actions))
    return cases


def main() -> None:
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"gymnasium {gymnasium.__version__}, "
          f"batchenv {getattr(batchenv, '__version__', '?')}, "
          f"pufferlib 3.0.0 (Ocean C, built from sdist)")
    print(f"rounds={ROUNDS}, block={BLOCK}s, N={NS}")
    results: dict[tuple[str, int], list[float]] = {}
    for n in NS:
        cases = build_cases(n)
        names = list(cases)
        # sanity: PufferLib obs shapes / logging
        assert cases["puffer_pong"][0].observations.shape == (n, 8)
        assert cases["puffer_cartpole"][0].observations.shape == (n, 4)
        for name in names:  # warm-up
            timed_block(cases[name][1], 0.2)
        for r in range(ROUNDS):
            order = names[r % len(names):] + names[: r % len(names)]
            for name in order:
                elapsed, calls = timed_block(cases[name][1], BLOCK)
                results.setdefault((name, n), []).append(n * calls / elapsed)
        # the PufferLib envs never called vec_log in the timed blocks (tick < interval)
        assert cases["puffer_pong"][0].tick < HUGE
        for env, _ in cases.values():
            if hasattr(env, "c_envs"):
                env.close()
        del cases

    def med(name, n):
        return statistics.median(results[(name, n)]) / 1e6

    def rng_ratio(a, b, n):
        rs = [x / y for x, y in zip(results[(a, n)], results[(b, n)])]
        return f"{min(rs):.2f}-{max(rs):.2f}"

    rows = [
        ("Pong (batchenv default copy)", "puffer_pong", "batch_pong"),
        ("Pong (batchenv copy=False)", "puffer_pong", "batch_pong_nocopy"),
        ("Pong per-env (default copy)", "puffer_pong", "batch_pong_perenv"),
        ("Pong per-env (copy=False)", "puffer_pong", "batch_pong_perenv_nocopy"),
        ("CartPole", "puffer_cartpole", "batch_cartpole"),
    ]
    print()
    hdr = (f"{'env':30s} {'N':>6s} {'PufferLib M/s':>14s} {'batchenv M/s':>13s} "
           f"{'ratio b/P':>10s} {'per-round ratio range':>22s}")
    print(hdr)
    print("-" * len(hdr))
    for label, p, b in rows:
        for n in NS:
            mp, mb = med(p, n), med(b, n)
            print(f"{label:30s} {n:6d} {mp:14.2f} {mb:13.2f} {mb / mp:10.3f} "
                  f"{rng_ratio(b, p, n):>22s}")
    print()
    print("Pong rules differ: PufferLib Ocean Pong = 500x640 court, 8-float obs, episode to 21 "
          "points; batchenv BatchPong = 40x30 court of the numpy Pong demo, state obs (6 floats).")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
