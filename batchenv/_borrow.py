"""Views of the caller's arrays that a compiled per-env loop uses without reference counting.

numba counts references to every array a compiled function holds (its "meminfo"): passing
``s``, a namedtuple of arrays, to a kernel inlined in the loop costs an atomic increment and
decrement per array in every env's pass, most of a light step's time
(docs/performance.md, "Per-env kernels"). An array made by ``numba.carray`` over the same
memory has no meminfo, so the compiler drops the counting altogether. The loop takes its
arguments as numba gives them, and makes these views once per call (:func:`borrow`,
:func:`borrow_all`); the caller's arrays outlive the call, so nothing is freed under it.

Only numba's public API: ``numba.carray``, ``array.ctypes`` passed where a pointer is
expected (a jitted function with an explicit pointer signature converts it), and
``numba.extending.overload``/``register_jitable``. Loaded once, when the first loop is
compiled.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["borrow", "borrow_all", "first_bad_action", "install", "fast_typeof", "words"]


def borrow(a: Any) -> Any:
    """``a`` itself (called from Python); compiled, a view of a C-contiguous array without
    reference counting, any other argument unchanged."""
    return a


def borrow_all(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """:func:`borrow` of each entry of a tuple."""
    return values


def first_bad_action(action: np.ndarray, low: np.ndarray, high: np.ndarray, lo: int,
                     hi: int) -> int:
    """The first row in ``[lo, hi)`` whose action is out of range (``low <= a < high``,
    elementwise for ``MultiDiscrete`` rows), or -1: the loop's check. Float actions
    (``Box``, checked by the Python checker before the loop) always pass. Compiled: one
    branch-free pass over the batch (it vectorizes), and a second only if it found one."""
    if action.dtype.kind == "f":
        return -1
    rows = action[lo:hi].reshape(hi - lo, -1)
    bad = ((rows < low) | (rows >= high)).any(axis=1)
    return int(lo + bad.argmax()) if bad.any() else -1


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



def _install() -> None:
    import numba
    from numba import types

    # One identity per pointer type, with an explicit signature: numba converts the
    # argument `array.ctypes` to that pointer type when it calls it.
    scalars = (types.boolean, types.int8, types.uint8, types.int16, types.uint16, types.int32,
               types.uint32, types.int64, types.uint64, types.float32, types.float64,
               types.complex64, types.complex128)
    pointers = [types.CPointer(t) for t in scalars]
    as_pointer = numba.njit([p(p) for p in pointers])(lambda p: p)
    as_voidptr = numba.njit(types.voidptr(types.voidptr))(lambda p: p)
    _install_borrow(pointers, as_pointer)
    _install_words(as_voidptr)
    _install_first_bad_action()


def _holds_arrays(t: Any) -> bool:
    from numba import types

    return any(isinstance(x, types.Array) or isinstance(x, types.BaseTuple)
               and _holds_arrays(x) for x in t)


def _install_borrow(pointers: list[Any], as_pointer: Any) -> None:
    import numba
    from numba import types
    from numba.extending import overload, register_jitable

    @register_jitable
    def c_view(a):
        return numba.carray(as_pointer(a.ctypes), a.shape)

    @overload(borrow)
    def _borrow(a):  # (numba compares the signatures)
        if isinstance(a, types.Array) and a.layout == "C" and a.mutable \
                and types.CPointer(a.dtype) in pointers:
            return lambda a: c_view(a)
        if isinstance(a, types.BaseTuple) and _holds_arrays(a):  # (parameters: tables in
            if isinstance(a, types.NamedTuple):  # a namedtuple)
                made = a.instance_class
                return lambda a: made(*borrow_all(a))
            return lambda a: borrow_all(a)
        return lambda a: a

    @overload(borrow_all)
    def _borrow_all(values):
        # Eight entries a function: numba compiles a function for each tuple type it
        # reaches, and a recursion by halves reached about one per entry
        n = len(values)
        if n > 8:
            return lambda values: borrow_all(values[:8]) + borrow_all(values[8:])
        return _BORROW_UP_TO_8[n]


#: :func:`borrow_all` of a tuple of 0 to 8 entries, one function each (the overload's
#: implementations must name their argument as ``borrow_all`` does)
_BORROW_UP_TO_8 = (
    lambda values: (),
    lambda values: (borrow(values[0]),),
    lambda values: (borrow(values[0]), borrow(values[1])),
    lambda values: (borrow(values[0]), borrow(values[1]), borrow(values[2])),
    lambda values: (borrow(values[0]), borrow(values[1]), borrow(values[2]),
                    borrow(values[3])),
    lambda values: (borrow(values[0]), borrow(values[1]), borrow(values[2]),
                    borrow(values[3]), borrow(values[4])),
    lambda values: (borrow(values[0]), borrow(values[1]), borrow(values[2]),
                    borrow(values[3]), borrow(values[4]), borrow(values[5])),
    lambda values: (borrow(values[0]), borrow(values[1]), borrow(values[2]),
                    borrow(values[3]), borrow(values[4]), borrow(values[5]),
                    borrow(values[6])),
    lambda values: (borrow(values[0]), borrow(values[1]), borrow(values[2]),
                    borrow(values[3]), borrow(values[4]), borrow(values[5]),
                    borrow(values[6]), borrow(values[7])),
)


def _install_words(as_voidptr: Any) -> None:
    import numba
    from numba import types
    from numba.core.errors import TypingError
    from numba.extending import overload

    @overload(words)
    def _words(a):
        if not (isinstance(a, types.Array) and a.layout == "C"):
            raise TypingError(f"perenv.words needs a C-contiguous array, got {a}")

        def view(a):
            return numba.carray(as_voidptr(a.ctypes), (a.size * a.itemsize // 8,), np.uint64)

        return view


def _first_bad_discrete(action: Any, low: Any, high: Any, lo: int, hi: int) -> int:
    a, b = low[0], high[0]
    bad = False
    for i in range(lo, hi):
        if i >= 0:  # (always: no wraparound of negative indices)
            bad |= (action[i] < a) | (action[i] >= b)
    if bad:
        for i in range(lo, hi):
            if i >= 0 and (action[i] < a or action[i] >= b):
                return i
    return -1


def _first_bad_row(action: Any, low: Any, high: Any, lo: int, hi: int) -> int:
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


def _install_first_bad_action() -> None:
    from numba import types
    from numba.extending import overload, register_jitable

    discrete = register_jitable(_first_bad_discrete)
    rows = register_jitable(_first_bad_row)

    @overload(first_bad_action)  # (not inline="always": numba issue #9778, perenv.rule)
    def _first_bad(action, low, high, lo, hi):
        if not isinstance(action.dtype, types.Integer):
            return lambda action, low, high, lo, hi: -1
        if action.ndim == 1:  # Discrete
            return lambda action, low, high, lo, hi: discrete(action, low, high, lo, hi)
        return lambda action, low, high, lo, hi: rows(action, low, high, lo, hi)  # MultiDiscrete


_installed = False
_typed: dict[type, dict[int, tuple[Any, Any]]] = {}


def fast_typeof(value: Any) -> None:
    """Let numba type the namedtuple ``value`` (a parameter the loop is given at every call)
    from a memo: numba types a namedtuple argument in Python, item by item, at every call
    (microseconds for a table of constants), where an array or a plain tuple is typed in C.
    The memo holds the value itself: namedtuples are immutable, so its type cannot change.
    Registered through ``numba.extending.typeof_impl``, once per class."""
    cls = type(value)
    if not (isinstance(value, tuple) and hasattr(cls, "_fields")):
        return
    for item in value:
        fast_typeof(item)
    if cls in _typed:
        return
    from numba import types
    from numba.extending import typeof_impl

    memo = _typed[cls] = {}

    @typeof_impl.register(cls)
    def _type(val: Any, c: Any) -> Any:
        held = memo.get(id(val))
        if held is not None and held[0] is val:
            return held[1]
        items = [typeof_impl(x, c) for x in val]
        if any(t is None for t in items):
            return None
        made = types.NamedUniTuple(items[0], len(items), cls) if items and all(
            t == items[0] for t in items) else types.NamedTuple(items, cls)
        if len(memo) > 64:  # (values replaced over time: keep the latest few)
            memo.clear()
        memo[id(val)] = (val, made)
        return made


def install() -> None:
    """Register the compiled forms with numba (once)."""
    global _installed
    if not _installed:
        _install()
        _installed = True
