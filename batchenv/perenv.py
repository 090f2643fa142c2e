"""Per-env kernels: the rules of *one* env as plain scalar code, run over the whole batch.

The second way to write a :class:`~batchenv.BatchEnv` (the first is vectorized numpy
kernels). An env class that defines the three static functions

* ``reset_env(p, s, i)``: write row ``i``'s start state;
* ``step_env(p, s, i, action) -> (reward, terminated)``: advance row ``i`` by one step with
  its action (a scalar for ``Discrete``, a 1-D array for ``Box``/``MultiDiscrete``);
* ``observe_env(p, s, i, obs)``: write row ``i``'s observation into ``obs`` (``out[i]``);

gets them compiled by numba into one loop over the batch, the CPU twin of CUDA's SIMT model
(one program, one lane per env). ``s`` is a namedtuple of the state's field arrays over the
batch (the base columns too), ``p`` a namedtuple of the instance attributes the class names
in ``kernel_params`` (read again after one of them is set); a class may add views of the state
(``kernel_views``: names, and its static ``state_views(s)`` giving the arrays, e.g. slot
columns as one ``(fields, slots, n)`` block) that the kernels read as ``s.<name>``, and hide
the fields the views cover (``kernel_hidden_fields``: numba compiles a namedtuple of hundreds
of arrays for minutes). Random draws come from row ``i``'s own
stream, word for word the words :class:`~batchenv.random.BatchRandom` gives that row
(:func:`bits`, :func:`random`, :func:`integers`, :func:`uniform`, :func:`bernoulli`,
:func:`normal`), so both forms share one random scheme. Helpers the kernels call are
decorated with :func:`rule`.

The base class's own per-step work (time limits, ``terminated``/``truncated``, the three
auto-reset modes, the observation) runs inside the same compiled loop: a finished env is
reset in the pass that finishes it (SAME_STEP) or that follows (NEXT_STEP). Without numba
the same functions run as a plain Python loop: correct, slow, and a breakpoint inside a
kernel stops there (``kernels="python"`` chooses it on purpose). See
``docs/writing_envs.md``, "Per-env kernels".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from batchenv.forms import KERNEL_CHOICES, PER_ENV_KERNELS, numba_available

__all__ = ["rule", "bits", "random", "integers", "uniform", "bernoulli", "normal", "words",
           "numba_available", "PER_ENV_KERNELS", "KERNEL_CHOICES"]


def _register_jitable(f: Any, inline: bool) -> Any:
    """numba's ``register_jitable`` when numba is installed, else the function itself."""
    if not numba_available():  # pragma: no cover (CI installs numba)
        return f
    import numba

    if inline:
        return numba.njit(inline="always")(f)
    from numba.extending import register_jitable
    return register_jitable(f)


def rule(f: Callable[..., Any] | None = None, *, inline: bool = True) -> Any:
    """Mark a helper that per-env kernels call: numba compiles it into the loop (when numba
    is installed); called from Python it is the plain function. ``@rule`` or
    ``@rule(inline=False)``.

    By default numba puts the helper's code into every place that calls it, before it
    compiles the caller: the loop then passes no arrays to a call, and a call that takes
    ``p`` and ``s`` (every array of the state is several values) costs more than most
    rules' work (docs/performance.md, "Per-env kernels: the step around the rules").
    ``inline=False`` leaves it a function of its own, compiled once: for a large helper
    called from many places, whose copies would lengthen the compile more than the calls
    cost."""
    if f is None:
        return lambda g: _register_jitable(g, inline)
    return _register_jitable(f, inline)


# ---------------------------------------------------------------- random draws (row i)
# batchenv.random's SplitMix64 on one word. uint64 constants: numba would make float64 of a
# uint64 and a Python int.
_U = np.uint64
_GOLDEN = _U(0x9E3779B97F4A7C15)
_MIX1 = _U(0xBF58476D1CE4E5B9)
_MIX2 = _U(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = _U(30), _U(27), _U(31), _U(11)
_ONE = _U(1)
_TO_UNIT = 2.0**-53


@rule
def bits(s: Any, i: int) -> np.uint64:
    """Row ``i``'s next raw uint64 word; advances its counter by one."""
    c = s.rng_counter[i]
    s.rng_counter[i] = c + _ONE
    x = s.rng_key[i] + c * _GOLDEN
    x = (x ^ (x >> _S30)) * _MIX1
    x = (x ^ (x >> _S27)) * _MIX2
    return x ^ (x >> _S31)


@rule
def random(s: Any, i: int) -> float:
    """Uniform float64 in [0, 1) from 53 bits of row ``i``'s next word."""
    return float((bits(s, i) >> _S11) * _TO_UNIT)


@rule
def uniform(s: Any, i: int, low: float, high: float) -> float:
    """Uniform in [low, high) (float64), the formula of ``BatchRandom.uniform``."""
    return float((bits(s, i) >> _S11) * ((high - low) * _TO_UNIT) + low)


@rule
def integers(s: Any, i: int, low: int, high: int) -> int:
    """An integer uniform in [low, high) (``BatchRandom.integers``: ``low + word % span``);
    ValueError when ``high <= low``, in both forms (nothing is drawn)."""
    if high <= low:
        raise ValueError("perenv.integers(s, i, low, high) needs high > low")
    return int(np.int64(bits(s, i) % _U(high - low)) + low)


@rule
def bernoulli(s: Any, i: int, prob: float) -> bool:
    """True with probability ``prob``."""
    return random(s, i) < prob


@rule
def normal(s: Any, i: int, loc: float, scale: float) -> float:
    """A Gaussian draw (Box-Muller on two words, as ``BatchRandom.normal``)."""
    u0 = random(s, i)
    u1 = random(s, i)
    r = np.sqrt(-2.0 * np.log1p(-u0))
    return float(loc + scale * r * np.cos(2.0 * np.pi * u1))


# ---------------------------------------------------------------- whole words
def words(a: np.ndarray) -> np.ndarray:
    """The bytes of a C-contiguous array (``obs``, a row of a field) as uint64 words: a
    view, no copy; ``size_in_bytes // 8`` words (a last partial word is left out). For an
    ``observe_env`` that clears a board or copies rows from a table of row images eight
    bools at a time. Compiled, it is a view over the same memory (``numba.carray``), which
    costs nothing in an env's pass where numba's ``reshape`` calls a C helper."""
    if not a.flags.c_contiguous:  # (reshape would copy: writes would go nowhere)
        raise ValueError(f"words: the array must be C-contiguous, got strides {a.strides} "
                         f"for shape {a.shape}")
    flat = a.reshape(-1).view(np.uint8)
    return flat[:len(flat) // 8 * 8].view(np.uint64)


if numba_available():  # words and the loop's helpers typed by numba, also for a rule that
    from batchenv import _borrow  # Python calls (compiled on its own)

    _borrow.install()
