"""The compiled loop of a batch of one, called through a table of pointers.

A single env (:class:`~batchenv.single.SingleEnv`) steps a batch of one, and numba's
dispatcher costs more per call than a light game's whole step: it types and unboxes every
argument, ~60 ns per array, and the loop takes one array per state field. A batch of one
calls the same compiled loop (``run`` of ``_loops_template.py``, the same machine code)
from a small ``numba.cfunc`` instead, ``one`` of ``_one_template.py``, whose one argument
is a table of the arrays' data pointers, and which remakes each array over its memory
(``numba.carray``) with the shape, dtype and layout the dispatcher would have typed: this
module fills in the template's placeholders with those remakes and ``ctypes`` calls the
compiled wrapper.

Only numba's public API: ``numba.cfunc`` (and its ``address``), ``numba.carray`` over a
``voidptr``, ``types.CPointer``. Nothing here holds a rule: the
table is made from the loop's own arguments, for the argument types the loop was
compiled for, or not at all (:func:`pointer_call` returns ``None``: a parameter that is
not a number or a C-contiguous writable array, an array of another layout; the
dispatcher then calls the loop as for any batch).

An exception a kernel raises cannot leave a ``cfunc``: numba hands it to
``sys.unraisablehook`` and the call returns 0 (``run`` itself returns -1 here). The call,
made holding the GIL, puts a hook of its own in place for its duration, which keeps the
exception and raises it after the call: the kernel's error, from the state the same machine
code leaves.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from batchenv import _loop_cache

__all__ = ["pointer_call"]

#: The wrapper's file (a template, run once per loop and argument types; see its header).
TEMPLATE = Path(__file__).with_name("_one_template.py")
#: The argument positions of ``run`` (see the template): params, fields, then these.
_ARRAYS = (3, 4, 5, 6, 7, 8, 9, 10)  # chosen, action, low, high, reward, flags, obs
_SCALARS = (bool, int, float, np.bool_, np.integer, np.floating)


def _scalar_dtype(value: Any) -> np.dtype | None:
    """The dtype numba types a scalar argument as (bool, int64, float64, its own)."""
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(value, int):
        return np.dtype(np.int64)
    if isinstance(value, float):
        return np.dtype(np.float64)
    if isinstance(value, (np.integer, np.floating)):
        return np.dtype(type(value))
    return None


def _plain_array(value: Any) -> bool:
    return (type(value) is np.ndarray and value.flags.c_contiguous and value.flags.writeable
            and value.dtype.kind in "biuf" and value.ndim >= 1)


class _Table:
    """The pointer table of one argument tuple, the arrays it points into held alive, and
    each argument's remake as the template has it (its header)."""

    def __init__(self) -> None:
        self.held: list[np.ndarray] = []

    def array(self, a: np.ndarray) -> str:
        k = len(self.held)
        self.held.append(a)
        # (the dtype by name in the text: the cache key covers it)
        return f"numba.carray(tab[{k}], {tuple(a.shape)!r}, np.{a.dtype.type.__name__})"

    def scalar(self, value: Any, dtype: np.dtype) -> str:
        return f"{self.array(np.array([value], dtype=dtype))}[0]"


def pointer_call(loops: Any, run: Any, args: tuple[Any, ...]) -> Callable[[], int] | None:
    """``run(*args)`` (the loop's full argument tuple, ``lo`` and ``hi`` included) as a
    call of no arguments through a ``cfunc``, or ``None`` when an argument has no exact
    remake (the module docstring)."""
    params, fields = args[0], args[1]
    if not all(_plain_array(a) for a in (*fields, *(args[i] for i in _ARRAYS))):
        return None
    table = _Table()
    param_spec = []
    for value in params:
        if _plain_array(value):
            param_spec.append(table.array(value))
        elif isinstance(value, _SCALARS) and (dtype := _scalar_dtype(value)) is not None \
                and (dtype.kind != "i" or -2**63 <= value < 2**63):  # (else typed uint64)
            param_spec.append(table.scalar(value, dtype))
        else:
            return None
    field_spec = tuple(table.array(a) for a in fields)
    rest_spec = tuple(table.array(value) if i in _ARRAYS
                      else table.scalar(value, np.dtype(np.int64))
                      for i, value in enumerate(args[2:], start=2))
    text = _filled({"PARAMS": param_spec, "FIELDS": field_spec, "REST": rest_spec})
    try:
        compiled = _compile(loops, run, text)
    except Exception as e:  # noqa: BLE001 - a speed-up only: the dispatcher goes on
        _loop_cache.log.debug("%s: single-env pointer call not made: %s",
                              loops.cls.__qualname__, e)
        return None
    pointers = np.array([a.ctypes.data for a in table.held], dtype=np.uintp)
    # called holding the GIL (PYFUNCTYPE; the cfunc's own ctypes releases it), so that no
    # other thread runs while the call's hook is in place
    function = ctypes.PYFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)(compiled.address)
    address = pointers.ctypes.data
    catch = _Catch()

    def call(function: Any = function, address: int = address, catch: _Catch = catch,
             keep: Any = (table.held, pointers, compiled)) -> int:  # (alive with the call)
        catch.previous = previous = sys.unraisablehook
        sys.unraisablehook = catch
        try:
            status = function(address)
        finally:
            sys.unraisablehook = previous
        if catch.error is not None:
            error, catch.error = catch.error, None
            raise error
        return status

    return call


class _Catch:
    """A ``sys.unraisablehook`` for one call: keeps the first exception, passes any other
    to the hook that was in place."""

    __slots__ = ("previous", "error")

    def __init__(self) -> None:
        self.previous: Any = None
        self.error: BaseException | None = None

    def __call__(self, unraisable: Any) -> None:
        if self.error is None:
            self.error = unraisable.exc_value
        else:
            self.previous(unraisable)


_MADE: dict[tuple[int, str], Any] = {}


@functools.cache
def template_text() -> str:
    return TEMPLATE.read_text(encoding="utf-8")


def _filled(values: dict[str, Any]) -> str:
    """The template with each placeholder (a name in its last line, ``return run(...)``)
    the tuple of its arguments' remakes."""
    head, call = template_text().rsplit("\n    return ", 1)
    for name, items in values.items():
        call = call.replace(name, f"({''.join(item + ', ' for item in items)})", 1)
    return f"{head}\n    return {call}"


def _compile(loops: Any, run: Any, text: str) -> Any:
    """The filled template's ``one`` compiled (from the disk cache when the loop came from
    it)."""
    import numba
    from numba import types

    memo = (id(run), text)
    if memo in _MADE:
        return _MADE[memo]
    signature = types.int64(types.CPointer(types.voidptr))
    options: dict[str, Any] = {"error_model": "numpy", "boundscheck": loops.checked}
    injected = {"run": run}
    directory = _loop_cache.cache_dir()
    compiled = None
    if loops.path is not None and directory is not None:
        # named after the loop's own module (its key: everything the loop depends on) and
        # this text, so a cached wrapper is never one of another loop
        digest = hashlib.sha256(f"{loops.path}\n{text}".encode()).hexdigest()[:24]
        name = f"_batchenv_one_{loops.cls.__name__}_{digest}"
        try:
            module = _loop_cache.load(name, text, directory, injected)
            compiled = numba.cfunc(signature, cache=True, **options)(module.one)
        except Exception as e:  # noqa: BLE001 - unwritable or unreadable: uncached
            _loop_cache.warn_unusable(loops.cls, str(directory / f"{name}.py"), e)
    if compiled is None:
        namespace = dict(injected)
        exec(compile(text, f"<batchenv single-env call of {loops.cls.__qualname__}>",
                     "exec"), namespace)
        compiled = numba.cfunc(signature, **options)(namespace["one"])
    _MADE[memo] = compiled
    return compiled
