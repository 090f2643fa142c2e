"""SplitMix64 and batchenv's seed -> stream rule in plain Python ints, written from the
algorithm's definition (Steele, Lea & Flood, OOPSLA 2014; the reference C code
``splitmix64.c``) and docs/writing_envs.md: the independent oracle of tests/test_random.py and
of the seeding tests elsewhere. Imports nothing from batchenv."""

from __future__ import annotations

import itertools

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15  # 2**64 / golden ratio (the paper's gamma)
SALT = 0x5851F42D4C957F2D  # batchenv's seed salt (batchenv/random.py, documented there)


def mix(z: int) -> int:
    """Stafford's Mix13, SplitMix64's output function."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def splitmix64(state: int):
    """SplitMix64's output stream from ``state``, as the reference C code ``next()``."""
    while True:
        state = (state + GOLDEN) & MASK
        yield mix(state)


def key_of(seed: int) -> int:
    return mix(mix((seed * GOLDEN + SALT) & MASK))


def words(key: int, counter: int, count: int) -> list[int]:
    """Words ``counter, counter + 1, ...`` of the stream of ``key``, by SplitMix64 itself."""
    return list(itertools.islice(splitmix64((key + (counter - 1) * GOLDEN) & MASK), count))


def unit(word: int) -> float:
    """A word as a uniform float in [0, 1): its top 53 bits times 2**-53."""
    return (word >> 11) * 2.0**-53
