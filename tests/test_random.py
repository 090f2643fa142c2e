"""The seed -> stream rule against known answers computed from SplitMix64's definition.

The oracle here is written from the published algorithm (Steele, Lea & Flood, "Fast
splittable pseudorandom number generators", OOPSLA 2014; the reference C code ``splitmix64.c``
that seeds the xoshiro generators), in plain Python ints, and imports nothing from batchenv:

* SplitMix64 with state ``x``: ``x += GOLDEN``; output ``mix(x)`` (Stafford's Mix13 finaliser).
* batchenv's rule (docs/writing_envs.md, "4. Randomness"; batchenv/random.py's docstring):
  the key of an integer seed ``s`` is ``mix(mix(s * GOLDEN + SALT))``; word ``j`` of a row
  with key ``k`` and counter ``c`` is ``mix(k + (c + j) * GOLDEN)``, i.e. SplitMix64's
  output stream started from state ``k + (c - 1) * GOLDEN``; ``random()`` is
  ``(word >> 11) * 2**-53``.
* ``reset(seed=s)`` gives row ``i`` the key of ``s + i``; ``reset(seed=[a, None, ...])``
  gives row ``i`` the key of its entry and leaves the ``None`` rows' streams alone.

So an off-by-one in the seed rule, a changed constant or a shifted stream fails here, even
when every row of a batch still agrees with a batch of one (those tests put both sides through
the same rule).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _splitmix import MASK, key_of, splitmix64, unit, words

import batchenv
from batchenv.random import BatchRandom, seed_keys


def test_the_oracle_is_splitmix64():
    """The plain-Python SplitMix64 above gives the published outputs of the reference C
    implementation (seed 1234567; seed 0's first output 0xe220a8397b1dcdaf)."""
    assert list(itertools.islice(splitmix64(1234567), 5)) == [
        6457827717110365317, 3203168211198807973, 9817491932198370423,
        4593380528125082431, 16408922859458223821]
    assert next(splitmix64(0)) == 0xE220A8397B1DCDAF


# seed -> key, from the definition above (two rounds of Mix13 on s * GOLDEN + SALT)
KNOWN_KEYS = {0: 0x4A042D1DC9E67966, 1: 0xEFA71D203A73A58F, 2: 0xC38A4B1FB5EA0B93,
              7: 0x62D628FFCBC274A5, 1000: 0xF692AF5FBBC6F010,
              2**40 + 3: 0x1BDF022982BA7218}


def test_known_keys_follow_from_the_definition():
    assert {s: key_of(s) for s in KNOWN_KEYS} == KNOWN_KEYS


def test_seed_keys_are_the_known_keys():
    seeds = np.array(list(KNOWN_KEYS), dtype=np.uint64)
    assert [int(k) for k in seed_keys(seeds)] == list(KNOWN_KEYS.values())


@pytest.mark.parametrize("counter", [0, 5, 2**63, 2**64 - 2])
def test_batch_random_draws_are_splitmix64_outputs(counter):
    keys = list(KNOWN_KEYS.values())
    batch = BatchRandom(np.array(keys, dtype=np.uint64),
                        np.full(len(keys), counter, dtype=np.uint64))
    bits = batch.bits((3,))
    uniform = batch.random((2,))
    for i, k in enumerate(keys):
        expect = words(k, counter, 5)
        assert [int(b) for b in bits[i]] == expect[:3]
        assert uniform[i].tolist() == [unit(w) for w in expect[3:]]
        assert int(batch.counter[i]) == (counter + 5) & MASK


@pytest.mark.parametrize("env_id", batchenv.list_envs())
def test_reset_seed_s_gives_row_i_the_stream_of_s_plus_i(env_id):
    """Every registered env: after ``reset(seed=s)`` row i holds the key of seed s + i (the
    known answer, not a batch of one), and with a seed list, each given row its entry's."""
    n, s = 5, 1000
    env = batchenv.make(env_id, num_envs=n)
    try:
        env.reset(seed=s)
        assert [int(k) for k in env.get_state()["rng_key"]] == [key_of(s + i) for i in range(n)]
        before = env.get_state()["rng_key"].copy()
        env.reset(seed=[7, None, 2, None, 2**40 + 3])
        got = [int(k) for k in env.get_state()["rng_key"]]
        assert got == [KNOWN_KEYS[7], int(before[1]), KNOWN_KEYS[2], int(before[3]),
                       KNOWN_KEYS[2**40 + 3]]
    finally:
        env.close()


def test_pong_serve_uses_the_first_three_words_of_the_stream():
    """BatchPong's documented serve (docs/pong.md, "The rules"): from a fresh seed, the first
    three draws are side, row and vy: x = 20, y = 7.5 + u_row * 14.5, vx = -1 if u_side < 0.5
    else +1, vy = 2 u_vy - 1 (float32)."""
    n, s = 6, 40
    env = batchenv.BatchPong(n)
    env.reset(seed=s)
    st = env.get_state()
    for i in range(n):
        side, row, vy = (unit(w) for w in words(key_of(s + i), 0, 3))
        assert st["ball_x"][i] == np.float32(20.0)
        assert st["ball_y"][i] == np.float32(7.5 + row * 14.5)
        assert st["ball_vx"][i] == (-1.0 if side < 0.5 else 1.0)
        assert st["ball_vy"][i] == np.float32(2 * vy - 1)
        assert int(st["rng_counter"][i]) == 3
