"""The micro-timings behind the choices that comments in the kernels point to
(``docs/performance.md``, "Why the kernels are written as they are").

    python benchmarks/bench_micro.py            # about 30 s
    python benchmarks/bench_micro.py --n 256    # another batch size

Each line times two ways of doing one thing with ``timeit`` (median of 7 repeats of
best-effort loops, µs per call) and prints their ratio; the machine is shared, so read the
ratios. Nothing here is imported by the package.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import timeit

import numpy as np

from batchenv.envs.classic.cartpole import sin_cos

try:
    from numpy._core.umath import clip as clip_ufunc
except ImportError:  # numpy < 2
    from numpy.core.umath import clip as clip_ufunc  # type: ignore[no-redef]


def per_call(fn, number: int) -> float:
    return statistics.median(timeit.repeat(fn, number=number, repeat=7)) / number * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096, help="batch size")
    args = parser.parse_args()
    n = args.n
    rng = np.random.default_rng(0)
    x = rng.uniform(-0.2, 0.2, n)
    out, out2, tmp = np.empty(n), np.empty(n), np.empty(n)
    f32 = rng.uniform(0, 30, n).astype(np.float32)
    out32 = np.empty(n, dtype=np.float32)
    mask = np.zeros(n, dtype=bool)
    block = rng.uniform(0, 1, (4, n))
    obs = np.empty((n, 4), dtype=np.float32)
    zero_d, scalar, pyfloat = np.array(2.5, dtype=np.float32), np.float32(2.5), 2.5
    lo, hi = np.array(2.0, dtype=np.float32), np.array(27.0, dtype=np.float32)

    def columns() -> None:
        for j, row in enumerate(block):
            obs[:, j] = row

    def transposed() -> None:
        np.copyto(obs, block.T, casting="same_kind")

    cases = [
        ("sin and cos of float64 angles", "sin_cos (polynomial + sqrt)",
         lambda: sin_cos(x, out, out2, tmp), "np.sin + np.cos",
         lambda: (np.sin(x, out=out), np.cos(x, out=out2))),
        ("float32 multiply by a constant", "0-d array operand",
         lambda: np.multiply(f32, zero_d, out=out32), "numpy scalar operand",
         lambda: np.multiply(f32, scalar, out=out32)),
        ("float32 multiply by a constant", "0-d array operand",
         lambda: np.multiply(f32, zero_d, out=out32), "Python float operand",
         lambda: np.multiply(f32, pyfloat, out=out32)),
        ("clip in place", "the clip ufunc", lambda: clip_ufunc(f32, lo, hi, out=out32),
         "np.clip", lambda: np.clip(f32, lo, hi, out=out32)),
        ("largest element", "a[a.argmax()]", lambda: f32[f32.argmax()], "a.max()",
         f32.max),
        ("any True in a mask", "np.count_nonzero", lambda: np.count_nonzero(mask),
         "mask.any()", mask.any),
        ("(4, n) float64 rows into an (n, 4) float32 observation", "4 column copies",
         columns, "one transposed copy", transposed),
    ]
    print(f"n = {n}; µs per call, median of 7 repeats (ratio: second / first)")
    for what, name_a, a, name_b, b in cases:
        number = max(10, int(0.02 / max(1e-7, timeit.timeit(a, number=10) / 10)))
        ta, tb = per_call(a, number), per_call(b, number)
        print(f"{what}: {name_a} {ta:.2f}, {name_b} {tb:.2f}  ratio {tb / ta:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
