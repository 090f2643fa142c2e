"""Debug mode: check what every kernel of one env produces, and say which kernel is wrong.

``BatchEnv(..., debug=True)`` (or ``BATCHENV_DEBUG=1`` in the environment) runs the env's
chosen form through a :class:`DebugForm`, which checks every kernel call (with debug off the
form runs unwrapped, so it costs nothing). A per-env form runs checked: each env's pass on a
batch of one, compiled with bounds checks, so that an index past the env's own row or past an
array is an error naming the env, the kernel and the author's line, with the batch restored
(:meth:`batchenv._loops.PerEnvForm._checked_op`). The checks raise :class:`KernelError`
naming the method and the field:

* ``step_envs`` returns exactly ``(reward, terminated)``, arrays of shape ``(num_envs,)``
  (a Python number or a shorter array would be broadcast silently), a reward that float64
  holds exactly and that is finite, of a float, signed integer or bool dtype (an unsigned
  one is refused: a negative reward wraps before the base class sees it), a
  ``terminated`` that is bool (or 0/1);
* ``observe`` fills every entry of ``out`` (it is run again on two buffers poisoned with
  different bytes: an entry that differs was never written), with values inside
  ``single_observation_space`` that the observation dtype holds without loss (an integer
  observation is also computed into a float64 buffer and compared: for compiled per-env
  kernels on up to 256 rows, by their Python loop, which needs no second compile), and writes
  into the base class's buffer what it writes into a fresh one;
* ``reset_rows`` changes only the rows it is given, ``reset_envs`` never writes
  ``self.state`` (it gets a copy of the rows being reset);
* no kernel draws from numpy's global random state or ``self.np_random`` (their states are
  compared before and after; ``check_env``'s reproducibility check catches Python's
  ``random``);
* no kernel leaves NaN or inf in a float state field, or a field outside the range its
  schema declares (:class:`batchenv.state.Range`).

The checks copy and compare the state around every kernel call, which costs more than the
kernel itself (docs/performance.md, "Debug mode"): use debug mode while writing an env and
in its tests (``batchenv.testing.check_env`` turns it on), not for training.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from batchenv.forms import KernelError, KernelForm
from batchenv.validation import outside_ranges

if TYPE_CHECKING:
    from batchenv.state import State

__all__ = ["KernelError", "DebugForm", "KERNELS"]

#: The methods debug mode checks.
KERNELS = ("reset_envs", "reset_rows", "step_envs", "observe")
_MAX_LISTED = 10


class DebugForm(KernelForm):
    """``inner``'s kernels, every call checked (see the module docstring)."""

    def __init__(self, env: Any, inner: KernelForm) -> None:
        super().__init__(inner.kind, inner.num_threads,
                         f"{inner.why}; debug mode checks every kernel", checked=True)
        self.inner = inner
        self._reset_envs = _checked_reset_envs(env, partial(inner.reset_envs, env))
        self._reset_rows = _checked_reset_rows(env, partial(inner.reset_rows, env))
        self._step_envs = _checked_step_envs(env, partial(inner.step_envs, env))
        self._observe = _checked_observe(env, partial(inner.observe, env), inner)

    def reset_envs(self, env: Any, s: Any, rng: Any) -> None:
        self._reset_envs(s, rng)

    def reset_rows(self, env: Any, s: Any, rows: np.ndarray, rng: Any) -> None:
        if self.inner.kind == "numpy" and getattr(type(env).reset_rows,
                                                  "_batchenv_resets_a_copy", False):
            # the base class's reset_rows: its reset_envs call is checked as reset_envs
            from batchenv.random import BatchRandom
            from batchenv.state import put_rows, take_rows

            sub = take_rows(s, rows)
            self._reset_envs(sub, BatchRandom(sub.rng_key, sub.rng_counter))
            put_rows(s, rows, sub)
            return
        self._reset_rows(s, rows, rng)

    def step_envs(self, env: Any, s: Any, action: np.ndarray, rng: Any) -> Any:
        return self._step_envs(s, action, rng)

    def observe(self, env: Any, s: Any, out: np.ndarray) -> None:
        self._observe(s, out)

    def params_changed(self) -> None:
        self.inner.params_changed()


# ---------------------------------------------------------------------- shared checks
def _listed(idx: np.ndarray) -> str:
    idx = np.asarray(idx)
    shown = ", ".join(str(int(i)) for i in idx[:_MAX_LISTED])
    more = f", ... ({len(idx)} in all)" if len(idx) > _MAX_LISTED else ""
    return f"[{shown}{more}]"


def _global_mt_words() -> Callable[[], np.ndarray]:
    """A function giving numpy's global MT19937 state (624 key words and the position),
    read in place through the bit generator's ``ctypes`` interface:
    ``np.random.get_state()`` builds a tuple and a fresh array each call,
    and debug mode reads the state around every kernel call. (numpy < 1.25 has no
    ``np.random.get_bit_generator``: there, ``get_state``.)"""
    get_bit_generator = getattr(np.random, "get_bit_generator", None)
    if get_bit_generator is None:  # pragma: no cover (numpy < 1.25)
        def words_of_state() -> np.ndarray:
            _, key, pos, *_ = np.random.get_state(legacy=True)
            return np.append(key, pos).astype(np.uint32)

        return words_of_state

    def words_in_place() -> np.ndarray:
        # the struct starts with the 624 key words and the position (numpy's mt19937.h)
        address = get_bit_generator().ctypes.state_address
        words = (ctypes.c_uint32 * 625).from_address(address)
        return np.frombuffer(memoryview(words), dtype=np.uint32).copy()

    return words_in_place


_mt_words = _global_mt_words()


def _random_states(env: Any) -> tuple[Any, ...]:
    own = env.__dict__.get("_np_random")
    return _mt_words(), None if own is None else own.bit_generator.state


def _check_randomness(env: Any, method: str, before: tuple[Any, ...]) -> None:
    after = _random_states(env)
    if not np.array_equal(before[0], after[0]):
        raise KernelError(env, method, "drew from numpy's global random state (np.random.*): "
                          "draw only from the rng argument (rng.uniform, rng.integers, ...), "
                          "so that a seed gives the same episode every time")
    if before[1] != after[1]:
        raise KernelError(env, method, "drew from self.np_random: draw only from the rng "
                          "argument (each env row has its own stream there)")


def _check_finite_state(env: Any, method: str, s: State) -> None:
    """No NaN or inf in a float field, no field outside its declared range."""
    from batchenv.state import to_records

    for name, col in s:
        if col.dtype.kind == "f" and not np.isfinite(col).all():
            rows = np.flatnonzero(~np.isfinite(col.reshape(len(col), -1)).all(axis=1))
            raise KernelError(env, method, f"left NaN or inf in state field {name!r} at env "
                              f"indices {_listed(rows)}")
    if env.state_field_ranges:
        for problem, bad in outside_ranges(env, to_records(s)).items():
            raise KernelError(env, method, f"left {problem} at env indices "
                              f"{_listed(np.flatnonzero(bad))}: the schema declares the "
                              f"values the kernels are written for")


def _changed_rows(before: np.ndarray, after: np.ndarray) -> dict[str, np.ndarray]:
    """Per field, the rows whose bytes differ (NaN-safe)."""
    out: dict[str, np.ndarray] = {}
    if len(before) == 0:
        return out
    for name in before.dtype.names or ():
        a = np.ascontiguousarray(before[name]).view(np.uint8).reshape(len(before), -1)
        b = np.ascontiguousarray(after[name]).view(np.uint8).reshape(len(after), -1)
        rows = np.flatnonzero((a != b).any(axis=1))
        if len(rows):
            out[name] = rows
    return out


def _describe(changed: dict[str, np.ndarray]) -> str:
    return "; ".join(f"field {name!r} at env indices {_listed(rows)}"
                     for name, rows in changed.items())


# ---------------------------------------------------------------------- the wrappers
def _checked_reset_envs(env: Any, original: Callable) -> Callable:
    from batchenv.state import to_records

    def reset_envs(s: State, rng: Any) -> None:
        others = None if s is env.state else to_records(env.state)
        before = _random_states(env)
        original(s, rng)
        _check_randomness(env, "reset_envs", before)
        if others is not None:
            changed = _changed_rows(others, to_records(env.state))
            if changed:
                raise KernelError(env, "reset_envs", f"wrote to self.state ({_describe(changed)}"
                                  f"): write to s, which holds only the rows being reset")
        _check_finite_state(env, "reset_envs", s)

    return reset_envs


def _checked_reset_rows(env: Any, original: Callable) -> Callable:
    from batchenv.state import to_records

    def reset_rows(s: State, rows: Any, rng: Any) -> None:
        snapshot = to_records(s)
        before = _random_states(env)
        original(s, rows, rng)
        _check_randomness(env, "reset_rows", before)
        others = np.ones(len(s), dtype=bool)
        others[rows] = False
        changed = _changed_rows(snapshot[others], to_records(s)[others])
        if changed:
            where = np.flatnonzero(others)
            changed = {k: where[v] for k, v in changed.items()}
            raise KernelError(env, "reset_rows", f"changed rows it was not given "
                              f"({_describe(changed)}): write only s.field[rows]")
        _check_finite_state(env, "reset_rows", s)

    return reset_rows


def _checked_step_envs(env: Any, original: Callable) -> Callable:
    def step_envs(s: State, action: np.ndarray, rng: Any) -> Any:
        before = _random_states(env)
        result = original(s, action, rng)
        _check_randomness(env, "step_envs", before)
        _check_step_result(env, result)
        _check_finite_state(env, "step_envs", s)
        return result

    return step_envs


def _check_step_result(env: Any, result: Any) -> None:
    n = env.num_envs
    if not (isinstance(result, tuple) and len(result) == 2):
        what = type(result).__name__
        if isinstance(result, (tuple, list)):
            what += f" of length {len(result)}"
        raise KernelError(env, "step_envs", f"must return (reward, terminated), a tuple of two "
                          f"arrays of shape ({n},); got {what}")
    for field, x in zip(("reward", "terminated"), result):
        if not isinstance(x, np.ndarray):
            raise KernelError(env, "step_envs", f"returned {field} as {type(x).__name__}: "
                              f"return an array of shape ({n},) (a single value would be "
                              f"given to every env)")
        if x.shape != (n,):
            raise KernelError(env, "step_envs", f"returned {field} of shape {x.shape}: it must "
                              f"have shape ({n},), one value per env (no broadcasting)")
    reward, terminated = result
    if reward.dtype.kind == "u":
        raise KernelError(env, "step_envs", f"returned reward of dtype {reward.dtype}: an "
                          f"unsigned integer cannot hold a negative reward (a -1 computed in "
                          f"uint8 is already 255 when step_envs returns it, and no cast can "
                          f"undo that); compute rewards in float64 (or a signed integer "
                          f"type, or bool)")
    if reward.dtype.kind not in "bif" or not np.can_cast(reward.dtype, np.float64):
        raise KernelError(env, "step_envs", f"returned reward of dtype {reward.dtype}: "
                          f"it is stored as float64 and must be a real number type float64 "
                          f"holds exactly")
    if reward.dtype.kind == "f" and not np.isfinite(reward).all():
        raise KernelError(env, "step_envs", f"returned a NaN or inf reward at env indices "
                          f"{_listed(np.flatnonzero(~np.isfinite(reward)))}")
    if terminated.dtype != np.bool_:
        ok = terminated.dtype.kind in "iu" and np.isin(terminated, (0, 1)).all()
        if not ok:
            raise KernelError(env, "step_envs", f"returned terminated of dtype "
                              f"{terminated.dtype}: it must be bool (one flag per env)")


def _checked_observe(env: Any, original: Callable, inner: KernelForm) -> Callable:
    def observe(s: State, out: np.ndarray) -> None:
        before = _random_states(env)
        returned = original(s, out)
        _check_randomness(env, "observe", before)
        if returned is not None and returned is not out:
            raise KernelError(env, "observe", "returned an array instead of filling out: "
                              "write the observation into out (out[:] = ..., out[:, j] = ...) "
                              "and return nothing")
        _check_observation(env, original, s, out, inner)

    return observe


def _poisoned(out: np.ndarray, byte: int) -> np.ndarray:
    probe = np.empty(out.shape, dtype=out.dtype)
    probe.view(np.uint8)[...] = byte
    return probe


def _entries(mask: np.ndarray) -> str:
    """Which entries of an (n, ...) observation a bool mask marks: columns and rows."""
    n = len(mask)
    flat = mask.reshape(n, -1)
    rows = np.flatnonzero(flat.any(axis=1))
    if mask.ndim == 1:
        return f"out[i] for env indices {_listed(rows)}"
    cols = np.flatnonzero(flat.any(axis=0))
    trail = mask.shape[1:]
    idx = [str(tuple(int(k) for k in np.unravel_index(c, trail))) if len(trail) > 1
           else str(int(c)) for c in cols[:_MAX_LISTED]]
    more = f", ... ({len(cols)} in all)" if len(cols) > _MAX_LISTED else ""
    return f"entries [{', '.join(idx)}{more}] of each observation, env indices {_listed(rows)}"


def _check_observation(env: Any, original: Callable, s: State, out: np.ndarray,
                       inner: KernelForm) -> None:
    a, b = _poisoned(out, 0x00), _poisoned(out, 0xFF)
    original(s, a)
    original(s, b)
    itemsize = out.dtype.itemsize
    unwritten = (a.view(np.uint8).reshape(*out.shape, itemsize)
                 != b.view(np.uint8).reshape(*out.shape, itemsize)).any(axis=-1)
    if unwritten.any():
        raise KernelError(env, "observe", f"left {_entries(unwritten)} unwritten: fill every "
                          f"entry of out (it is not cleared between calls), or narrow "
                          f"single_observation_space to what you write")
    if out.dtype.kind in "biu":
        wide: np.ndarray | None = np.full(out.shape, np.nan)
        try:
            _float64_probe(env, original, len(s), inner)(s, wide)
        except Exception:  # noqa: BLE001 - a kernel written for one dtype: no lossless probe
            wide = None
        # a kernel that writes bytes or views (a raster) does not compute values in float64:
        # trust the probe only where casting it as numpy does gives exactly what out got
        if wide is not None and np.isnan(wide).any():
            wide = None
        if wide is not None:
            with np.errstate(invalid="ignore", over="ignore"):
                faithful = np.array_equal(wide.astype(out.dtype), a)
            wide = wide if faithful else None
        if wide is not None:
            lossy = wide != a.astype(np.float64)
            if lossy.any():
                first = tuple(int(k) for k in np.argwhere(lossy)[0])
                raise KernelError(env, "observe", f"wrote values that the observation dtype "
                                  f"{out.dtype} cannot hold at {_entries(lossy)} (e.g. "
                                  f"{wide[first]!r} stored as {a[first]!r} at out{list(first)})"
                                  f": compute values the space holds (round, clip) or change "
                                  f"the space's dtype")
    outside = _outside(env.single_observation_space, a)
    if outside is not None and outside.any():
        first = tuple(int(k) for k in np.argwhere(outside)[0])
        raise KernelError(env, "observe", f"wrote values outside single_observation_space "
                          f"({env.single_observation_space}) at {_entries(outside)} (e.g. "
                          f"{a[first]!r} at out{list(first)})")
    same = (out.view(np.uint8).reshape(*out.shape, itemsize)
            == a.view(np.uint8).reshape(*out.shape, itemsize)).all(axis=-1)
    if not same.all():
        raise KernelError(env, "observe", f"wrote different values into the env's buffer than "
                          f"into a fresh one at {_entries(~same)}: write every entry from s "
                          f"alone, not from what out held before")


#: Compiled per-env kernels: the float64 probe of up to this many rows runs their Python loop.
_PYTHON_PROBE_ROWS = 256


def _float64_probe(env: Any, original: Callable, rows: int, inner: KernelForm) -> Callable:
    """What computes the float64 probe of ``observe``: the kernel itself, except for
    compiled per-env kernels on up to :data:`_PYTHON_PROBE_ROWS` rows, whose probe runs the
    same ``observe_env`` as their Python loop (``kernels="python"``). numba compiles a
    class's loop per argument type, so a compiled probe would compile the whole loop again
    for float64 buffers, seconds per class (docs/performance.md, "Debug mode"); on a big
    batch that once costs less than the Python loop."""
    python_twin = getattr(inner, "python_twin", None)
    if python_twin is None or inner.kind != "numba" or rows > _PYTHON_PROBE_ROWS:
        return original
    twin = python_twin(env)

    def probe(s: State, out: np.ndarray) -> None:
        twin.observe(env, s, out)

    return probe


def _outside(space: spaces.Space, obs: np.ndarray) -> np.ndarray | None:
    """Entries of a batch of observations outside ``space`` (None: not checked)."""
    if isinstance(space, spaces.Box):
        with np.errstate(invalid="ignore"):
            return ~((obs >= space.low) & (obs <= space.high))
    if isinstance(space, spaces.Discrete):
        return (obs < space.start) | (obs >= space.start + space.n)
    if isinstance(space, spaces.MultiDiscrete):
        return (obs < space.start) | (obs >= space.start + space.nvec)
    if isinstance(space, spaces.MultiBinary):
        return (obs != 0) & (obs != 1)
    return None
