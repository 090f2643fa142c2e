"""What the classic-control envs share: parameters given as keywords, start states written
row by row, and fast observation writes.

A classic-control start state is a few uniform draws; writing them straight into the rows
being reset (``BatchEnv.reset_rows``) avoids copying every field of those rows out and back;
the auto-reset path runs on most steps (a random CartPole episode lasts ~22 steps, so ~5% of
the envs reset on every step). What it saves: ``docs/performance.md``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from batchenv.core import BatchEnv, field_outside
from batchenv.random import BatchRandom
from batchenv.state import State

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

P = TypeVar("P", bound="DataclassInstance")
S = TypeVar("S", bound=State)

#: Below this many envs one transposed copy writes an (n, k) observation fastest; above it
#: k column copies do (docs/performance.md, "Why the kernels are written as they are").
SMALL_BATCH = 1024


def params_from(cls: type[P], params: P | None, kwargs: dict[str, Any]) -> P:
    """``params`` (or the defaults) with the fields named in ``kwargs`` replaced; those
    keywords are removed from ``kwargs`` (the rest go to :class:`~batchenv.BatchEnv`)."""
    names = {f.name for f in dataclasses.fields(cls)}
    overrides = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
    if params is not None and not isinstance(params, cls):
        raise TypeError(f"params must be a {cls.__name__}, got {type(params).__name__}")
    return dataclasses.replace(params if params is not None else cls(), **overrides)


def write_columns(out: np.ndarray, rows: np.ndarray | list[np.ndarray]) -> None:
    """``out[:, j] = rows[j]`` for every j (casting), the fastest way for ``len(out)``."""
    if len(out) <= SMALL_BATCH and isinstance(rows, np.ndarray):
        np.copyto(out, rows.T, casting="same_kind")
    else:
        for j, row in enumerate(rows):
            out[:, j] = row


class ClassicControlEnv(BatchEnv[S], Generic[S]):
    """A :class:`~batchenv.BatchEnv` whose start states are written row by row.

    Subclasses implement :meth:`reset_rows` (drawing from its ``rng``, which covers just
    those rows); ``reset_envs`` is the same rule applied to every row of a state.
    """

    def __init__(self, num_envs: int | None = None, **kwargs: Any) -> None:
        super().__init__(num_envs, **kwargs)
        self.observe_fills_out = True  # every env's observe writes all its columns

    def state_bounds(self) -> dict[str, tuple[float, float]]:
        """``{field: (low, high)}``: Gymnasium's bounds on state fields (where the env clips
        or wraps to them); :meth:`set_state` rejects records outside them."""
        return {}

    def check_state(self, states: np.ndarray) -> dict[str, np.ndarray]:
        return dict(field_outside(states, name, low, high)
                    for name, (low, high) in self.state_bounds().items())

    def reset_rows(self, s: S, rows: np.ndarray | slice, rng: BatchRandom) -> None:
        raise NotImplementedError

    def reset_envs(self, s: S, rng: BatchRandom) -> None:
        self.reset_rows(s, slice(None), rng)
