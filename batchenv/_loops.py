"""The per-env form at run time: one class's kernels compiled into one loop over the batch
(:data:`TEMPLATE`), and :class:`PerEnvForm`, which steps an env with it.

The loop is ``_loops_template.py``, run once per class with the class's kernels as globals:
compiled by numba (``kernels="numba"``), with bounds checks (the checked form of debug mode
and ``check_env``), or as plain Python (``kernels="python"``). A class's compiled loop is
made on its first call (``reset``), found in the disk cache when an earlier process compiled
the same code (:mod:`batchenv._loop_cache`), and kept for the process.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import re
import threading
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from sys import getrefcount
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium.vector import AutoresetMode

from batchenv import _loop_cache
from batchenv._borrow import first_bad_action
from batchenv.forms import PER_ENV_KERNELS, KernelForm

if TYPE_CHECKING:
    from batchenv.state import State

__all__ = ["PerEnvForm", "Loops", "loops", "STEP", "RESET", "OBSERVE", "STEP_ONLY",
           "RESET_OBSERVE", "TEMPLATE"]

#: The loop's file (a template, run once per class; see its header).
TEMPLATE = Path(__file__).with_name("_loops_template.py")
#: ``run``'s operations (see the template).
STEP, RESET, OBSERVE, STEP_ONLY, RESET_OBSERVE = range(5)
#: ``max_steps`` of an env without a time limit (never reached).
NO_LIMIT = 2**62
#: The dtype of the rewards the compiled loop writes, whatever `reward_dtype` an env returns:
#: one compile of a class serves both (a single env returns float64, a batch float32).
LOOP_REWARD = np.dtype(np.float64)
#: Steps of a single env before its loop is called through a table of pointers
#: (:meth:`PerEnvForm.step_one`): a short-lived env never pays for that compile.
ONE_WARMUP = 64
_MODES = {AutoresetMode.NEXT_STEP: 0, AutoresetMode.SAME_STEP: 1, AutoresetMode.DISABLED: 2}
# numba's options for the loop and the kernels it inlines. error_model "numpy": a float
# division by zero gives inf or nan (as numpy's scalars do in the Python form), not
# ZeroDivisionError; nogil: the threads of num_threads > 1 run blocks of rows at once.
_OPTIONS = {"nogil": True, "error_model": "numpy"}


@functools.cache
def template_text() -> str:
    return TEMPLATE.read_text(encoding="utf-8")


# ---------------------------------------------------------------- the namedtuples s and p
# One class per list of names, shared by every env class with that list: numba tells
# namedtuple types apart by class, so classes that share them (MiniGrid's envs) share the
# compiled code of the rules their kernels call. The classes live in this module, named
# after their fields, so that numba's disk cache names them by reference in every process.
_TUPLES: dict[tuple[str, tuple[str, ...]], Any] = {}
_TUPLES_LOCK = threading.Lock()


def tuple_class(kind: str, names: tuple[str, ...]) -> Any:
    """The namedtuple class of ``kind`` (``"State"`` or ``"Params"``) with fields ``names``."""
    with _TUPLES_LOCK:  # (envs made on two threads at once get the same class)
        made: Any = _TUPLES.get((kind, names))
        if made is None:
            digest = hashlib.sha256(repr(names).encode()).hexdigest()[:12]
            name = f"Kernel{kind}_{digest}"
            made = collections.namedtuple(name, names)  # type: ignore[misc, no-redef]
            made.__module__ = __name__
            globals()[name] = _TUPLES[(kind, names)] = made
    return made


# ---------------------------------------------------------------- one class's loop
class Loops:
    """The ``run`` function of one class's kernels over ``s`` with ``fields`` and ``p``
    with ``params``: made on the first :meth:`run_for` call, compiled (``how="numba"``,
    bounds-checked when ``checked``) or plain Python."""

    def __init__(self, cls: type, how: str, checked: bool, fields: tuple[str, ...],
                 params: tuple[str, ...], dtypes: tuple[Any, ...]) -> None:
        self.cls, self.how, self.checked = cls, how, checked
        self.state_tuple = tuple_class("State", fields)
        self.param_tuple = tuple_class("Params", params)
        self.dtypes = dtypes
        self.kernels = tuple(getattr(cls, name) for name in PER_ENV_KERNELS)
        self.run: Any = None
        self.path: str | None = None  # the cached module's file, when the cache served it
        self._lock = threading.Lock()

    def run_for(self, args: tuple[Any, ...]) -> Callable[..., int]:
        """``run``, compiled for ``args``' types (a call over no row)."""
        if self.run is not None:
            return self.run
        with self._lock:
            if self.run is None:
                self.run = self._plain() if self.how == "python" else self._compiled(args)
        return self.run

    def _globals(self, inner: Any, outer: Any) -> dict[str, Any]:
        from batchenv import _borrow

        # (a kernel that is also a @perenv.rule is a numba function already: its Python)
        kernels = (getattr(k, "py_func", k) for k in self.kernels)
        return {**dict(zip(PER_ENV_KERNELS, (inner(k) for k in kernels))),
                "StateTuple": self.state_tuple, "ParamTuple": self.param_tuple,
                "borrow": _borrow.borrow, "borrow_all": _borrow.borrow_all,
                "first_bad_action": first_bad_action, "inner": inner, "outer": outer}

    def _plain(self) -> Any:
        def same(f: Any) -> Any:
            return f

        namespace = self._globals(same, same)
        namespace["__name__"] = f"{__name__}.<loop of {self.cls.__qualname__}>"
        exec(compile(template_text(), f"<batchenv loop of {self.cls.__qualname__}>", "exec"),
             namespace)
        return namespace["run"]

    def _compiled(self, args: tuple[Any, ...]) -> Any:
        import numba

        from batchenv import _borrow

        _borrow.install()
        options: dict[str, Any] = {**_OPTIONS, "boundscheck": self.checked}
        inner = numba.njit(inline="always", **options)
        cached = self._from_cache(inner, numba.njit(cache=True, **options), options)
        failed: Exception | None = None
        if cached is not None:
            try:
                self._first_call(cached, args, cached=True)
                return cached
            except Exception as e:  # noqa: BLE001 - the entry, or the kernels? see below
                failed = e
        namespace = self._globals(inner, numba.njit(**options))
        namespace["__name__"] = f"{__name__}.<loop of {self.cls.__qualname__}>"
        exec(compile(template_text(), f"<batchenv loop of {self.cls.__qualname__}>", "exec"),
             namespace)
        run = namespace["run"]
        try:
            self._first_call(run, args, cached=False)  # (the kernels' own error raises here)
        except OSError as e:  # numba could not write its cache of a function the kernels
            # call (a user's cache=True helper, a full disk: numba guards its cache writes
            # only on Windows); it keeps that function before it writes, so a second call
            # compiles the loop
            where = e.filename or "(numba's cache of a function the kernels call)"
            _loop_cache.warn_unusable(self.cls, str(where), e)
            self._first_call(run, args, cached=False)
        if failed is not None:  # compiled without it: the cache entry was at fault
            _loop_cache.warn_unusable(self.cls, self.path, failed)
            _loop_cache.discard(self.path)
            self.path = None
        return run

    def _from_cache(self, inner: Any, outer: Any, options: dict[str, Any]) -> Any:
        """``run`` from a module in the cache directory, or None (the cache is off, cannot
        key the class, or cannot be written)."""
        directory = _loop_cache.cache_dir()
        if directory is None:
            return None
        try:
            key = _loop_cache.key(self.cls, self.kernels,
                                  (sorted(options.items()), self.dtypes,
                                   self.state_tuple._fields, self.param_tuple._fields))
        except _loop_cache.Uncachable as e:
            _loop_cache.log.debug("%s: per-env loop not cached: %s", self.cls.__qualname__, e)
            return None
        name = f"_batchenv_loop_{self.cls.__name__}_{key[:24]}"
        header = (f"# The per-env loop of {self.cls.__module__}.{self.cls.__qualname__}, "
                  f"written by batchenv\n# (numba caches its machine code in __pycache__ "
                  f"beside this file; deleting this\n# directory is always safe).\n")
        try:
            module = _loop_cache.load(name, header + template_text(), directory,
                                      self._globals(inner, outer))
        except Exception as e:  # noqa: BLE001 - unwritable, full, or unreadable: uncached
            _loop_cache.warn_unusable(self.cls, str(directory / f"{name}.py"), e)
            return None
        self.path = str(module.__file__)
        return module.run

    def _first_call(self, run: Any, args: tuple[Any, ...], cached: bool) -> None:
        """Compile ``run`` for ``args``' types (or load it from the cache) with a call over
        no row, the kernels' typing errors said in the author's terms."""
        from numba.core.errors import TypingError

        try:
            run(*args[:13], 0, 0, 0)
        except TypingError as e:
            if cached:
                raise
            kernels = tuple(getattr(k, "py_func", k) for k in self.kernels)
            raise TypeError(_typing_error(self.cls, e, kernels)) from e


def _typing_error(cls: type, e: Exception, kernels: tuple[Any, ...] = ()) -> str:
    """numba's typing error, with what to do when a kernel calls a plain Python function."""
    text = str(e)
    undefined = re.search(r"NameError: name '([^']+)' is not defined", text)
    if undefined and any(isinstance(getattr(k, "__globals__", {}).get(undefined[1]),
                                    types.FunctionType) for k in kernels):
        return (f"{cls.__name__}: a per-env kernel calls {undefined[1]}(), a plain Python "
                f"function numba cannot compile: decorate it with @perenv.rule (or "
                f"@numba.njit). numba said:\n{text}")
    marker = "Untyped global name '"
    if marker in text:
        name = text.split(marker, 1)[1].split("'", 1)[0]
        if "<class 'function'>" in text or "type of <class 'function'>" in text:
            return (f"{cls.__name__}: a per-env kernel calls {name}(), a plain Python "
                    f"function numba cannot compile: decorate it with @perenv.rule (or "
                    f"@numba.njit). numba said:\n{text}")
    return f"{cls.__name__}: numba could not compile the per-env kernels:\n{text}"


_MADE: dict[tuple[Any, ...], Loops] = {}
_MADE_LOCK = threading.Lock()


def loops(cls: type, how: str, checked: bool, fields: tuple[str, ...],
          params: tuple[str, ...], dtypes: tuple[Any, ...]) -> Loops:
    """The :class:`Loops` of ``cls`` (one per process for these arguments)."""
    memo = (cls, how, checked, fields, params, dtypes)
    with _MADE_LOCK:
        made = _MADE.get(memo)
        if made is None:
            made = _MADE[memo] = Loops(cls, how, checked, fields, params, dtypes)
    return made


# ---------------------------------------------------------------- the Python form's scalars
# In the Python form the kernels read scalars of the state as numpy gives them, and numpy
# keeps an int8 + 1 in int8 (wrapping at 127) where numba computes it in int64: a test such
# as `if s.x[i] + 1 > 127` would go the other way. The Python form therefore reads integers
# narrower than 64 bits as int64, as numba's arithmetic sees them, and stores a value that
# does not fit wrapped to the field's width, as numba's store does (numpy would raise
# OverflowError for a Python int out of range).
_WIDER = {np.int8: np.int64, np.int16: np.int64, np.int32: np.int64, np.uint8: np.int64,
          np.uint16: np.int64, np.uint32: np.int64}


class _Widened(np.ndarray):
    """An array whose scalar reads of narrow integers are int64 (see :data:`_WIDER`)."""

    def __getitem__(self, key: Any) -> Any:
        value = np.ndarray.__getitem__(self, key)
        wider = _WIDER.get(type(value))
        return value if wider is None else wider(value)

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(value, (int, np.integer)):
            value = np.array(value, dtype=np.int64).astype(self.dtype)  # wraps, as numba
        np.ndarray.__setitem__(self, key, value)


def _widened(a: Any) -> Any:
    if isinstance(a, np.ndarray) and a.dtype.kind in "iu" and a.dtype.itemsize < 8:
        return a.view(_Widened)
    return a


# ---------------------------------------------------------------- the form
class PerEnvForm(KernelForm):
    """The per-env kernels of an env's class, run as one loop over the batch: the
    numpy-form kernel methods (each one pass over the rows, for the base class's resets and
    debug mode) and the whole :meth:`step` in one pass."""

    fused = True

    def __init__(self, env: Any, kind: str, num_threads: int, why: str,
                 checked: bool = False) -> None:
        super().__init__(kind, num_threads, why, checked)
        cls = type(env)
        self.cls = cls
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
        space = env.single_observation_space
        if not space.shape:
            raise TypeError(f"{cls.__name__}: per-env kernels need an observation space with "
                            f"a shape (observe_env writes obs = out[i]); got {space}")
        self.param_names = tuple(getattr(cls, "kernel_params", ()))
        self.loops = loops(cls, "python" if kind == "python" else "numba", checked,
                           (*names, *self.view_names), self.param_names,
                           tuple((n, dtype[n].base.str, dtype[n].ndim) for n in names))
        self._fields_of: dict[int, tuple[Any, tuple[Any, ...]]] = {}
        self.params_stale = True
        self.p: tuple[Any, ...] = ()
        self.actions = ActionForm(env.single_action_space, env.num_envs)
        self.pool = OutputPool(env._obs, env._reward.dtype, env.num_envs)
        n = env.num_envs
        self.every = np.ones(n, dtype=np.bool_)  # run's `chosen`: every row
        # the observation of the operations that write none (never indexed), and their
        # rewards and flags (op 1 and 2 write neither)
        self.no_obs = np.zeros((1, *env._obs.shape[1:]), dtype=env._obs.dtype)
        self.scratch = (np.zeros(n, dtype=LOOP_REWARD), np.zeros(n, dtype=np.bool_),
                        np.zeros(n, dtype=np.bool_))
        # the loop's rewards, when the env returns another dtype (converted after the pass)
        self.loop_reward = (None if env._reward.dtype == LOOP_REWARD
                            else np.zeros(n, dtype=LOOP_REWARD))
        self._workers: Workers | None = None
        self._single: _SingleCall | None = None  # step_one's arguments and calls
        self._bounds: dict[tuple[int, int], list[int]] = {}

    # -------------------------------------------------------------- arguments
    def params_changed(self) -> None:
        self.params_stale = True
        twin = getattr(self, "_twin", None)
        if twin is not None:
            twin.params_stale = True

    def params(self, env: Any) -> tuple[Any, ...]:
        """The values of ``kernel_params``, read again after one of them was set."""
        if self.params_stale:
            values = tuple(getattr(env, name) for name in self.param_names)
            if self.kind == "python":
                values = tuple(_widened(v) for v in values)
            else:
                from batchenv import _borrow

                for v in values:
                    _borrow.fast_typeof(v)
            self.p = values
            self.params_stale = False
        return self.p

    def fields(self, s: State) -> tuple[Any, ...]:
        """``s``'s field arrays, then the class's ``kernel_views`` of them
        (``state_views(s)``), in the order of the kernels' ``s`` (made once per State)."""
        held = self._fields_of.get(id(s))
        if held is None or held[0] is not s:
            if len(self._fields_of) > 8:
                self._fields_of.clear()
            views: Any = self.state_views(s) if self.view_names else {}
            arrays = (*(a for name, a in s if name not in self.hidden),
                      *(_contiguous(views[name]) for name in self.view_names))
            if self.kind == "python":
                arrays = tuple(_widened(a) for a in arrays)
            held = self._fields_of[id(s)] = (s, arrays)
        return held[1]

    # -------------------------------------------------------------- running the loop
    def _run(self, n: int, args: tuple[Any, ...], start: int = 0) -> int:
        """``run(*args)`` over rows ``[start, n)``: in one call, or (``num_threads > 1``)
        in ``num_threads`` blocks of rows at once on threads (the loop releases the GIL).
        Every env's pass reads and writes only its own row, so the blocks never meet and
        the results are the same for every thread count."""
        run = self.loops.run_for(args)
        if self.kind == "python":
            with np.errstate(over="ignore"):  # the streams' uint64 arithmetic wraps
                return int(run(*args, start, n))
        if self.num_threads == 1 or n - start < 2 * self.num_threads:
            return int(run(*args, start, n))
        if self._workers is None:
            self._workers = Workers(self.num_threads - 1)
        bounds = self._bounds.get((start, n))
        if bounds is None:
            bounds = self._bounds[start, n] = np.linspace(
                start, n, self.num_threads + 1).astype(int).tolist()
        self._workers.run(run, args, bounds)
        return -1

    def _op(self, env: Any, op: int, s: State, obs: np.ndarray,
            chosen: np.ndarray | None = None, outputs: tuple[np.ndarray, ...] | None = None,
            action: Any = None) -> None:
        """One of ``run``'s numpy-form operations over every row of ``s`` (``chosen``: the
        rows a reset writes); checked, one env at a time (:meth:`_checked_op`)."""
        form = self.actions
        reward, terminated, truncated = outputs or self.scratch
        args = (self.params(env), self.fields(s), op, self.every if chosen is None else chosen,
                form.dummy if action is None else action, form.low, form.high, reward,
                terminated, truncated, obs, 0, NO_LIMIT, 0)
        if self.checked:
            self._checked_op(env, s, args)
        else:
            self._run(len(s), args)

    def _checked_op(self, env: Any, s: State, args: tuple[Any, ...]) -> None:
        """The checked form: each env's pass on a batch of one, its row copied in and out,
        compiled with bounds checks (or in Python), so that any index past the env's own
        row (``s.x[i + 1]``) or past an array (``obs[row]`` off the board) is an error;
        then the batch is put back as it was and the env's pass is run again in Python to
        name the kernel's file and line (:class:`~batchenv.forms.KernelError`)."""
        from batchenv.state import copy_row, take_rows, to_records

        op = args[2]
        one = self._one_row(s)
        before = to_records(s)
        rows = np.flatnonzero(args[3][:len(s)]) if op == RESET else range(len(s))
        for i in rows:
            copy_row(one, 0, s, int(i))
            row_args = (args[0], self.fields(one), op, self.every[:1],
                        args[4][i:i + 1] if len(args[4]) > 1 else args[4], args[5], args[6],
                        *(a[i:i + 1] for a in args[7:10]),
                        args[10][i:i + 1] if len(args[10]) > 1 else args[10], *args[11:])
            try:
                self._run(1, row_args)
            except Exception as e:
                from batchenv.state import from_records

                from_records(s, before)
                raise self._located(env, e, op, int(i), take_rows(s, np.array([i])),
                                    row_args) from e
            copy_row(s, int(i), one, 0)

    def _one_row(self, s: State) -> State:
        from batchenv.state import take_rows

        held = getattr(self, "_one", None)
        if held is None or type(held) is not type(s) or held._dtype != s._dtype:
            held = self._one = take_rows(s, np.zeros(1, dtype=np.intp))
        return held

    def _located(self, env: Any, error: Exception, op: int, i: int, row: State,
                 row_args: tuple[Any, ...]) -> Exception:
        """The checked form's error for env ``i``: the kernel, the author's line (from the
        same pass run in Python on a copy of the row), the batch restored."""
        from batchenv.forms import KernelError

        kernel = {RESET: "reset_env", OBSERVE: "observe_env", STEP_ONLY: "step_env"}[op]
        location = None
        if self.kind != "python":
            twin = self.python_twin(env)
            try:
                twin._run(1, (twin.params(env), twin.fields(row), *row_args[2:]))
            except Exception as again:  # noqa: BLE001 - the same fault, seen from Python
                error = again
        location = author_frame(error)
        where = f" at {location}" if location else ""
        what = ("an index out of range (a kernel reads and writes row i of s, and obs "
                "within the observation's shape)" if isinstance(error, IndexError)
                else f"{type(error).__name__}")
        return KernelError(env, kernel, f"{what} for env index {i}{where}: "
                           f"{type(error).__name__}: {error} (the batch was restored)",
                           env_index=i, location=location, batch_restored=True)

    def python_twin(self, env: Any) -> PerEnvForm:
        """The same kernels as a Python loop (for debug mode's probes and locating a
        checked error), made once."""
        twin = getattr(self, "_twin", None)
        if twin is None:
            twin = self._twin = PerEnvForm(env, "python", 1, "the Python twin of a form")
        return twin

    def _rows(self, n: int) -> np.ndarray:
        if n > len(self.every):
            self.every = np.ones(n, dtype=np.bool_)
        return self.every[:n]

    # -------------------------------------------------------------- the numpy-form kernels
    def reset_envs(self, env: Any, s: State, rng: Any) -> None:
        self._op(env, RESET, s, self.no_obs, self._rows(len(s)))

    def reset_rows(self, env: Any, s: State, rows: np.ndarray, rng: Any) -> None:
        chosen = np.zeros(len(s), dtype=np.bool_)
        chosen[rows] = True
        self._op(env, RESET, s, self.no_obs, chosen)

    def step_envs(self, env: Any, s: State, action: np.ndarray, rng: Any
                  ) -> tuple[np.ndarray, np.ndarray]:
        n = len(s)
        outputs = (np.zeros(n, dtype=LOOP_REWARD), np.zeros(n, dtype=np.bool_),
                   np.zeros(n, dtype=np.bool_))
        self._op(env, STEP_ONLY, s, self.no_obs, self._rows(n), outputs,
                 self.actions.loop_form(action))
        return outputs[0], outputs[1]

    def observe(self, env: Any, s: State, out: np.ndarray) -> None:
        with writable(out):
            self._op(env, OBSERVE, s, out, self._rows(len(s)))

    # -------------------------------------------------------------- the fused step
    def reset_observe(self, env: Any, s: State, out: np.ndarray) -> None:
        """Every row reset (its step count and ``awaiting_reset`` cleared) and observed
        into ``out``: each env's pass does both (op 4 with every row chosen)."""
        one = self._single  # a single env's: through its table of pointers, when made
        if one is not None and one.reset_call is not None and s is one.state \
                and out is one.obs_buffer and not self.params_stale:
            with writable(out):
                one.reset_call()
            return
        with writable(out):
            self._op(env, RESET_OBSERVE, s, out, self._rows(len(s)))

    def step(self, env: Any, actions: Any
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The whole step in one pass: the actions in the loop's one form (checked by
        the compiled pass before any row changes, or by the Python checker first), every
        env stepped exactly once whatever the thread count. With ``copy=True`` the loop
        writes straight into the arrays that are returned (:class:`OutputPool`)."""
        a, check = self.actions.prepare(env, actions)
        n = env.num_envs
        copy, fresh = env.copy, env.copy and env.observe_fills_out
        if copy:
            reward, terminated, truncated, out = self.pool.take()
            obs = out if fresh else env._obs
        else:
            obs, reward, terminated, truncated = (env._obs, env._reward, env._terminated,
                                                  env._truncated)
        limit = env.max_episode_steps
        loop_reward = reward if self.loop_reward is None else self.loop_reward
        args = (self.params(env), self.fields(env.state), STEP, self.every, a,
                self.actions.low, self.actions.high, loop_reward, terminated, truncated, obs,
                _MODES[env.autoreset_mode], NO_LIMIT if limit is None else limit)
        with writable(obs):
            env._phase[0] = "step"  # (an error from the kernels leaves the batch half-stepped)
            if check and self.num_threads > 1:  # the whole batch's check first, no row
                bad = self.loops.run_for(args)(*args, 2, 0, n)  # changed if it refuses
                check = 0
            else:  # checked in the same pass, before any row changes
                bad = -1
            if bad < 0:
                bad = self._run(n, (*args, check))
            if bad >= 0:
                env._phase[0] = None
                self.actions.refuse(env, actions, bad)
            if self.loop_reward is not None:
                np.copyto(reward, loop_reward, casting="same_kind")
            info: dict[str, Any] = {}
            if env.autoreset_mode is AutoresetMode.SAME_STEP:
                info = self._same_step_resets(env, args, obs, terminated, truncated)
        if copy and not fresh:
            np.copyto(out, obs)
            obs = out
        if env._info_fields:
            env._field_info(info)
        return obs, reward, terminated, truncated, info

    def step_one(self, env: Any, action: Any
                 ) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """:meth:`step` for a batch of one in ``DISABLED`` mode with one action already
        checked (an int of a ``Discrete`` space, or a valid array): the same loop on the
        same state, with one argument tuple kept between steps (made again when the
        state, the observation buffer, a parameter or the time limit changes) and the
        scalars read as Python's. After :data:`ONE_WARMUP` steps of the same arguments the
        loop is called through a table of pointers (:mod:`batchenv._one`), when it can
        be: a compile of a small wrapper, which pays for an env that keeps stepping."""
        one = self._single
        if one is None or self.params_stale or not one.made_for(env):
            one = self._single = _SingleCall(self, env)
        one.action[0] = action
        env._phase[0] = "step"  # (an error from the kernels leaves the env half-stepped)
        if one.obs_writable:
            one.call()
        else:  # (a canvas handed out read-only: writable for the call)
            with writable(env._obs):
                one.call()
        one.to_pointers -= 1
        if one.to_pointers == 0 and self.kind != "python":
            one.use_pointers(self)
        reward, terminated, truncated = one.outputs
        info: dict[str, Any] = env._field_info({}) if env._info_fields else {}
        r = reward.item() if self.loop_reward is None else float(env._reward.dtype.type(reward[0]))
        return one.obs.copy(), r, terminated.item(), truncated.item(), info

    def _same_step_resets(self, env: Any, args: tuple[Any, ...], obs: np.ndarray,
                          terminated: np.ndarray, truncated: np.ndarray) -> dict[str, Any]:
        """SAME_STEP: the envs that ended, observed as they ended, then a new episode each."""
        ended = np.logical_or(terminated, truncated)
        if not np.count_nonzero(ended):
            return {}
        done = ended.nonzero()[0]
        final_obs = np.full(env.num_envs, None, dtype=object)
        final_obs[done] = list(obs[done])
        final_info = env._final_field_info(done)
        self._run(env.num_envs, (*args[:2], RESET_OBSERVE, ended, *args[4:], 0))
        return {"final_obs": final_obs, "_final_obs": ended, "final_info": final_info,
                "_final_info": ended.copy()}


class _SingleCall:
    """:meth:`PerEnvForm.step_one`'s call of the loop over a batch of one: its arguments
    made once, for one state, observation buffer and time limit; after
    :data:`ONE_WARMUP` steps the same loop through a table of pointers."""

    def __init__(self, form: PerEnvForm, env: Any) -> None:
        rows = form.actions.buffer
        self.action = rows if rows is not None else np.zeros(1, dtype=np.int64)
        self.outputs = (np.zeros(1, dtype=LOOP_REWARD), np.zeros(1, dtype=np.bool_),
                        np.zeros(1, dtype=np.bool_))
        self.state, self.obs_buffer, self.limit = env.state, env._obs, env.max_episode_steps
        self.obs = env._obs[0]  # env 0's observation, copied out after each step
        self.obs_writable = env._obs.flags.writeable
        self.args = (form.params(env), form.fields(env.state), STEP, form.every[:1],
                     self.action, form.actions.low, form.actions.high, *self.outputs,
                     env._obs, _MODES[AutoresetMode.DISABLED],
                     NO_LIMIT if self.limit is None else self.limit, 0, 0, 1)
        self.call: Callable[[], Any]
        if form.kind == "python":
            self.call = functools.partial(form._run, 1, self.args[:-2])
        else:  # (compiled since the first reset; the action's range was checked)
            self.call = functools.partial(form.loops.run_for(self.args), *self.args)
        self.reset_call: Callable[[], Any] | None = None  # a full reset, by pointers
        self.to_pointers = ONE_WARMUP  # steps before the pointer call is made

    def made_for(self, env: Any) -> bool:
        return (self.state is env.state and self.obs_buffer is env._obs
                and self.limit is env.max_episode_steps)

    def use_pointers(self, form: PerEnvForm) -> None:
        """Step (and fully reset) through a table of pointers, where it can be made."""
        from batchenv._one import pointer_call

        call = pointer_call(form.loops, form.loops.run, self.args)
        if call is not None:
            self.call = call
            args = self.args
            self.reset_call = pointer_call(form.loops, form.loops.run,
                                           (*args[:2], RESET_OBSERVE, *args[3:11], 0,
                                            *args[12:]))


def _contiguous(view: np.ndarray) -> np.ndarray:
    """A ``kernel_views`` array as the loop borrows it: C-contiguous where it can be. A view
    over rows of a padded block (a slot view) is extended over each row's padding, which
    makes it contiguous; the kernels index envs below ``num_envs`` only."""
    if view.flags.c_contiguous or view.ndim < 2:
        return view
    item = view.itemsize
    # (the stride of an axis of one env is never used: numpy leaves it at the block's)
    last = view.strides[-1] if view.shape[-1] > 1 else item
    row = view.strides[-2] // item
    if last != item or view.strides[-2] % item or row < view.shape[-1]:
        return view
    padded = np.lib.stride_tricks.as_strided(view, (*view.shape[:-1], row),
                                             (*view.strides[:-1], item))
    return padded if padded.flags.c_contiguous else view


# ---------------------------------------------------------------- actions
class ActionForm:
    """The one form of the actions the loop takes, and their bounds for its range check:
    ``Discrete`` and ``MultiDiscrete`` actions as int64 arrays, checked in the loop
    (``low <= a < high``) when they come as such; any other form (a list, another dtype,
    ``Box`` actions to clip) is checked by the env's Python checker and then converted.
    Array-valued actions (a row per env) are copied into a buffer of the form's own, so
    that a kernel never writes the caller's array."""

    def __init__(self, space: Any, n: int) -> None:
        from gymnasium import spaces

        self.shape: tuple[int, ...] = (n, *(space.shape or ()))
        self.dtype = np.dtype(np.int64)
        self.compiled_check = False
        self.low = self.high = np.zeros(1, dtype=np.int64)
        if isinstance(space, spaces.Discrete):
            self.compiled_check = True
            self.low = np.array([space.start], dtype=np.int64)
            self.high = np.array([space.start + space.n], dtype=np.int64)
        elif isinstance(space, spaces.MultiDiscrete) and len(space.shape) == 1:
            self.compiled_check = True
            self.low = np.asarray(space.start, dtype=np.int64).copy()
            self.high = self.low + np.asarray(space.nvec, dtype=np.int64)
        elif not isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
            self.dtype = np.dtype(space.dtype)  # Box
        self.rows = len(self.shape) > 1  # an array per env: copied (see the docstring)
        self.buffer = np.zeros(self.shape, dtype=self.dtype) if self.rows else None
        #: An action batch for the operations that read no action.
        self.dummy = np.zeros((1, *self.shape[1:]), self.dtype)

    def prepare(self, env: Any, actions: Any) -> tuple[np.ndarray, int]:
        """``(actions in the loop's form, check)``: ``check`` 1 when the compiled pass
        must check their range (int64 arrays of the right shape, ``validate=True``), else 0
        (checked by the Python checker already, or ``validate=False``)."""
        a = actions
        if self.compiled_check and type(a) is np.ndarray and a.dtype == self.dtype \
                and a.shape == self.shape:
            check = int(env.validate)
        else:
            from batchenv.validation import read_only

            a = env._action_check(actions) if env.validate else read_only(actions)
            if a.shape != self.shape:  # (validate=False: nothing else is checked)
                raise ValueError(f"actions must have shape {self.shape}, got {a.shape}")
            check = 0
        return self.loop_form(a), check

    def loop_form(self, a: np.ndarray) -> np.ndarray:
        """``a`` as the loop takes it: of :attr:`dtype`, C-contiguous and writable (the
        loop uses the memory without reference counting), array-valued actions in
        :attr:`buffer` (a copy)."""
        if self.buffer is not None and a.shape == self.shape:
            np.copyto(self.buffer, a, casting="unsafe")
            return self.buffer
        if a.dtype != self.dtype or not a.flags.c_contiguous or not a.flags.writeable:
            a = np.array(a, dtype=self.dtype, order="C")
        return a

    def refuse(self, env: Any, actions: Any, row: int) -> None:
        """The compiled check found ``row``'s action out of range: the Python checker's
        error, which names the envs (nothing has changed)."""
        env._action_check(actions)  # raises
        raise ValueError(f"actions out of range for {env.single_action_space} at env index "
                         f"{row}: {np.asarray(actions)[row].tolist()}")


# ---------------------------------------------------------------- outputs
class OutputPool:
    """The arrays a ``copy=True`` step returns (reward, terminated, truncated, observation),
    written by the loop itself: fresh arrays, or a set returned by an earlier step that
    nothing outside holds any more (its reference count is the pool's own), which is then
    indistinguishable from a fresh one. Recycling spares an allocation per array per step,
    and for large observations the page faults of first writes into new memory."""

    # sets kept for reuse: in a loop that keeps the last step's outputs while it steps
    # (obs = env.step(a)[0]) the two alternate; a caller that keeps more gets fresh
    # arrays, and the pool never holds more than two
    KEEP = 2

    def __init__(self, obs: np.ndarray, reward_dtype: Any, n: int) -> None:
        self.obs_shape, self.obs_dtype, self.n = obs.shape, obs.dtype, n
        self.reward_dtype = reward_dtype
        self.sets: list[list[np.ndarray]] = []

    def take(self) -> list[np.ndarray]:
        """``[reward, terminated, truncated, obs]``, none of them held outside the pool."""
        for held in self.sets:  # (each array: one reference from `held`, one argument)
            if getrefcount(held[0]) == 2 and getrefcount(held[1]) == 2 \
                    and getrefcount(held[2]) == 2 and getrefcount(held[3]) == 2:
                return held[:]
        made = [np.empty(self.n, dtype=self.reward_dtype), np.empty(self.n, dtype=np.bool_),
                np.empty(self.n, dtype=np.bool_),
                np.empty(self.obs_shape, dtype=self.obs_dtype)]
        self.sets.insert(0, made)
        del self.sets[self.KEEP:]
        return made[:]


class writable:
    """Lets the loop write a buffer its env hands out read-only (``copy=False``
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


# ---------------------------------------------------------------- threads
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


class Workers:
    """Persistent threads that run blocks of rows of a compiled loop (which releases the
    GIL). A step hands each worker its block through a queue and runs the first block on
    the calling thread; a pool's per-task futures cost more than a light step."""

    def __init__(self, count: int) -> None:
        import queue

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


def author_frame(error: BaseException) -> str | None:
    """``file:line: source`` of the innermost frame of ``error``'s traceback outside
    batchenv and numpy (the author's kernel), or None."""
    found = None
    for frame in traceback.extract_tb(error.__traceback__):
        path = frame.filename.replace("\\", "/")
        if "/batchenv/" in path and "/batchenv/envs/" not in path or "/numpy/" in path \
                or path.startswith("<batchenv"):
            continue
        found = f"{frame.filename}:{frame.lineno}: {(frame.line or '').strip()}"
    return found

