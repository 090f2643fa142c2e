"""The fuzz of an env's declared valid ranges (``batchenv.state.Range``), shared by the
MinAtar, MiniGrid and Crafter tests.

* :func:`fill_inside`: records with every ranged field drawn inside its range (a quarter
  of the values at a bound; integer or float fields), for a game's own ``repair`` to make
  pass ``check_state``;
* :func:`step_alike`: such records set into an env compiled and one run as a Python loop,
  stepped with random actions: neither may raise, both must give the same observations,
  rewards, flags and whole state (a compiled kernel that reads past an array's end gets
  another row's bytes, where the Python loop raises or wraps), and every state reached must
  be inside the ranges and pass ``check_state`` again (so that debug mode, which checks the
  ranges after every step, never refuses what a correct step made);
* :func:`assert_every_bound_refused`: for every ranged field, a value one past each bound
  (where the field's dtype holds it) in one env is refused by ``set_state`` with a
  ValueError naming the field, its range, the value and the env, and nothing changes.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np

from batchenv.validation import outside_ranges

#: Where a range has no bound on one side, values are drawn this far from the other bound
#: (a counter's dtype end is no state a game reaches: one step past it wraps around).
OPEN_SIDE = 10**6


def _limits(dtype: np.dtype) -> Any:
    return np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)


def bounds(env: Any, name: str) -> tuple[float, float]:
    """The field's range as two numbers (an open side: :data:`OPEN_SIDE` from the other,
    within the dtype): ints for an integer field."""
    low, high = env.state_field_ranges[name].resolve(env)
    dtype = env.full_state_dtype[name].base
    info = _limits(dtype)
    low = max(info.min, (high if high is not None else 0) - OPEN_SIDE) if low is None else low
    high = min(info.max, low + OPEN_SIDE) if high is None else high
    return (float(low), float(high)) if dtype.kind == "f" else (int(low), int(high))


def fill_inside(env: Any, records: np.ndarray, rng: np.random.Generator,
                at_bounds: float = 0.25) -> np.ndarray:
    """``records`` (a copy) with every ranged field drawn uniformly inside its range, a
    fraction ``at_bounds`` of the values at one of its bounds."""
    out = records.copy()
    for name in env.state_field_ranges:
        low, high = bounds(env, name)
        shape = out[name].shape
        if env.full_state_dtype[name].base.kind == "f":
            values = rng.uniform(low, high, shape)
        else:
            values = rng.integers(low, high + 1, shape)
        edge = rng.random(shape) < at_bounds
        values[edge] = np.where(rng.random(np.count_nonzero(edge)) < 0.5, low, high)
        out[name] = values
    return out


def problems(env: Any, records: np.ndarray) -> list[str]:
    """What ``set_state`` would refuse in ``records``, with the env indices."""
    found = {**outside_ranges(env, records), **env.check_state(records)}
    out = []
    for what, bad in found.items():
        rows = np.flatnonzero(np.asarray(bad).reshape(len(records), -1).any(axis=1))
        if len(rows):
            out.append(f"{what} at env indices {rows.tolist()}")
    return out


def step_alike(compiled: Any, python: Any, records: np.ndarray, steps: int,
               rng: np.random.Generator) -> None:
    """Set ``records`` into both envs and step them alike (see the module's docstring)."""
    assert (compiled.kernels, python.kernels) == ("numba", "python")
    assert not problems(compiled, records), problems(compiled, records)
    compiled.set_state(records)
    python.set_state(records)
    for t in range(steps):
        actions = rng.integers(0, compiled.single_action_space.n, compiled.num_envs)
        a = compiled.step(actions)
        with warnings.catch_warnings():  # numpy's scalars warn where an int8 wraps around,
            warnings.simplefilter("ignore", RuntimeWarning)  # as the compiled code wraps
            b = python.step(actions)
        for what, x, y in zip(("obs", "reward", "terminated", "truncated"), a, b):
            np.testing.assert_array_equal(x, y, err_msg=f"step {t}: {what}")
        state = compiled.get_state()
        np.testing.assert_array_equal(state, python.get_state(), err_msg=f"step {t}: state")
        assert not problems(compiled, state), (t, problems(compiled, state))


def _shown(value: float) -> str:
    return f"{value:g}"


def assert_every_bound_refused(env: Any, records: np.ndarray, rng: np.random.Generator
                               ) -> int:
    """See the module's docstring; ``records`` pass (they are set first). Returns the
    number of refusals checked."""
    env.set_state(records)
    before = env.get_state()
    checked = 0
    for name, declared in env.state_field_ranges.items():
        low, high = declared.resolve(env)
        dtype = env.full_state_dtype[name].base
        info = _limits(dtype)
        if dtype.kind == "f":  # the next value the field holds past each bound
            beyond = (None if low is None else np.nextafter(dtype.type(low), -np.inf),
                      None if high is None else np.nextafter(dtype.type(high), np.inf))
        else:
            beyond = (None if low is None else low - 1, None if high is None else high + 1)
        for value in beyond:
            if value is None or not info.min <= value <= info.max:
                continue
            bad = records.copy()
            k = int(rng.integers(len(bad)))
            column = bad[name].reshape(len(bad), -1)
            column[k, rng.integers(column.shape[1])] = value
            bad[name] = column.reshape(bad[name].shape)
            shown = (f"field '{name}' outside [{_shown(low) if low is not None else '-inf'}, "
                     f"{_shown(high) if high is not None else 'inf'}] "
                     f"(e.g. {np.asarray(value).item()})")
            try:
                env.set_state(bad)
            except ValueError as error:
                message = str(error)
                assert re.search(re.escape(shown) + r" at env indices \[" + str(k) + r"\]",
                                 message), message
            else:
                raise AssertionError(f"set_state took {name} = {value} in env {k}")
            np.testing.assert_array_equal(env.get_state(), before, err_msg=name)
            checked += 1
    return checked


def assert_refused(env: Any, records: np.ndarray, k: int, what: str) -> None:
    """``set_state(records)`` raises a ValueError naming ``what`` (a regex) at env ``k``,
    and changes nothing."""
    before = env.get_state()
    try:
        env.set_state(records)
    except ValueError as error:
        assert re.search(what + r"[^;]* at env indices \[" + str(k) + r"\]", str(error)), \
            str(error)
    else:
        raise AssertionError(f"set_state took a state with {what} in env {k}")
    np.testing.assert_array_equal(env.get_state(), before)
