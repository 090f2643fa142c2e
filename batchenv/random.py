"""Per-env counter-based random streams.

Every env row owns a 64-bit *key* (a hash of its seed) and a 64-bit *counter*. The ``j``-th
random word of row ``i`` is ``splitmix64(key[i] + (counter[i] + j) * GOLDEN)``: the SplitMix64
generator (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014),
evaluated at an arbitrary position in a handful of vectorized numpy operations. So

* a row's stream depends only on its own seed, never on ``num_envs`` or on other rows;
* drawing for k rows costs O(k) with no Python loop, and draws for a sparse subset of rows
  (the envs being reset) touch only those rows;
* the whole generator state is two ``uint64`` columns, which ``get_state``/``set_state``
  snapshot and restore exactly.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["BatchRandom", "seed_keys"]

# Constants as 0-d arrays: a ufunc call with an array operand is cheaper than with a scalar,
# and these calls run on every reset, for a handful of rows, where overhead is the cost.
_U64 = np.uint64
_GOLDEN = np.array(0x9E3779B97F4A7C15, dtype=_U64)  # 2**64 / golden ratio, the increment
_MIX1 = np.array(0xBF58476D1CE4E5B9, dtype=_U64)  # SplitMix64 finaliser (Stafford's Mix13)
_MIX2 = np.array(0x94D049BB133111EB, dtype=_U64)
_SEED_SALT = np.array(0x5851F42D4C957F2D, dtype=_U64)  # separates seed hashing from positions
_S30, _S27, _S31, _S11 = (np.array(k, dtype=_U64) for k in (30, 27, 31, 11))
_TO_UNIT = 2.0**-53
_OFFSETS = np.arange(64, dtype=_U64) * _GOLDEN  # stream offsets of a row's next 64 words
_COUNTS = [np.array(k, dtype=_U64) for k in range(65)]
_ROW_OFFSETS = [_OFFSETS[None, :k] for k in range(65)]  # (1, k): broadcast against a column
_COLUMN_OFFSETS = [_OFFSETS[:k, None] for k in range(65)]  # (k, 1): broadcast against a row

MAX_SEED = 2**63 - 1


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, in place on a uint64 array (wrapping arithmetic)."""
    t = x >> _S30
    x ^= t
    x *= _MIX1
    np.right_shift(x, _S27, out=t)
    x ^= t
    x *= _MIX2
    np.right_shift(x, _S31, out=t)
    x ^= t
    return x


def seed_keys(seeds: np.ndarray) -> np.ndarray:
    """Stream keys for integer seeds (one per row): two rounds of mixing, so seeds s and s+1
    give unrelated streams."""
    x = np.asarray(seeds, dtype=np.uint64) * _GOLDEN
    x += _SEED_SALT
    return _mix(_mix(x))


class BatchRandom:
    """Random draws for a batch of rows, one independent stream per row.

    ``key`` and ``counter`` are the rows' uint64 state columns; draws advance ``counter`` in
    place. Every method returns an array whose first axis is the row; ``shape`` adds trailing
    axes (draws per row). Each call advances every row's counter by the number of values
    drawn per row, whether the caller uses them or not, so a row's stream never depends on
    what other rows do.
    """

    __slots__ = ("key", "counter", "index")

    def __init__(self, key: np.ndarray, counter: np.ndarray,
                 index: np.ndarray | None = None) -> None:
        self.key = key
        self.counter = counter
        self.index = index

    def __len__(self) -> int:
        return len(self.key) if self.index is None else len(self.index)

    def at(self, index: np.ndarray) -> BatchRandom:
        """The streams of rows ``index`` only (draws advance just those rows' counters)."""
        return BatchRandom(self.key, self.counter, np.asarray(index))

    def bits(self, shape: tuple[int, ...] = ()) -> np.ndarray:
        """Raw uint64 words, shape ``(rows, *shape)``."""
        per_row = math.prod(shape)
        x = self._advance(per_row)
        if shape:
            offsets = (_ROW_OFFSETS[per_row] if per_row <= 64
                       else np.arange(per_row, dtype=_U64)[None] * _GOLDEN)
            x = np.add(x.reshape(-1, 1), offsets)
            if len(shape) > 1:
                x = x.reshape((len(x), *shape))
        return _mix(x)

    def draws(self, count: int) -> np.ndarray:
        """``count`` raw uint64 words per row, draw-major: a ``(count, rows)`` array whose
        entry ``[j, i]`` is entry ``[i, j]`` of ``bits((count,))`` (the same stream positions,
        and the counters advance alike). Each draw is then a contiguous row, which is
        cheaper to compute with than a column of a ``(rows, count)`` array."""
        if not 0 <= count <= 64:
            raise ValueError(f"draws: count must be in [0, 64], got {count}")
        return _mix(np.add(_COLUMN_OFFSETS[count], self._advance(count)))

    def _advance(self, per_row: int) -> np.ndarray:
        """The stream position of each row's next word (``key + counter * golden``);
        advances the counters by ``per_row``."""
        step = _COUNTS[per_row] if per_row <= 64 else np.array(per_row, dtype=_U64)
        if self.index is None:
            x = self.counter * _GOLDEN
            x += self.key
            self.counter += step
        else:
            counter = self.counter[self.index]
            x = counter * _GOLDEN
            x += self.key[self.index]
            counter += step
            self.counter[self.index] = counter
        return x

    def random(self, shape: tuple[int, ...] = ()) -> np.ndarray:
        """Uniform float64 in [0, 1), 53 random bits each."""
        x = self.bits(shape)
        x >>= _S11
        return x * _TO_UNIT

    def uniform(self, low: float | np.ndarray = 0.0, high: float | np.ndarray = 1.0,
                shape: tuple[int, ...] = (), dtype: type = np.float64) -> np.ndarray:
        """Uniform in [low, high), computed in float64 then cast to ``dtype``; ``low`` and
        ``high`` broadcast against ``shape`` (e.g. one bound per trailing entry)."""
        x = self.bits(shape)
        x >>= _S11
        # (x * 2**-53) * (high - low) + low; the power-of-two scale folds into the width
        # exactly, so this is bit for bit that formula, in one multiply
        width: float | np.ndarray
        if isinstance(low, (int, float)) and isinstance(high, (int, float)):
            width = float(high) - float(low)  # a Python float is an IEEE double: same result
        else:
            width = np.subtract(high, low, dtype=np.float64)
        u = x * (width * _TO_UNIT)
        u += low
        return u if dtype is np.float64 else u.astype(dtype, copy=False)

    def integers(self, low: int, high: int, shape: tuple[int, ...] = ()) -> np.ndarray:
        """Integers uniform in [low, high) (int64)."""
        if high <= low:
            raise ValueError(f"integers: need low < high, got low={low}, high={high}")
        span = np.uint64(high - low)
        return (self.bits(shape) % span).astype(np.int64) + low

    def bernoulli(self, p: float, shape: tuple[int, ...] = ()) -> np.ndarray:
        """Booleans, True with probability ``p``."""
        return self.random(shape) < p

    def normal(self, loc: float = 0.0, scale: float = 1.0,
               shape: tuple[int, ...] = ()) -> np.ndarray:
        """Gaussian draws (Box-Muller on two uniform words per value)."""
        u = self.random((*shape, 2))
        r = np.sqrt(-2.0 * np.log1p(-u[..., 0]))
        return loc + scale * r * np.cos(2.0 * np.pi * u[..., 1])
