"""Which form of an env's rules steps it: chosen once, at construction, by :func:`choose`,
and held by the env as a :class:`KernelForm` (``env.kernel_form``) that says which form runs
and why.

A class writes its rules as numpy kernels (``reset_envs``, ``step_envs``, ``observe``: each a
pass over the whole batch) or as per-env kernels (``reset_env``, ``step_env``,
``observe_env``: one env, compiled into one loop over the batch), or, as the worked example
of the two (BatchPong), both. ``kernels=`` means, in every env:

============== ====================== ======================================= ==============
``kernels=``   numpy kernels only     per-env kernels only                    both
============== ====================== ======================================= ==============
``"auto"``     numpy                  numba if installed, else python (warns) the class's
                                                                              ``default_kernels``
``"numpy"``    numpy                  ValueError                              numpy
``"numba"``    ValueError             numba (ImportError without numba)       numba
``"python"``   ValueError             python                                  python
============== ====================== ======================================= ==============

``num_threads`` above 1 needs ``"numba"``. Debug mode (``debug=True``) keeps the choice and
runs it checked: per-env kernels compiled with bounds checks, each env in a batch of its own
(:mod:`batchenv.debug`).
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import numpy as np

__all__ = ["KernelForm", "NumpyForm", "Choice", "choose", "KERNEL_CHOICES", "PER_ENV_KERNELS",
           "NUMPY_KERNELS", "has_per_env_kernels", "has_numpy_kernels", "numba_available",
           "default_kernel", "KernelError"]

#: ``kernels=`` values.
KERNEL_CHOICES = ("auto", "numpy", "numba", "python")
#: The three static functions that make a class a per-env env.
PER_ENV_KERNELS = ("reset_env", "step_env", "observe_env")
#: The three methods that make a class a numpy-kernel env.
NUMPY_KERNELS = ("reset_envs", "step_envs", "observe")

F = TypeVar("F", bound=Callable[..., Any])


class KernelError(AssertionError):
    """A kernel broke the BatchEnv contract (debug mode and ``check_env`` raise it):
    ``method`` names the kernel (``"step_envs"``, ``"step_env"``, ...); for a per-env
    kernel, ``env_index`` is the env whose pass failed and ``location`` the author's
    ``file:line`` (None when unknown); ``batch_restored`` says the batch was put back as it
    was before the call."""

    def __init__(self, env: Any, method: str, message: str, *, env_index: int | None = None,
                 location: str | None = None, batch_restored: bool = False) -> None:
        super().__init__(f"{type(env).__name__}.{method}: {message}")
        self.method = method
        self.env_index = env_index
        self.location = location
        self.batch_restored = batch_restored


def default_kernel(f: F) -> F:
    """Marks the base class's kernel methods (which raise NotImplementedError): a class
    whose methods are these has no numpy kernels of its own."""
    f._batchenv_default_kernel = True  # type: ignore[attr-defined]
    return f


def resets_a_copy(f: F) -> F:
    """Marks the base class's ``reset_rows``, which resets a copy of the rows with
    ``reset_envs``: debug mode then checks that ``reset_envs`` call as such."""
    f._batchenv_resets_a_copy = True  # type: ignore[attr-defined]
    return f


def numba_available() -> bool:
    """Whether numba can be imported (``pip install "batchenv[fast]"``)."""
    return importlib.util.find_spec("numba") is not None


def has_per_env_kernels(cls: type) -> bool:
    """Whether ``cls`` defines the per-env kernels (all three; some but not all of them,
    with no numpy kernels, is a TypeError)."""
    present = [callable(getattr(cls, name, None)) for name in PER_ENV_KERNELS]
    if any(present) and not all(present) and not has_numpy_kernels(cls):
        missing = [n for n, ok in zip(PER_ENV_KERNELS, present) if not ok]
        raise TypeError(f"{cls.__name__} defines some per-env kernels but not {missing}: a "
                        f"per-env env defines all of {list(PER_ENV_KERNELS)}")
    return all(present)


def has_numpy_kernels(cls: type) -> bool:
    """Whether ``cls`` defines its own numpy kernels (all three)."""
    return all(not getattr(getattr(cls, name, None), "_batchenv_default_kernel", False)
               for name in NUMPY_KERNELS)


class Choice(NamedTuple):
    """What :func:`choose` decided: the form, its threads, and why."""

    kind: str
    num_threads: int
    why: str


_warned_no_numba: set[type] = set()


def choose(cls: type, kernels: str, num_threads: int | None) -> Choice:
    """The form that steps ``cls`` for ``kernels=`` and ``num_threads=`` (the table in
    this module's docstring); ValueError/ImportError for a choice the class or the machine
    cannot run."""
    if kernels not in KERNEL_CHOICES:
        raise ValueError(f"kernels must be one of {list(KERNEL_CHOICES)}, got {kernels!r}")
    if num_threads is not None and (not isinstance(num_threads, (int, np.integer))
                                    or isinstance(num_threads, bool) or num_threads < 1):
        raise ValueError(f"num_threads must be a positive int or None, got {num_threads!r}")
    per_env, numpy = has_per_env_kernels(cls), has_numpy_kernels(cls)
    name = cls.__name__
    if kernels == "auto":
        kind, why = _auto(cls, per_env, numpy)
    else:
        kind, why = kernels, f"kernels={kernels!r} was asked for"
        _check_available(name, kind, per_env, numpy)
    threads = 1 if num_threads is None else int(num_threads)
    if threads != 1 and kind != "numba":
        raise ValueError(f"num_threads={threads} needs kernels='numba' ({name} runs "
                         f"{kind!r}: {why})")
    return Choice(kind, threads, why)


def _auto(cls: type, per_env: bool, numpy: bool) -> tuple[str, str]:
    name = cls.__name__
    if not per_env:  # (a class with no kernels at all fails at its first reset, saying so)
        return "numpy", f"{name} has numpy kernels only"
    if numpy:
        kind = getattr(cls, "default_kernels", "numba")
        if kind not in ("numpy", "numba", "python"):
            raise TypeError(f"{name}.default_kernels must be 'numpy', 'numba' or 'python', "
                            f"got {kind!r}")
        if kind == "numba" and not numba_available():
            return "numpy", f"{name} has both forms and numba is not installed"
        return kind, f"{name} has both forms; its default_kernels is {kind!r}"
    if numba_available():
        return "numba", f"{name} has per-env kernels and numba is installed"
    if cls not in _warned_no_numba:
        _warned_no_numba.add(cls)
        warnings.warn(f"{name}: numba is not installed, so its per-env kernels run as a "
                      f"Python loop (correct, slow); pip install 'batchenv[fast]' compiles "
                      f"them", stacklevel=5)
    return "python", f"{name} has per-env kernels and numba is not installed"


def _check_available(name: str, kind: str, per_env: bool, numpy: bool) -> None:
    if kind == "numpy" and not numpy:
        raise ValueError(f"kernels='numpy': {name} has only per-env kernels "
                         f"({', '.join(PER_ENV_KERNELS)}); use 'auto', 'numba' or 'python'")
    if kind in ("numba", "python") and not per_env:
        raise ValueError(f"kernels={kind!r}: {name} has no per-env kernels "
                         f"({', '.join(PER_ENV_KERNELS)}); use kernels='numpy' or 'auto'")
    if kind == "numba" and not numba_available():
        raise ImportError("kernels='numba' needs numba: pip install 'batchenv[fast]' (or use "
                          "kernels='python')")


class KernelForm:
    """The form that steps an env: its numpy-form kernel methods (each a pass over the rows
    of a state; the base class's resets, observations and its own step call them) and,
    for a form that does the whole step in one pass (:attr:`fused`), :meth:`step`.

    Attributes: :attr:`kind` (``"numpy"``, ``"numba"`` or ``"python"``),
    :attr:`num_threads`, :attr:`checked` (debug mode's checked form) and :attr:`why`."""

    #: :meth:`step` does the whole step (the base class's part included) in one pass.
    fused = False

    def __init__(self, kind: str, num_threads: int, why: str, checked: bool = False) -> None:
        self.kind, self.num_threads, self.why, self.checked = kind, num_threads, why, checked

    def reset_envs(self, env: Any, s: Any, rng: Any) -> None:
        raise NotImplementedError

    def reset_rows(self, env: Any, s: Any, rows: np.ndarray, rng: Any) -> None:
        raise NotImplementedError

    def step_envs(self, env: Any, s: Any, action: np.ndarray, rng: Any) -> Any:
        raise NotImplementedError

    def observe(self, env: Any, s: Any, out: np.ndarray) -> None:
        raise NotImplementedError

    def step(self, env: Any, actions: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no fused step")

    def reset_observe(self, env: Any, s: Any, out: np.ndarray) -> None:
        """A fused form's full reset: every row of ``s`` given a start state (its step
        count and ``awaiting_reset`` cleared, as ``BatchEnv._reset_rows``) and observed
        into ``out``, in one pass."""
        raise NotImplementedError(f"{type(self).__name__} has no fused step")

    def step_one(self, env: Any, action: Any) -> Any:
        """A fused form's step of a batch of one in ``DISABLED`` mode with one valid
        action (``BatchEnv._step_one``): ``(observation row, reward, terminated,
        truncated, info)``, the scalars as Python's."""
        raise NotImplementedError(f"{type(self).__name__} has no fused step")

    def params_changed(self) -> None:
        """One of the class's ``kernel_params`` was set: read them again before the next
        kernel runs."""

    def __repr__(self) -> str:
        threads = f", num_threads={self.num_threads}" if self.num_threads != 1 else ""
        checked = ", checked" if self.checked else ""
        return f"<{type(self).__name__} {self.kind!r}{threads}{checked}: {self.why}>"


class NumpyForm(KernelForm):
    """The class's numpy kernels, as written."""

    def __init__(self, why: str) -> None:
        super().__init__("numpy", 1, why)

    def reset_envs(self, env: Any, s: Any, rng: Any) -> None:
        env.reset_envs(s, rng)

    def reset_rows(self, env: Any, s: Any, rows: np.ndarray, rng: Any) -> None:
        env.reset_rows(s, rows, rng)

    def step_envs(self, env: Any, s: Any, action: np.ndarray, rng: Any) -> Any:
        return env.step_envs(s, action, rng)

    def observe(self, env: Any, s: Any, out: np.ndarray) -> Any:
        return env.observe(s, out)  # (what it returns: debug mode's check wants to see it)
