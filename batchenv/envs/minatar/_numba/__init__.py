"""The private numba layer of the MinAtar games, now Seaquest's only (``_numba/seaquest.py``):
its rules compiled into loops over the envs beside its numpy kernels (``pip install
batchenv[fast]``). The other four games have per-env kernels (``reset_env``, ``step_env``,
``observe_env`` in their modules, run by :mod:`batchenv.perenv`); Seaquest moves there too,
and this package goes, when it is converted (docs/minatar.md).

Why a second implementation. A MinAtar step is a few dozen small decisions per env (a
bullet here, a spawn there); as numpy kernels each decision is a call over the whole batch,
and at a few thousand envs the calls' fixed cost and the passes over memory dominate
(``docs/performance.md``, "MinAtar: the numba layer"). Compiled, one pass per env does the
whole step. The numpy kernels stay the definition of the rules: every game's numba module
is tested step for step against them (``tests/test_minatar_numba.py``, every auto-reset
mode, state included) and against the ``minatar`` package
(``tests/test_minatar_parity.py`` runs both layers), and a game works without numba.

The contract of a game's module ``batchenv/envs/minatar/_numba/<game>.py``: two functions
with the signatures of the kernels they stand in for, ``step_envs(env, s, action, rng)``
and ``observe(env, s, out)``, which unpack the state's field arrays and call ``@njit``
loops. The loops follow the numpy kernels' order of decisions and draw the same random
words: a row draws its step words and event words from its own stream in the same order
(:func:`next_word`), so the counters end where the numpy kernels leave them; a row awaiting
a reset (its step is discarded: ``MinAtarEnv.discarded_rows``) draws nothing and changes
nothing (:func:`game_action` tells).

What the games' loops taught (each a measured difference):

* An inlined helper that takes the state's arrays and writes them inside a branch (``if``,
  ``and``/``or``, a conditional expression) makes numba keep reference counting of those
  arrays at every call in the loop (docs/performance.md has what it cost). Helpers
  that take arrays write them unconditionally (a chosen value); helpers with branches
  take and return scalars.
* Write each env's observation in one pass, clearing and drawing its cells while they are
  in cache, and copy rows that change rarely (bricks, the aliens' rows) from a table of
  row images rather than setting cell by cell.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numba import njit

__all__ = ["jit", "jit_borrowing", "cell", "flat_cells", "next_word", "mix", "game_action",
           "rand_below", "randint", "sticky_limit"]

#: The decorator of every loop: compiled on first use and cached on disk (``__pycache__``),
#: no fastmath (the rules are integer and float arithmetic that must match numpy's exactly).
jit = njit(cache=True, nogil=True)


def _private_njit(**options: Any) -> Any:
    """``njit`` with options its type stubs do not list (``_nrt``)."""
    decorator: Any = njit
    return decorator(**options)


def _jit_without_refcounts() -> Any:
    """``jit`` without numba's reference counting (``_nrt=False``, a private option of
    numba's), for loops that allocate nothing and only borrow their caller's arrays; plain
    :data:`jit` (the same results, slower) if this numba refuses the option."""
    try:
        probe = _private_njit(_nrt=False)(lambda a: a[0])
        probe(np.zeros(1))
    except Exception:  # noqa: BLE001 (any refusal: the option is not public)
        return jit
    return _private_njit(cache=True, nogil=True, _nrt=False)


#: :data:`jit` without reference counting where numba allows it (Seaquest's loops: their
#: inlined rule helpers take arrays and branch, and numba then counts references to every
#: array at every call, an atomic pair per array per env).
jit_borrowing = _jit_without_refcounts()

_U = np.uint64
GOLDEN = _U(0x9E3779B97F4A7C15)  # batchenv.random's constants, as uint64 scalars: numba
MIX1 = _U(0xBF58476D1CE4E5B9)  # would make float64 of a uint64 and a Python int
MIX2 = _U(0x94D049BB133111EB)
S30, S27, S31, S11 = _U(30), _U(27), _U(31), _U(11)
ONE = _U(1)


@njit(inline="always")
def mix(x: np.uint64) -> np.uint64:
    """SplitMix64's finaliser (``batchenv.random._mix``) on one word."""
    x = (x ^ (x >> S30)) * MIX1
    x = (x ^ (x >> S27)) * MIX2
    return x ^ (x >> S31)


@njit(inline="always")
def next_word(key: np.ndarray, counter: np.ndarray, i: int) -> np.uint64:
    """Row ``i``'s next random word (``BatchRandom``'s ``splitmix64(key + counter *
    golden)``), advancing its counter by one."""
    c = counter[i]
    counter[i] = c + ONE
    return mix(key[i] + c * GOLDEN)


@njit(inline="always")
def rand_below(word: np.uint64, limit: np.uint64, always: bool) -> bool:
    """``rand() < p`` for the word (``_base.rand_below``; ``limit``, ``always`` from
    :func:`sticky_limit` / ``_base.word_threshold``)."""
    return bool(always or word < limit)


@njit(inline="always")
def randint(word: np.uint64, low: int, high: int) -> int:
    """``randint(low, high)`` for the word: ``low + word % (high - low)``."""
    return low + np.int64(word % _U(high - low))


@functools.lru_cache(maxsize=16)
def sticky_limit(p: float) -> tuple[np.uint64, bool]:
    """``(limit, always)`` for ``rand() < p``: ``word < limit``, or always when ``p >= 1``
    (``_base.word_threshold``)."""
    from batchenv.envs.minatar._base import word_threshold

    limit = word_threshold(p)
    return (_U(0), True) if limit is None else (_U(limit), False)


@njit(inline="always")
def game_action(i: int, action: np.ndarray, action_set: np.ndarray, last_action: np.ndarray,
                key: np.ndarray, counter: np.ndarray, limit: np.uint64, always: bool) -> int:
    """The MinAtar action row ``i`` applies this step (``MinAtarEnv.game_actions``): the
    agent's action through the action set, then MinAtar's sticky draw (step word 0, drawn
    whatever the probability, as the first of the numpy kernels' block of step words: a game
    with more step words draws the others right after); updates ``last_action``."""
    a = np.int8(action_set[action[i]])
    word = next_word(key, counter, i)
    if rand_below(word, limit, always):
        a = last_action[i]
    last_action[i] = a
    return a


def flat_cells(out: np.ndarray) -> np.ndarray:
    """The observation block ``(n, 10, 10, C)`` as one flat view for a loop to write
    (:func:`cell`). ``out`` must be C-contiguous (the base class's buffers and every
    array it hands to ``observe`` are); a ValueError says so otherwise, rather than the
    loop writing into a copy that nobody reads."""
    if not out.flags.c_contiguous:
        raise ValueError(f"observe: out must be a C-contiguous array, got strides "
                         f"{out.strides} for shape {out.shape}")
    return out.reshape(-1)


@njit(inline="always")
def cell(i: int, y: int, x: int, c: int, channels: int) -> int:
    """The index of env ``i``'s cell ``(y, x)``, channel ``c``, in :func:`flat_cells`."""
    return ((i * 10 + y) * 10 + x) * channels + c
