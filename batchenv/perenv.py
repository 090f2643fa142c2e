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
in ``kernel_params`` (read again at every ``reset``); a class may add views of the state
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

import collections
import hashlib
import importlib.util
import os
import threading
import warnings
from collections.abc import Callable
from sys import getrefcount
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from gymnasium.vector import AutoresetMode

if TYPE_CHECKING:
    from batchenv.core import BatchEnv
    from batchenv.state import State

__all__ = ["rule", "bits", "random", "integers", "uniform", "bernoulli", "normal", "words",
           "numba_available", "PER_ENV_KERNELS", "KERNEL_CHOICES"]

#: The three static functions that make a class a per-env env.
PER_ENV_KERNELS = ("reset_env", "step_env", "observe_env")
#: ``kernels=`` values.
KERNEL_CHOICES = ("auto", "numpy", "numba", "python")
_MODES = {AutoresetMode.NEXT_STEP: 0, AutoresetMode.SAME_STEP: 1, AutoresetMode.DISABLED: 2}


def numba_available() -> bool:
    """Whether numba can be imported (``pip install "batchenv[fast]"``)."""
    return importlib.util.find_spec("numba") is not None


def _register_jitable(f: Any, inline: bool = False) -> Any:
    """numba's ``register_jitable`` when numba is installed, else the function itself."""
    if not numba_available():  # pragma: no cover (CI installs numba)
        return f
    from numba.extending import register_jitable

    return register_jitable(inline="always" if inline else "never")(f)


def rule(f: Callable[..., Any] | None = None, *, inline: bool = False) -> Any:
    """Mark a helper that per-env kernels call: numba compiles it into the loop (when numba
    is installed); called from Python it is the plain function. ``@rule`` or
    ``@rule(inline=True)``.

    ``inline=True`` puts the helper's code into every place that calls it, before numba
    compiles the caller; by default LLVM decides, and may leave a large helper a call.
    A call passes its arguments by value, and ``p`` and ``s`` are many values (every
    array of the state is seven): for a large helper that takes them, called in every
    env's pass, the copy costs more than its work. Inlining compiles the helper once per
    place, so use it for a few large helpers called from one or two places (BatchPong's
    ``substep``), not for small ones called everywhere (docs/performance.md, "Per-env
    kernels: the step around the rules")."""
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
    """An integer uniform in [low, high) (``BatchRandom.integers``: ``low + word % span``)."""
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
    bools at a time. Compiled, it is a view made in place (numba's ``reshape`` calls a C
    helper, in every env's pass: docs/performance.md)."""
    if not a.flags.c_contiguous:  # (reshape would copy: writes would go nowhere)
        raise ValueError(f"words: the array must be C-contiguous, got strides {a.strides} "
                         f"for shape {a.shape}")
    flat = a.reshape(-1).view(np.uint8)
    return flat[:len(flat) // 8 * 8].view(np.uint64)


def _compile_words() -> None:
    """``words`` for numba, as a builtin typed and lowered in place (an overload would be a
    function returning a new view, which numba refuses without reference counting): the
    view made from the array's data pointer and size (C-contiguous arrays only: anything
    else fails to compile)."""
    from numba.core import types
    from numba.core.imputils import impl_ret_borrowed, lower_builtin
    from numba.extending import type_callable
    from numba.np.arrayobj import make_array, populate_array

    word_array = types.Array(types.uint64, 1, "C")

    @type_callable(words)
    def type_words(context: Any) -> Any:
        def typer(a: Any) -> Any:
            if isinstance(a, types.Array) and a.layout == "C":
                return word_array
            return None

        return typer

    @lower_builtin(words, types.Array)
    def lower_words(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        src = make_array(sig.args[0])(context, builder, args[0])
        view = make_array(word_array)(context, builder)
        eight = context.get_constant(types.intp, 8)
        n = builder.udiv(builder.mul(src.nitems, src.itemsize), eight)
        populate_array(view, data=builder.bitcast(src.data, view.data.type), shape=[n],
                       strides=[eight], itemsize=eight, meminfo=src.meminfo, parent=src.parent)
        return impl_ret_borrowed(context, builder, word_array, view._getvalue())


if numba_available():
    _compile_words()


# ---------------------------------------------------------------- the actions' check
def first_bad_action(action: np.ndarray, low: np.ndarray, high: np.ndarray, lo: int,
                     hi: int) -> int:
    """The first row in ``[lo, hi)`` whose action is out of range (``low <= a < high``,
    elementwise for ``MultiDiscrete`` rows), or -1; the fused step's check. Float actions
    (``Box``, checked by the Python checker before the loop) always pass. Compiled: one
    branch-free pass over the batch (it vectorizes), and a second only if it found one."""
    if action.dtype.kind == "f":
        return -1
    rows = action[lo:hi].reshape(hi - lo, -1)
    bad = ((rows < low) | (rows >= high)).any(axis=1)
    return int(lo + bad.argmax()) if bad.any() else -1


def _compile_first_bad_action() -> None:
    from numba.core import types
    from numba.extending import overload

    @overload(first_bad_action, inline="always")
    def _first_bad(action, low, high, lo, hi):
        if not isinstance(action.dtype, types.Integer):
            def never(action, low, high, lo, hi):
                return -1

            return never
        if action.ndim == 1:  # Discrete
            def one(action, low, high, lo, hi):
                a, b = low[0], high[0]
                bad = False
                for i in range(lo, hi):
                    if i >= 0:  # (always: see run)
                        bad |= (action[i] < a) | (action[i] >= b)
                if bad:
                    for i in range(lo, hi):
                        if i >= 0 and (action[i] < a or action[i] >= b):
                            return i
                return -1

            return one

        def row(action, low, high, lo, hi):  # MultiDiscrete
            bad = False
            for i in range(lo, hi):
                if i >= 0:
                    for k in range(action.shape[1]):
                        bad |= (action[i, k] < low[k]) | (action[i, k] >= high[k])
            if bad:
                for i in range(lo, hi):
                    for k in range(action.shape[1]):
                        if i >= 0 and (action[i, k] < low[k] or action[i, k] >= high[k]):
                            return i
            return -1

        return row


if numba_available():
    _compile_first_bad_action()


# ---------------------------------------------------------------- the loops
# The batch loops around one class's kernels, as the text of a module: the only definition
# of their bodies. :func:`_loops` runs it with the kernels and the decorators as globals set
# beforehand (``reset_env``, ``step_env``, ``observe_env``; ``_outer`` compiles a loop or
# not, ``_inner`` the one function the fused loop calls per env), after a header naming the
# class and the fields of ``s`` and ``p``; with numba and a cache directory, as a
# file whose machine code numba keeps (batchenv/_loop_cache.py). Each loop runs over rows
# ``[lo, hi)``: a thread takes one block of rows (:meth:`Runner._run`).
_LOOPS = '''

@_inner
def env_op(p, s, i, op, chosen, action, reward, terminated, truncated, obs, mode,
           max_steps):  # one env's part of op (see run)
    # each kernel has one call site for every op: numba inlines every call site, so fewer
    # sites compile faster (docs/performance.md, "Compile time")
    r = 0.0
    t = False
    tr = False
    restart = (op == 1 or op == 4) and chosen[i]
    if op == 0 or op == 3:
        if s.awaiting_reset[i]:  # its episode is over: the action is ignored; NEXT_STEP
            restart = op == 0 and mode != 2  # (and SAME_STEP, for a row set awaiting by
        else:  # set_state) resets it now, DISABLED keeps it frozen; op 3 discards it
            r, t = step_env(p, s, i, action[i])
            if op == 0:
                elapsed = s.elapsed_steps[i] + 1
                s.elapsed_steps[i] = elapsed
                tr = elapsed >= max_steps  # (no time limit: max_steps is 2**62)
                if t or tr:  # (SAME_STEP: observed as it ends, reset by op 4 after)
                    s.awaiting_reset[i] = True
    if restart:
        reset_env(p, s, i)
        if op != 1:
            s.elapsed_steps[i] = 0
            s.awaiting_reset[i] = False
    if op == 0 or op == 3:
        reward[i] = r
        terminated[i] = t
        truncated[i] = tr
    if op == 0 or op == 2 or (op == 4 and chosen[i]):
        observe_env(p, s, i, obs[i])


@_outer
def run(p, s, op, chosen, action, low, high, reward, terminated, truncated, obs, mode,
        max_steps, check, lo, hi):
    # op 0: the whole step of rows [lo, hi) in one pass, base class included (step_env,
    # the time limit, the flags, auto-reset in `mode`, observe_env into obs); 4: SAME_STEP's
    # new episodes after it (the rows where `chosen`: reset, then observed into obs);
    # the numpy-form kernels, for the base class's other calls and debug mode:
    # 1 reset_envs / reset_rows (the rows where `chosen`), 2 observe (into obs),
    # 3 step_envs (reward, terminated). check: 1 checks every action's range before any
    # row changes (a refusal changes nothing) and returns the first bad row; 2 only
    # checks (the threads step the blocks after it). Returns -1.
    if check:
        bad = first_bad_action(action, low, high, lo, hi)
        if bad >= 0 or check == 2:
            return bad
    for i in range(lo, hi):
        if i >= 0:  # (always: it tells the compiler so, and then s.x[i] skips numba's
            # wraparound of negative indices, a load and two operations per access;
            # docs/performance.md, "Per-env kernels: no wraparound")
            env_op(p, s, i, op, chosen, action, reward, terminated, truncated, obs, mode,
                   max_steps)
    return -1
'''
#: The loops :data:`_LOOPS` defines, by name.
LOOP_NAMES = ("run",)
#: ``run``'s operations.
STEP, RESET, OBSERVE, STEP_ONLY, RESET_OBSERVE = 0, 1, 2, 3, 4
# numba's options: the kernels and env_op are inlined into the loop (a call that passes
# arrays would count references to each of them, in every env's pass: docs/performance.md);
# nogil: the threads of num_threads > 1 run blocks of rows at once
_INNER_OPTIONS = {"nogil": True, "inline": "always"}
_OUTER_OPTIONS = {"nogil": True}


class _Loops(NamedTuple):
    """A class's loops (by name) and the namedtuple classes their ``s`` and ``p`` are."""

    loops: dict[str, Any]
    state_tuple: Any
    param_tuple: Any
    path: str | None  # the generated module whose machine code numba caches, or None


def _loops_text(cls: type, fields: tuple[str, ...], params: tuple[str, ...]) -> str:
    """The module of ``cls``'s loops: a header naming the class and the fields of ``s`` and
    ``p`` (so that the cache key follows them), then :data:`_LOOPS`."""
    return "\n".join([
        f"# batchenv.perenv: the per-env loops of {cls.__module__}.{cls.__qualname__},",
        "# generated; numba caches their machine code in __pycache__ beside this file.",
        "# Deleting this directory is always safe.",
        f"# s: {_tuple_class('State', fields).__name__}{fields!r}",
        f"# p: {_tuple_class('Params', params).__name__}{params!r}"]) + "\n" + _LOOPS


# The namedtuple classes of ``s`` and ``p``, one per list of names and shared by every class
# with that list: numba tells namedtuple types apart by class, so classes that share them
# (MiniGrid's envs: one state schema, one set of parameters) share the compiled code of the
# rules their kernels call instead of compiling each rule again for each class. The names
# follow from the fields alone, and the classes live in this module, so that the signatures
# numba's disk cache keeps name them by reference in every process.
_TUPLES: dict[tuple[str, tuple[str, ...]], Any] = {}
_TUPLES_LOCK = threading.Lock()


def _tuple_class(kind: str, names: tuple[str, ...]) -> Any:
    """The namedtuple class of ``kind`` (``"State"`` or ``"Params"``) with fields ``names``
    (``tuple`` for no parameters)."""
    if kind == "Params" and not names:
        return tuple
    with _TUPLES_LOCK:  # (envs made on two threads at once get the same class)
        made: Any = _TUPLES.get((kind, names))
        if made is None:
            digest = hashlib.sha256(repr(names).encode()).hexdigest()[:12]
            name = f"Kernel{kind}_{digest}"
            made = collections.namedtuple(name, names)  # type: ignore[misc, no-redef]
            made.__module__ = __name__
            globals()[name] = _TUPLES[(kind, names)] = made
    return made


_COMPILED: dict[tuple[Any, ...], _Loops] = {}


def _loops(cls: type, how: str, borrowing: bool, fields: tuple[str, ...],
           params: tuple[str, ...], dtypes: Any = ()) -> _Loops:
    """The loops of ``cls``'s kernels over a state namedtuple of ``fields`` and parameters
    ``params``: compiled with numba (``how == "numba"``, made once per process; numba
    compiles each on its first call, or finds it in the disk cache) or plain Python.
    ``dtypes``: the fields' dtypes, for the cache key.

    ``borrowing``: compiled without numba's reference counting (its private ``_nrt=False``
    option). The loops only borrow the caller's arrays, and with reference counting every
    access to a field of ``s`` and every ``out[i]`` view costs an atomic increment and
    decrement, in every env's pass: most of a light step's time (docs/performance.md). A
    kernel that allocates arrays needs reference counting: :class:`Runner` then falls back
    to ``borrowing=False`` (the same results)."""
    memo = (cls, how, borrowing, fields, params)
    made = _COMPILED.get(memo)
    if made is not None:
        return made
    kernels = tuple(getattr(cls, name) for name in PER_ENV_KERNELS)
    text = _loops_text(cls, fields, params)
    tuples = (_tuple_class("State", fields), _tuple_class("Params", params))
    if how == "python":
        def plain(f: Any) -> Any:
            return f

        made = _Loops(_run_loops(cls, text, {**dict(zip(PER_ENV_KERNELS, kernels)),
                                             "first_bad_action": first_bad_action},
                                 plain, plain), *tuples, None)
    else:
        import numba

        outer: Any = numba.njit  # (_nrt is not in numba's type stubs)
        inner = outer(**_INNER_OPTIONS)
        outer_options: dict[str, Any] = dict(_OUTER_OPTIONS)
        if borrowing:
            outer_options["_nrt"] = False
        injected = {name: inner(k) for name, k in zip(PER_ENV_KERNELS, kernels)}
        injected["first_bad_action"] = first_bad_action
        cached = _cached_loops(cls, text, kernels, injected, inner, outer, outer_options,
                               dtypes)
        if cached is not None:
            made = _Loops(cached[0], *tuples, cached[1])
        else:
            made = _Loops(_run_loops(cls, text, injected, inner, outer(**outer_options)),
                          *tuples, None)
    _COMPILED[memo] = made
    return made


def _run_loops(cls: type, text: str, injected: dict[str, Any], inner: Any,
               outer: Any) -> dict[str, Any]:
    """The loops of ``text`` by name, run in memory (compiled in every process)."""
    namespace: dict[str, Any] = {"__name__": f"{__name__}.<loops of {cls.__qualname__}>",
                                 **injected, "_inner": inner, "_outer": outer}
    exec(compile(text, f"<batchenv loops of {cls.__qualname__}>", "exec"), namespace)
    return {name: namespace[name] for name in LOOP_NAMES}


def _cached_loops(cls: type, text: str, kernels: tuple[Any, ...], injected: dict[str, Any],
                  inner: Any, outer: Any, outer_options: dict[str, Any],
                  dtypes: Any) -> tuple[dict[str, Any], str] | None:
    """The loops of ``text`` by name, and the path of the module in the cache directory
    that defines them, their machine code cached by numba; None when the cache is off,
    unwritable, or cannot key the class."""
    from batchenv import _loop_cache

    directory = _loop_cache.cache_dir()
    if directory is None:
        return None
    try:
        key = _loop_cache.key(cls, kernels, text,
                              (_INNER_OPTIONS, sorted(outer_options.items()), dtypes))
    except _loop_cache.Uncachable as e:
        _loop_cache.log.debug("%s: per-env loops not cached: %s", cls.__qualname__, e)
        return None
    name = f"_batchenv_loops_{cls.__name__}_{key[:24]}"
    try:
        module = _loop_cache.load(name, text, directory, {
            **injected, "_inner": inner, "_outer": outer(cache=True, **outer_options)})
    except OSError as e:
        _loop_cache.log.debug("%s: per-env loops not cached: %s", cls.__qualname__, e)
        return None
    return {n: getattr(module, n) for n in LOOP_NAMES}, str(module.__file__)


# Beside a cached module whose loops compile only with reference counting: the processes
# after the first compile those straight away
_NEEDS_COUNTING = ".counting"


def _remember_counting(loop: Any) -> None:
    path = getattr(loop.py_func, "__globals__", {}).get("__file__")
    if path is not None:
        try:
            open(path + _NEEDS_COUNTING, "w").close()
        except OSError:
            pass


_warned_no_numba: set[type] = set()


def has_per_env_kernels(cls: type) -> bool:
    """Whether ``cls`` defines the per-env kernels (all three)."""
    present = [callable(getattr(cls, name, None)) for name in PER_ENV_KERNELS]
    if any(present) and not all(present) and not has_numpy_kernels(cls):
        missing = [n for n, ok in zip(PER_ENV_KERNELS, present) if not ok]
        raise TypeError(f"{cls.__name__} defines some per-env kernels but not {missing}: a "
                        f"per-env env defines all of {list(PER_ENV_KERNELS)}")
    return all(present)


def has_numpy_kernels(cls: type) -> bool:
    """Whether ``cls`` (below BatchEnv) defines its own numpy kernels."""
    from batchenv.core import BatchEnv

    return all(getattr(cls, name) is not getattr(BatchEnv, name)
               for name in ("reset_envs", "step_envs", "observe"))


def choose(cls: type, kernels: str, num_threads: int | None) -> tuple[str, int]:
    """``(kernels, num_threads)`` resolved for ``cls``: which form runs, on how many
    threads; ValueError/ImportError for a choice the class or the machine cannot run."""
    if kernels not in KERNEL_CHOICES:
        raise ValueError(f"kernels must be one of {list(KERNEL_CHOICES)}, got {kernels!r}")
    per_env = has_per_env_kernels(cls)
    if num_threads is not None and (not isinstance(num_threads, (int, np.integer))
                                    or isinstance(num_threads, bool) or num_threads < 1):
        raise ValueError(f"num_threads must be a positive int or None, got {num_threads!r}")
    if not per_env:
        if kernels in ("numba", "python"):
            raise ValueError(f"kernels={kernels!r}: {cls.__name__} has no per-env kernels "
                             f"({', '.join(PER_ENV_KERNELS)}); use kernels='numpy' or 'auto'")
        if num_threads not in (None, 1):
            raise ValueError(f"num_threads={num_threads}: {cls.__name__} has numpy kernels, "
                             f"which run on one thread; num_threads needs per-env kernels")
        return "numpy", 1
    if kernels == "numpy" and not has_numpy_kernels(cls):
        raise ValueError(f"kernels='numpy': {cls.__name__} has only per-env kernels; use "
                         f"'auto', 'numba' or 'python'")
    if kernels == "numba" and not numba_available():
        raise ImportError("kernels='numba' needs numba: pip install 'batchenv[fast]' (or use "
                          "kernels='python')")
    if kernels == "auto":
        if numba_available():
            kernels = "numba"
        elif has_numpy_kernels(cls):
            kernels = "numpy"
        else:
            kernels = "python"
            if cls not in _warned_no_numba:
                _warned_no_numba.add(cls)
                warnings.warn(f"{cls.__name__}: numba is not installed, so its per-env "
                              f"kernels run as a Python loop (correct, slow); pip install "
                              f"'batchenv[fast]' compiles them", stacklevel=4)
    threads = 1 if num_threads is None else int(num_threads)
    if kernels != "numba" and threads != 1:
        raise ValueError(f"num_threads={threads} needs kernels='numba' (got {kernels!r})")
    return kernels, threads


class Runner:
    """What a per-env env runs: the loops of its class's kernels, bound as its numpy-form
    kernels (so that everything built on those, ``check_env``, debug mode, sharding, works
    unchanged) and as the fused :meth:`step`."""

    def __init__(self, env: BatchEnv, kernels: str, num_threads: int) -> None:
        cls = type(env)
        self.cls = cls
        self.kernels = kernels
        self.num_threads = num_threads
        self.borrowing = kernels == "numba"
        self._workers: _Workers | None = None
        self._bounds: dict[tuple[int, int], list[int]] = {}  # the threads' blocks of rows
        # the fused step's compiled entry point, and the arguments it was found for
        self._entry: Any = None
        self._entry_for: tuple[Any, ...] = (None,) * 6
        self._compiled = False  # run called (so compiled) already
        hidden = set(getattr(cls, "kernel_hidden_fields", ()))
        self.hidden = hidden
        dtype = env.full_state_dtype
        names = tuple(n for n in dtype.names or () if n not in hidden)
        self.view_names = tuple(getattr(cls, "kernel_views", ()))
        self.state_views: Any = getattr(cls, "state_views", None)
        if self.view_names and not callable(self.state_views):
            raise TypeError(f"{cls.__name__} names kernel_views {list(self.view_names)} but "
                            f"has no static state_views(s) giving them")
        clash = sorted(set(names) & set(self.view_names))
        if clash:
            raise TypeError(f"{cls.__name__}.kernel_views {clash} are also state fields: "
                            f"a view needs a name of its own")
        self.param_names = tuple(getattr(cls, "kernel_params", ()))
        self._fields_of: dict[int, tuple[Any, Any]] = {}
        self._tuples = ((*names, *self.view_names), self.param_names,
                        tuple((n, dtype[n].base.str, dtype[n].ndim) for n in names))
        made = _loops(cls, kernels, self.borrowing, *self._tuples)
        if made.path is not None and os.path.exists(made.path + _NEEDS_COUNTING):
            self.borrowing = False  # (an earlier process found that it does not compile)
            made = _loops(cls, kernels, False, *self._tuples)
        self._use(made)
        space = env.single_observation_space
        if not space.shape:
            raise TypeError(f"{cls.__name__}: per-env kernels need an observation space with "
                            f"a shape (observe_env writes obs = out[i]); got {space}")
        # the observation argument of the operations that write none (never indexed)
        self.no_obs = np.zeros((1, *env._obs.shape[1:]), dtype=env._obs.dtype)
        self.p: Any = self.params(env)
        self.actions = _ActionForm(env.single_action_space, env.num_envs,
                                    compiled=kernels == "numba")
        self.pool = _OutputPool(env._obs, env.num_envs)
        self.every = np.ones(env.num_envs, dtype=np.bool_)  # run's `chosen`: every row
        n = env.num_envs  # (op 1 and 2 write neither rewards nor flags)
        self.scratch = (np.zeros(n), np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_))

    def _use(self, made: _Loops) -> None:
        """Run ``made``'s loops, with their namedtuple classes of ``s`` and ``p``."""
        self.loops = made.loops
        self.state_tuple: Any = made.state_tuple
        self.param_tuple: Any = made.param_tuple
        self._fields_of.clear()
        self._compiled = False
        self._entry = None
        self._state: Any = None  # the State whose namedtuple fields() made last
        self._state_fields: Any = None

    def params(self, env: BatchEnv) -> Any:
        """The namedtuple of ``kernel_params`` values (read at every reset)."""
        values = [getattr(env, name) for name in self.param_names]
        return self.param_tuple(*values) if self.param_names else ()

    def fields(self, s: State) -> Any:
        """``s``'s field arrays, then the class's ``kernel_views`` of them
        (``state_views(s)``), as the namedtuple the kernels see (made once per State)."""
        held = self._fields_of.get(id(s))
        if held is None or held[0] is not s:
            if len(self._fields_of) > 8:
                self._fields_of.clear()
            views: Any = self.state_views(s) if self.view_names else {}
            held = self._fields_of[id(s)] = (s, self.state_tuple(
                *(a for name, a in s if name not in self.hidden),
                *(views[name] for name in self.view_names)))
        self._state, self._state_fields = held  # (the env's own state: the step's shortcut)
        return held[1]

    def _compile(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """Compile ``run`` for ``args``' types (or find it in the cache) with a call over no
        row. A kernel that allocates arrays does not compile without reference counting:
        then the loops with it (the same results), and ``args`` with their namedtuples."""
        from numba.core.errors import NumbaError

        loop = self.loops["run"]
        try:
            loop(*args, 0, 0)
        except NumbaError:
            if not self.borrowing:
                raise
            self.borrowing = False
            _remember_counting(loop)
            self._use(_loops(self.cls, self.kernels, False, *self._tuples))
            self._entry = None
            p = self.param_tuple(*args[0]) if self.param_names else ()
            if args[0] is self.p:
                self.p = p
            args = (p, self.state_tuple(*args[1]), *args[2:])  # (the same arrays)
            self.loops["run"](*args, 0, 0)
        self._compiled = True
        return args

    def _run(self, n: int, args: tuple[Any, ...]) -> None:
        """``run(*args)`` over rows ``[0, n)``: in one call, or (``num_threads > 1``) in
        ``num_threads`` blocks of rows at once on threads (the loops release the GIL). Every
        env's pass reads and writes only its own row, so the blocks never meet and the
        results are the same for every thread count."""
        if self.kernels == "python":
            with np.errstate(over="ignore"):  # the streams' uint64 arithmetic wraps
                self.loops["run"](*args, 0, n)
            return
        if not self._compiled:
            args = self._compile(args)
        self._blocks(self.loops["run"], 0, n, args)

    def _blocks(self, loop: Any, start: int, n: int, args: tuple[Any, ...]) -> None:
        """``loop(*args, lo, hi)`` over rows ``[start, n)``: in one call, or in
        ``num_threads`` blocks, the first on this thread and the others on the workers."""
        if self.num_threads == 1 or n - start < 2 * self.num_threads:
            loop(*args, start, n)
            return
        if self._workers is None:
            self._workers = _Workers(self.num_threads - 1)
        bounds = self._bounds.get((start, n))
        if bounds is None:
            bounds = self._bounds[start, n] = np.linspace(
                start, n, self.num_threads + 1).astype(int).tolist()
        self._workers.run(loop, args, bounds)

    def _op(self, op: int, s: State, obs: np.ndarray, chosen: np.ndarray | None = None,
            outputs: tuple[np.ndarray, ...] | None = None, action: Any = None) -> None:
        """A numpy-form kernel: ``run``'s ``op`` over every row of ``s`` (``chosen``: a
        reset's rows), through numba's dispatcher (these calls are few: resets, the
        observations after them, debug mode's steps)."""
        form = self.actions
        n = len(s)
        reward, terminated, truncated = outputs or self.scratch
        self._run(n, (self.p, self.fields(s), op, self.every if chosen is None else chosen,
                      form.dummy if action is None else action, form.low, form.high, reward,
                      terminated, truncated, obs, 0, _NO_LIMIT, 0))

    # the numpy-form kernels, as loops over the rows
    def reset_envs(self, env: BatchEnv, s: State, rng: Any) -> None:
        self.p = self.params(env)
        if len(s) > len(self.every):
            self.every = np.ones(len(s), dtype=np.bool_)
        self._op(RESET, s, self.no_obs)

    def reset_rows(self, env: BatchEnv, s: State, rows: np.ndarray, rng: Any) -> None:
        self.p = self.params(env)
        chosen = np.zeros(len(s), dtype=np.bool_)
        chosen[rows] = True
        self._op(RESET, s, self.no_obs, chosen)

    def step_envs(self, env: BatchEnv, s: State, action: np.ndarray, rng: Any
                  ) -> tuple[np.ndarray, np.ndarray]:
        n = len(s)
        outputs = (np.zeros(n, dtype=np.float64), np.zeros(n, dtype=np.bool_),
                   np.zeros(n, dtype=np.bool_))
        self._op(STEP_ONLY, s, self.no_obs, outputs=outputs,
                 action=self.actions.canonical_checked(action))
        return outputs[0], outputs[1]

    def observe(self, env: BatchEnv, s: State, out: np.ndarray) -> None:
        with _writable(out):
            self._op(OBSERVE, s, out)

    def _resolve(self, env: BatchEnv, args: tuple[Any, ...], n: int
                 ) -> tuple[int, tuple[Any, ...]]:
        """The first fused step with these persistent arguments: compiled (or found in the
        cache), the actions checked through numba's dispatcher (``check=2``: no row
        changes, so a refusal changes nothing), then the compiled entry point for the
        arguments' types, kept for the steps after it: the dispatcher finds it on every
        call itself, which for the state's namedtuple of arrays costs microseconds per
        step (docs/performance.md, "Per-env kernels"). Returns the check's status and the
        arguments (their namedtuples those of the loops now run)."""
        if not self._compiled:
            args = self._compile(args)
        args = (self.p, self.fields(env.state), *args[2:])
        loop = self.loops["run"]
        status = int(loop(*args[:13], 2, 0, n)) if args[13] else -1
        compiled = loop.overloads.get(tuple(loop.typeof_pyval(a) for a in (*args, 0, 0)))
        self._entry = None if compiled is None else compiled.entry_point
        return status, args

    def step(self, env: BatchEnv, actions: Any
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The whole step in one pass, the actions' range checked in the same compiled call
        before any row changes. With ``copy=True`` the loop writes straight into the
        arrays that are returned (:class:`_OutputPool`: fresh, or recycled once the caller
        holds no reference to them); with ``copy=False`` into the env's buffers."""
        form = self.actions
        a = actions
        if form.compiled_check and type(a) is np.ndarray and a.dtype is form.dtype \
                and a.shape == form.shape and a.flags.c_contiguous and a.flags.writeable:
            check = 1 if env.validate else 0
            if form.readonly:  # (rows of it are the kernels' actions: they cannot write)
                a = a.view()
                a.flags.writeable = False
        else:  # anything else: checked (and Box actions clipped) by the Python checker,
            a = form.canonical(env, actions)  # then in the one form the loop takes
            check = 0
        n = env.num_envs
        copy = env.copy
        fresh = copy and env.observe_fills_out
        if copy:
            reward, terminated, truncated, out = self.pool.take()
            obs = out if fresh else env._obs
        else:
            obs, reward, terminated, truncated = (env._obs, env._reward, env._terminated,
                                                  env._truncated)
        mode = env.autoreset_mode
        limit = env.max_episode_steps
        s = env.state
        fields = self._state_fields if s is self._state else self.fields(s)
        p = self.p
        args = (p, fields, STEP, self.every, a, form.low, form.high, reward, terminated,
                truncated, obs,
                0 if mode is AutoresetMode.NEXT_STEP else 1 if mode is AutoresetMode.SAME_STEP
                else 2, _NO_LIMIT if limit is None else limit, check)  # (_MODES, unhashed)
        writable = fresh or obs.flags.writeable
        if not writable:  # (a copy=False canvas: read-only for the caller)
            obs.flags.writeable = True
        try:
            held = self._entry_for  # the persistent arguments its entry point was found for
            if self.kernels != "numba":
                self._run(n, args)
                status = -1
            elif held[0] is not p or held[1] is not fields or self._entry is None or (
                    held[2] is not None if copy else held[2] is not obs
                    or held[3] is not reward or held[4] is not terminated
                    or held[5] is not truncated):
                status, args = self._resolve(env, args, n)
                self._entry_for = (self.p, args[1], None, None, None, None) if copy else (
                    self.p, args[1], obs, reward, terminated, truncated)
                if status < 0:
                    self._blocks(self._entry or self.loops["run"], 0, n, (*args[:13], 0))
            elif self.num_threads == 1 or n < 2 * self.num_threads:
                status = self._entry(*args, 0, n)
            else:  # the whole batch's check, then the blocks on the threads
                status = self._entry(*args[:13], check and 2, 0, n)
                if status < 0:
                    self._blocks(self._entry, 0, n, (*args[:13], 0))
        finally:
            if not writable:
                obs.flags.writeable = False
        if status >= 0:
            form.refuse(env, actions, status)
        info: dict[str, Any] = {}
        if mode is AutoresetMode.SAME_STEP:  # the envs that ended: observed as they ended,
            ended = np.logical_or(terminated, truncated)  # then a new episode each
            if np.count_nonzero(ended):
                done = ended.nonzero()[0]
                final_obs = np.full(n, None, dtype=object)
                final_obs[done] = list(obs[done])
                final_info = env._final_field_info(done)
                renew = (*args[:2], RESET_OBSERVE, ended, *args[4:13], 0)
                with _writable(obs):
                    if self.kernels != "numba":
                        self._run(n, renew)
                    else:
                        self._blocks(self._entry or self.loops["run"], 0, n, renew)
                info = {"final_obs": final_obs, "_final_obs": ended,
                        "final_info": final_info, "_final_info": ended.copy()}
        if copy and not fresh:
            np.copyto(out, obs)
            obs = out
        if env._info_fields:
            env._field_info(info)
        return obs, reward, terminated, truncated, info


#: ``max_steps`` of the fused loop for an env without a time limit (never reached).
_NO_LIMIT = 2**62


class _ActionForm:
    """The one form of the actions a compiled fused step takes (so that it compiles once),
    and their bounds for its range check: ``Discrete`` and ``MultiDiscrete`` actions as
    int64 arrays, checked in the loop (``low <= a < high``); ``Box`` actions checked and
    clipped by the Python checker (:func:`batchenv.validation.action_checker`) first."""

    def __init__(self, space: Any, n: int, compiled: bool) -> None:
        from gymnasium import spaces

        self.shape: tuple[int, ...] = (n, *(space.shape or ()))
        self.dtype = np.dtype(np.int64)
        self.compiled_check = False
        self.readonly = True
        self.low = self.high = np.zeros(1, dtype=np.int64)
        if isinstance(space, spaces.Discrete):
            self.compiled_check = compiled
            self.readonly = False  # (a kernel gets a scalar: it cannot write the array)
            self.low = np.array([space.start], dtype=np.int64)
            self.high = np.array([space.start + space.n], dtype=np.int64)
        elif isinstance(space, spaces.MultiDiscrete) and len(space.shape) == 1:
            self.compiled_check = compiled
            self.low = np.asarray(space.start, dtype=np.int64).copy()
            self.high = self.low + np.asarray(space.nvec, dtype=np.int64)
        elif not isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
            self.dtype = np.dtype(space.dtype)  # Box: the checker's read-only buffer
        #: An action batch of the form for the operations that read no action.
        self.dummy = self.canonical_checked(np.zeros((1, *self.shape[1:]), self.dtype))

    def canonical(self, env: BatchEnv, actions: Any) -> np.ndarray:
        """``actions`` checked by the env's Python checker (``validate=True``; it raises
        naming the argument and the envs) and in the loop's form: read-only (but a
        ``Discrete`` batch), C-contiguous, of :attr:`dtype`."""
        from batchenv.validation import read_only

        a = env._action_check(actions) if env.validate else read_only(actions)
        if self.compiled_check and a.shape != self.shape:  # (validate=False: unchecked)
            raise ValueError(f"actions must have shape {self.shape}, got {a.shape}")
        return self.canonical_checked(a)

    def canonical_checked(self, a: np.ndarray) -> np.ndarray:
        """Checked actions ``a`` in the loop's form (a copy only where they are not)."""
        if a.dtype != self.dtype or not a.flags.c_contiguous or (
                a.flags.writeable == self.readonly):
            a = np.array(a, dtype=self.dtype, order="C")
            a.flags.writeable = not self.readonly
        return a

    def refuse(self, env: BatchEnv, actions: Any, row: int) -> None:
        """The compiled check found ``row``'s action out of range: the Python checker's
        error, which names the envs (nothing has changed)."""
        env._action_check(actions)  # raises
        raise ValueError(f"actions out of range for {env.single_action_space} at env index "
                         f"{row}: {np.asarray(actions)[row].tolist()}")


class _OutputPool:
    """The arrays a ``copy=True`` step returns (reward, terminated, truncated and, with
    ``observe_fills_out``, the observation), written by the loop itself: fresh arrays, or
    a set returned by an earlier step that nothing outside holds any more (its reference
    count is the pool's own), which is then indistinguishable from a fresh one. Recycling
    spares an allocation per array per step, and for large observations the page faults
    of first writes into new memory (docs/performance.md, "Per-env kernels: the step around
    the rules")."""

    # sets kept for reuse: in a loop that keeps the last step's outputs while it steps
    # (obs = env.step(a)[0]) the two alternate; a caller that keeps more gets fresh
    # arrays, as without the pool, and the pool never holds more than two
    KEEP = 2

    def __init__(self, obs: np.ndarray, n: int) -> None:
        self.obs_shape, self.obs_dtype, self.n = obs.shape, obs.dtype, n
        self.sets: list[list[np.ndarray]] = []

    def take(self) -> list[np.ndarray]:
        """``[reward, terminated, truncated, obs]``, none of them held outside the pool."""
        for held in self.sets:  # (each array: one reference from `held`, one argument)
            if getrefcount(held[0]) == 2 and getrefcount(held[1]) == 2 \
                    and getrefcount(held[2]) == 2 and getrefcount(held[3]) == 2:
                return held[:]
        made = [np.empty(self.n, dtype=np.float64), np.empty(self.n, dtype=np.bool_),
                np.empty(self.n, dtype=np.bool_),
                np.empty(self.obs_shape, dtype=self.obs_dtype)]
        self.sets.insert(0, made)
        del self.sets[self.KEEP:]
        return made[:]


class _writable:
    """Lets the loops write a buffer its env hands out read-only (``copy=False``
    canvases): writable for the call, read-only again after."""

    __slots__ = ("array", "was")

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __enter__(self) -> None:
        self.was = self.array.flags.writeable
        if not self.was:
            self.array.flags.writeable = True

    def __exit__(self, *exc: Any) -> None:
        if not self.was:
            self.array.flags.writeable = False


def _serve(todo: Any, done: Any) -> None:
    """A worker thread: run the blocks it is given until given None."""
    while True:
        job = todo.get()
        if job is None:
            return
        loop, args, lo, hi = job
        try:
            loop(*args, lo, hi)
            done.put(None)
        except BaseException as e:  # handed to the caller
            done.put(e)


class _Workers:
    """Persistent threads that run blocks of rows of a compiled loop (which releases the
    GIL). A step hands each worker its block through a queue and runs the first block on
    the calling thread; a pool's per-task futures cost more than a light step."""

    def __init__(self, count: int) -> None:
        import queue
        import threading

        self.todo: list[Any] = [queue.SimpleQueue() for _ in range(count)]
        self.done: Any = queue.SimpleQueue()
        for k in range(count):  # (the threads hold the queues, not self: __del__ ends them)
            threading.Thread(target=_serve, args=(self.todo[k], self.done), daemon=True,
                             name=f"batchenv-{k + 1}").start()

    def run(self, loop: Any, args: tuple[Any, ...], bounds: list[int]) -> None:
        for k, todo in enumerate(self.todo):
            todo.put((loop, args, bounds[k + 1], bounds[k + 2]))
        error: BaseException | None = None
        try:
            loop(*args, bounds[0], bounds[1])
        except BaseException as e:
            error = e
        for _ in self.todo:
            result = self.done.get()
            error = error or result
        if error is not None:
            raise error

    def __del__(self) -> None:
        for todo in self.todo:
            todo.put(None)


class KernelChoice(NamedTuple):
    kernels: str
    num_threads: int


def bind(env: BatchEnv, kernels: str, num_threads: int | None) -> Runner | None:
    """Choose the form for ``env`` and, for per-env kernels, bind their loops as its
    ``reset_envs``/``reset_rows``/``step_envs``/``observe`` (instance attributes). Returns
    the :class:`Runner`, or None when the numpy kernels run."""
    kind, threads = choose(type(env), kernels, num_threads)
    if kind == "numpy":  # (a subclass may have set its own `kernels` already: MinAtar's)
        env.__dict__.setdefault("kernels", "numpy")
        env.__dict__.setdefault("num_threads", 1)
        return None
    env.kernels = kind
    env.num_threads = threads
    runner = Runner(env, kind, threads)
    rebind(env, runner)
    return runner


def rebind(env: BatchEnv, runner: Runner) -> None:
    """Bind ``runner``'s loops as ``env``'s numpy-form kernels (after unpickling too)."""
    from functools import partial

    for name in ("reset_envs", "reset_rows", "step_envs", "observe"):
        env.__dict__[name] = partial(getattr(runner, name), env)


#: Instance attributes :func:`rebind` sets (dropped when pickling, bound again after).
BOUND = ("reset_envs", "reset_rows", "step_envs", "observe")
