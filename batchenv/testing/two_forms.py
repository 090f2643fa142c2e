"""``check_env``'s ``two_forms`` check: a per-env env's compiled loop against its Python form.

A per-env env (``reset_env``, ``step_env``, ``observe_env``) runs compiled by numba, and
as a plain Python loop with ``kernels="python"``, the form an author steps through with a
debugger. The two run the same functions but not the same arithmetic everywhere: numpy
keeps ``np.float32 * 2.0`` in float32 where numba computes it in float64 (NEP 50), and
``1.0 / 0.0`` on Python floats raises where numba gives ``inf``. (Integers narrower than 64
bits agree by construction: the Python form reads them as int64 and stores them wrapped, as
numba does.) This check runs both forms side by side on the same states and the same
actions, kernel by kernel, and reports the first divergence: the kernel, the field, the
env index and the step.

It runs :data:`ENVS` envs for up to :data:`STEPS` steps: the Python form is slow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from batchenv._loops import PerEnvForm, author_frame
from batchenv.debug import DebugForm
from batchenv.state import State, put_rows, take_rows
from batchenv.testing._findings import _Fail

__all__ = ["check_two_forms", "ENVS", "STEPS", "HINT"]

#: Envs and steps of the run (the Python form steps a few thousand envs a second).
ENVS, STEPS = 4, 32

HINT = ("kernels='python' runs the same functions with numpy's arithmetic, the compiled "
        "loop with numba's: where they differ (float32 with a Python float, a Python "
        "float divided by zero, numpy bools in arithmetic), write the line so that both "
        "compute the same (np.float32 constants or float64 fields, int(flag)); see "
        "docs/writing_envs.md, section 7")
_ZERO = (" (numba divides by zero as numpy does: inf, nan, or 0 for integers; a Python float "
         "or int raises)")


class Divergence(Exception):
    """The two forms differ: ``kernel`` is the per-env kernel that ran, the message says
    where and how."""

    def __init__(self, kernel: str, message: str) -> None:
        super().__init__(message)
        self.kernel = kernel


def check_two_forms(c: Any) -> None:  # c: check_env's context (contract._Context)
    """The compiled loop and the Python form, from the same states with the same actions:
    every reset, step and observation equal (floats equal or both NaN)."""
    env = c.make(ENVS)
    try:
        inner = env.unwrapped
        form = inner.kernel_form
        compiled = form.inner if isinstance(form, DebugForm) else form
        if not isinstance(compiled, PerEnvForm) or compiled.kind != "numba":
            c.skipped["two_forms"] = (f"the env runs {compiled.kind!r} kernels, not a "
                                      f"compiled per-env loop")
            return
        try:
            _compare(c, env, inner, compiled, compiled.python_twin(inner))
        except Divergence as d:
            raise _Fail(d.kernel, str(d), HINT) from None
    finally:
        env.close()


#: One kernel over some rows: ``run(form, sub, rows)``, ``sub`` a State of ``rows``' rows.
Run = Callable[[PerEnvForm, State, np.ndarray], None]


def _compare(c: Any, env: Any, inner: Any, compiled: PerEnvForm,
             python: PerEnvForm) -> None:
    """Both forms in step: a reset of every row, then steps, each followed by a reset of
    the rows whose episode ended and an observation of every row."""
    env.reset(seed=c.seed)  # seeded streams and a start state to reset from
    everyone = np.arange(ENVS)
    sc, sp = take_rows(inner.state, everyone), take_rows(inner.state, everyone)
    obs = {compiled: np.zeros_like(inner._obs), python: np.zeros_like(inner._obs)}
    outputs: dict[str, dict[PerEnvForm, np.ndarray]] = {
        "reward": {f: np.zeros(ENVS, inner._reward.dtype) for f in obs},
        "terminated": {f: np.zeros(ENVS, bool) for f in obs}}
    elapsed = np.zeros(ENVS, dtype=np.int64)
    forms = (compiled, python)

    def reset(f: PerEnvForm, sub: State, rows: np.ndarray) -> None:
        f.reset_envs(inner, sub, None)

    def observe(f: PerEnvForm, sub: State, rows: np.ndarray) -> None:
        out = np.zeros((len(rows), *inner._obs.shape[1:]), inner._obs.dtype)
        f.observe(inner, sub, out)
        obs[f][rows] = out

    def observed(when: str) -> None:
        _both(forms, "observe_env", when, sc, sp, everyone, observe)
        _differ("observe_env", when, {"obs": (obs[compiled], obs[python])})

    _both(forms, "reset_env", "at the first reset", sc, sp, everyone, reset)
    observed("at the first reset")
    for t, a in enumerate(c.actions(env, min(c.steps, STEPS), c.seed), 1):
        action = np.asarray(inner._action_check(a))

        def step(f: PerEnvForm, sub: State, rows: np.ndarray, action: Any = action) -> None:
            reward, terminated = f.step_envs(inner, sub, action[rows], None)
            outputs["reward"][f][rows] = reward
            outputs["terminated"][f][rows] = terminated

        _both(forms, "step_env", f"at step {t}", sc, sp, everyone, step)
        _differ("step_env", f"at step {t}", {k: (v[compiled], v[python])
                                              for k, v in outputs.items()})
        elapsed += 1
        ended = np.flatnonzero(outputs["terminated"][compiled] | (elapsed >= c.horizon))
        if len(ended):
            _both(forms, "reset_env", f"at the reset after step {t}", sc, sp, ended, reset)
            elapsed[ended] = 0
        observed(f"at step {t}")


def _apply(f: PerEnvForm, s: State, rows: np.ndarray, run: Run) -> None:
    sub = take_rows(s, rows)
    run(f, sub, rows)
    put_rows(s, rows, sub)


def _both(forms: tuple[PerEnvForm, PerEnvForm], kernel: str, when: str, sc: State,
          sp: State, rows: np.ndarray, run: Run) -> None:
    """``run`` on the compiled form (state ``sc``) and the Python form (``sp``) over
    ``rows``; then the two states compared. The compiled form's own error is raised as it
    is (a kernel error that the other checks report too); an error of the Python form
    alone is a divergence, located by running the rows one at a time."""
    compiled, python = forms
    _apply(compiled, sc, rows, run)
    before = take_rows(sp, np.arange(len(sp)))
    try:
        with np.errstate(all="ignore"):  # numba's error model: numpy's (inf, nan, 0)
            _apply(python, sp, rows, run)
    except Exception as e:  # noqa: BLE001 - which env, and what it raised
        put_rows(sp, np.arange(len(sp)), before)
        env_index = _failing_row(python, before, rows, run)
        where = author_frame(e)
        raise Divergence(kernel, (
            f"{kernel} {when}: the Python form raised {type(e).__name__}: {e}"
            f"{'' if env_index is None else f' for env index {env_index}'}"
            f"{f' at {where}' if where else ''}; the compiled loop did not"
            f"{_ZERO if isinstance(e, ZeroDivisionError) else ''}")) from None
    _differ(kernel, when, {name: (a, b) for (name, a), (_, b) in zip(sc, sp)})


def _failing_row(python: PerEnvForm, before: State, rows: np.ndarray, run: Run
                 ) -> int | None:
    """The first of ``rows`` whose pass raises on its own, in the Python form."""
    for i in rows.tolist():
        try:
            with np.errstate(all="ignore"):
                _apply(python, take_rows(before, np.arange(len(before))), np.array([i]), run)
        except Exception:  # noqa: BLE001 - the first row that raises alone
            return int(i)
    return None


def _differ(kernel: str, when: str, pairs: dict[str, tuple[np.ndarray, np.ndarray]]
            ) -> None:
    """Divergence at the lowest env index where a pair differs (its first field, and how
    many others differ there), or nothing."""
    first: tuple[int, str, Any, Any] | None = None
    fields_at: dict[int, list[str]] = {}
    for name, (a, b) in pairs.items():
        a, b = np.asarray(a), np.asarray(b)
        rows = _rows_differing(a, b)
        for i in rows[:1].tolist():
            fields_at.setdefault(i, []).append(name)
            if first is None or i < first[0]:
                first = (i, name, a[i], b[i])
    if first is None:
        return
    i, name, x, y = first
    others = [f for f in fields_at.get(i, []) if f != name]
    more = f" (and {', '.join(others[:5])})" if others else ""
    raise Divergence(kernel, (
        f"{kernel} {when}: the compiled loop and kernels='python' differ in {name!r}{more} "
        f"at env index {i}: compiled {_shown(x)}, python {_shown(y)}{_why(x, y)}"))


def _rows_differing(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "fc":
        same = (a == b) | (np.isnan(a) & np.isnan(b))
    else:
        same = a == b
    return np.flatnonzero(~same.reshape(len(a), -1).all(axis=1))


def _shown(x: Any) -> str:
    x = np.asarray(x)
    if x.ndim == 0:
        return repr(x.item()) if x.dtype.kind != "f" else f"{x.item()!r} ({x.dtype})"
    text = np.array2string(x, threshold=12, max_line_width=200)
    return text if len(text) < 200 else text[:200] + " ..."


def _why(x: Any, y: Any) -> str:
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype == np.float64 and y.dtype == np.float64 and x.shape == y.shape and \
            np.all(np.abs(x - y) <= 2.0**-20 * np.maximum(np.abs(x), np.abs(y))):
        return (" (a float32-sized rounding difference: float32 arithmetic on the way, a "
                "float32 field or action with a Python float, is float64 in numba and "
                "float32 in numpy)")
    if x.dtype == np.float32 and y.dtype == np.float32 and x.shape == y.shape:
        ulps = np.abs(x.view(np.int32).astype(np.int64) - y.view(np.int32).astype(np.int64))
        if ulps.max() <= 16:
            return (f" ({int(ulps.max())} float32 ulp: float32 arithmetic rounded differently; "
                    f"numba computes a float32 with a Python float in float64, numpy keeps "
                    f"float32)")
    return ""
