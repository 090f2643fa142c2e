"""What the classic-control envs share: parameters given as keywords, a sparse reset, and
fast start-state draws.

The sparse reset is a workaround (see :class:`ClassicControlEnv`): ``BatchEnv._reset_subset``
copies the rows being reset out of the state and back (``take_rows``/``put_rows``: eight
block copies with fancy indexing) around ``reset_envs``; a classic-control env writes its
few start-state fields straight into the rows instead, which halves the cost of the
auto-reset path (it runs on most steps: a random CartPole episode lasts ~22 steps, so ~5% of
the envs reset on every step).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import numpy as np

from batchenv.core import BatchEnv
from batchenv.random import BatchRandom
from batchenv.state import State

P = TypeVar("P")

#: Below this many envs one transposed copy writes an (n, k) observation fastest; above it
#: k column copies do (numpy's transposed copy costs ~0.7 ns per element, a column copy
#: ~0.25 ns).
SMALL_BATCH = 1024


def params_from(cls: type[P], params: P | None, kwargs: dict[str, Any]) -> P:
    """``params`` (or the defaults) with the fields named in ``kwargs`` replaced; those
    keywords are removed from ``kwargs`` (the rest go to :class:`~batchenv.BatchEnv`)."""
    names = {f.name for f in dataclasses.fields(cls)}
    overrides = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
    if params is not None and not isinstance(params, cls):
        raise TypeError(f"params must be a {cls.__name__}, got {type(params).__name__}")
    return dataclasses.replace(params if params is not None else cls(), **overrides)


def write_columns(out: np.ndarray, rows: np.ndarray | list[np.ndarray]) -> None:
    """``out[:, j] = rows[j]`` for every j (casting), the fastest way for ``len(out)``."""
    if len(out) <= SMALL_BATCH and isinstance(rows, np.ndarray):
        np.copyto(out, rows.T, casting="same_kind")
    else:
        for j, row in enumerate(rows):
            out[:, j] = row


class ClassicControlEnv(BatchEnv):
    """A :class:`~batchenv.BatchEnv` whose start states are written row by row.

    Subclasses implement :meth:`reset_rows` instead of ``reset_envs``, drawing with
    :func:`uniform_rows` from the rows' own streams. Overriding the base class's private
    ``_reset_subset`` is the workaround described in the module docstring; the rows draw
    exactly the random words ``reset_envs`` would, so seeding semantics are unchanged.
    """

    def reset_rows(self, s: State, rows: np.ndarray | slice) -> None:
        """Write start states into rows ``rows`` of ``s`` (draws: :func:`uniform_rows`)."""
        raise NotImplementedError

    def reset_envs(self, s: State, rng: BatchRandom) -> None:
        # rng is BatchRandom(s.rng_key, s.rng_counter): uniform_rows draws from those columns
        self.reset_rows(s, slice(None))

    def _reset_subset(self, idx: np.ndarray) -> None:
        s = self.state
        self.reset_rows(s, idx)
        s.elapsed_steps[idx] = 0
        s.awaiting_reset[idx] = False


# SplitMix64, exactly as batchenv.random.BatchRandom computes it (a test checks that
# uniform_rows equals BatchRandom.uniform bit for bit), as 0-d arrays: cheaper operands.
_U = np.uint64
_GOLDEN = np.array(0x9E3779B97F4A7C15, dtype=_U)
_MIX1 = np.array(0xBF58476D1CE4E5B9, dtype=_U)
_MIX2 = np.array(0x94D049BB133111EB, dtype=_U)
_S30, _S27, _S31, _S11 = (np.array(k, dtype=_U) for k in (30, 27, 31, 11))
_STEPS = np.arange(8, dtype=_U) * _GOLDEN  # offsets of a row's next 8 words
_COUNTS = [np.array(k, dtype=_U) for k in range(9)]


def uniform_rows(s: State, rows: np.ndarray | slice, low: Any, high: Any,
                 k: int) -> np.ndarray:
    """The next ``k`` uniform float64 draws in [low, high) of each row ``rows`` of ``s``,
    from the rows' own streams (``s.rng_key``, ``s.rng_counter``), shape ``(k, rows)`` (one
    line per draw, ready for the state's field-major blocks): bit for bit the transpose of
    ``BatchRandom(s.rng_key, s.rng_counter).at(rows).uniform(low, high, (k,))``, in half
    the numpy calls (the start-state draw runs on most steps, for a few rows, where each
    call's ~0.3 us overhead is the whole cost). ``low``/``high``: scalars or ``(k,)``."""
    counter = s.rng_counter
    c = counter[rows]
    x = c * _GOLDEN
    x += s.rng_key[rows]
    counter[rows] = c + _COUNTS[k]
    x = np.add(_STEPS[:k, None], x)
    t = x >> _S30
    x ^= t
    x *= _MIX1
    np.right_shift(x, _S27, out=t)
    x ^= t
    x *= _MIX2
    np.right_shift(x, _S31, out=t)
    x ^= t
    x >>= _S11
    # ((x * 2**-53) * (high - low)) + low, as BatchRandom; scaling by 2**-53 is exact, so
    # folding it into the width changes no bit
    if np.ndim(low) or np.ndim(high):  # one bound per draw: columns
        low = np.asarray(low, dtype=np.float64)[:, None]
        high = np.asarray(high, dtype=np.float64)[:, None]
    u = x * (np.subtract(high, low, dtype=np.float64) * 2.0**-53)
    u += low
    return u
