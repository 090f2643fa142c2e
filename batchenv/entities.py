"""Entities in a batch: fixed-capacity slot arrays with an alive mask, and grid rasterizing.

Games full of entities (bricks, bullets, enemies, cars) keep, for each kind, ``k`` slots per
env: state fields of shape ``(k,)`` per row (so ``(n, k)`` arrays in a kernel) and a bool
``alive`` field of the same shape. Rules run dense over all slots (a dead slot's fields are
ignored by masking) and write back sparse. This module has the pieces every such game
needs, written once (docs/minatar.md shows them at work):

* :func:`first_free` — the first free slot of each env (``argmin`` over the alive mask), and
  :func:`nth_free` — the ``j``-th free slot of each env (a random free slot: ``j`` drawn
  uniform in ``[0, free_count)``);
* :func:`spawn` — write new entities into chosen slots of chosen envs and mark them alive;
* :class:`Grid` — paint entity positions into ``(n, H, W, C)`` observation planes with one
  scatter per call (flat cell indices, no Python loop over envs or slots);
* :func:`slot_columns` and :func:`slot_view` — slots stored *slot-major*: a field of ``k``
  slots declared as ``k`` scalar state columns, read back as one ``(k, n)`` array.

Why slot-major: a field declared with shape ``(k,)`` is stored ``(n, k)``, and numpy walks
an ``(n, k)`` array (or the ``[:, :w]`` slots in use) row by row, ``k`` elements at a time,
an inner loop per env, where ``(k, n)`` is ``k`` long contiguous loops (the figures:
``docs/performance.md``, "Layouts and checks").
:class:`~batchenv.state.State` keeps consecutive scalar columns of one dtype as consecutive
rows of one block, so ``k`` columns ``x_0 .. x_{k-1}`` *are* a contiguous ``(k, n)`` array
(and several such fields in a row, one ``(fields, k, n)`` array). The records of
``get_state()`` then show slot ``j`` of ``x`` as the column ``x_j``.

Per-env timers are plain integer state fields; their rules differ game by game (reload when
zero, count down to zero, ...), so they are written in each game with one ufunc each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from batchenv.state import State, fields_view

__all__ = ["first_free", "nth_free", "free_count", "spawn", "Grid", "slot_columns",
           "slot_names", "slot_view"]


def first_free(alive: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first free (not alive) slot of each row of ``alive`` ``(n, k)``, and whether the
    row has one: ``(slot, has_free)``, both ``(n,)``. A full row's ``slot`` is 0."""
    slot = alive.argmin(axis=1)  # the first False; 0 when the row is all True
    has_free = ~alive[np.arange(len(alive)), slot]
    return slot, has_free


# Eight slots per row (as MinAtar's lanes) are common and cheap to count: the row's 8 bools
# as one uint64, times this constant, has bit i of its top byte = slot i (each byte is 0 or
# 1, so the partial products never carry into each other). numpy's reductions along a short
# last axis (count_nonzero, cumsum over 8 slots) cost per row; two table look-ups do not.
_GATHER_BITS = np.array(0x0102040810204080, dtype=np.uint64)
_S56 = np.array(56, dtype=np.uint64)
_ZEROS = np.array([8 - bin(b).count("1") for b in range(256)], dtype=np.int64)
#: [bits, j]: the j-th zero bit of ``bits`` (the j-th free slot), 8 if there is none
_NTH_ZERO = np.full((256, 9), 8, dtype=np.int64)
for _bits in range(256):
    for _j, _slot in enumerate(s for s in range(8) if not _bits >> s & 1):
        _NTH_ZERO[_bits, _j] = _slot


def _slot_bits(alive: np.ndarray) -> np.ndarray:
    """An ``(n, 8)`` bool array as ``(n,)`` 8-bit masks (bit i: slot i), as intp."""
    words = np.ascontiguousarray(alive).view(np.uint64).reshape(len(alive))
    bits = words * _GATHER_BITS
    bits >>= _S56
    return bits.astype(np.intp)


def free_count(alive: np.ndarray) -> np.ndarray:
    """Free slots per row of ``alive`` ``(n, k)`` (int64, ``(n,)``)."""
    if alive.shape[1] == 8:
        return _ZEROS.take(_slot_bits(alive))
    return alive.shape[1] - np.count_nonzero(alive, axis=1)


def nth_free(alive: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The ``j[i]``-th free slot (0-based, in slot order) of each row ``i`` of ``alive``
    ``(n, k)``: the slot ``slot_options[j]`` of ``slot_options = [s for s in range(k) if
    not alive[i, s]]``. ``j[i]`` must be below the row's free count (else the result is
    ``k``)."""
    if alive.shape[1] == 8:
        return _NTH_ZERO[_slot_bits(alive), np.minimum(j, 8)]
    free_before = np.cumsum(~alive, axis=1)  # free slots up to and including each slot
    return np.count_nonzero(free_before <= np.asarray(j)[:, None], axis=1)


def spawn(alive: np.ndarray, rows: np.ndarray, slots: np.ndarray,
          fields: Mapping[str, tuple[np.ndarray, np.ndarray | int]]) -> None:
    """Bring entities to life: for each ``t``, slot ``slots[t]`` of env ``rows[t]``.

    ``fields`` maps a name (for error messages only) to ``(array, values)``: ``array`` the
    ``(n, k)`` field to write, ``values`` one value per spawned entity (or one for all)."""
    for name, (array, values) in fields.items():
        if array.shape[:2] != alive.shape:
            raise ValueError(f"spawn: field {name!r} has shape {array.shape}, expected "
                             f"{alive.shape} (envs, slots) like the alive mask")
        array[rows, slots] = values
    alive[rows, slots] = True


class Grid:
    """Observation planes ``(n, height, width, channels)`` (C order) and how to paint them.

    ``paint(out, y, x, channel, where)`` sets ``out[i, y[i, ...], x[i, ...], channel] =
    True`` for every row ``i`` (and every trailing entry, e.g. each slot) where ``where``
    holds, in one flat scatter. ``y`` and ``x`` are ``(n,)`` or ``(n, k)`` integer arrays
    inside the grid (the caller's rules keep them there)."""

    def __init__(self, num_rows: int, height: int, width: int, channels: int) -> None:
        self.shape = (num_rows, height, width, channels)
        self.row_stride = height * width * channels
        self.y_stride = width * channels
        self.x_stride = channels
        self.row_base = np.arange(num_rows, dtype=np.intp) * self.row_stride  # (n,)
        self._row_base_col = self.row_base[:, None]
        self._lanes: dict[tuple[int, ...], np.ndarray] = {}
        self._small = np.int16 if self.row_stride < 2**15 else np.intp

    def cells(self, y: np.ndarray, x: np.ndarray, channel: int, slot_major: bool = False
              ) -> np.ndarray:
        """Flat indices into ``out.reshape(-1)`` of cells ``(row, y, x, channel)``; ``y`` and
        ``x`` are ``(n,)``, ``(n, k)``, or with ``slot_major`` ``(k, n)``."""
        base = self.row_base if y.ndim == 1 or slot_major else self._row_base_col
        # the offset within a row in a small int type (fewer bytes to move), then the row
        within = np.add(np.multiply(y, self.y_stride, dtype=self._small),
                        np.multiply(x, self.x_stride, dtype=self._small))  # y may be (1, k)
        if channel:
            within += self._small(channel)
        return np.add(base, within)

    def lane_base(self, ys: tuple[int, ...]) -> np.ndarray:
        """``(num_rows, len(ys))`` flat indices of the cells ``(i, ys[j], 0, 0)``: made once
        per ``ys`` (entities that keep to fixed rows, one slot per row, as MinAtar's cars and
        lanes), so that a cell is ``lane_base + x * channels + channel`` (small ints)."""
        key = tuple(int(y) for y in ys)
        base = self._lanes.get(key)
        if base is None:
            base = self._lanes[key] = (self._row_base_col
                                       + np.array(key, dtype=np.intp) * self.y_stride)
        return base

    def paint(self, out: np.ndarray, y: np.ndarray, x: np.ndarray, channel: int,
              where: np.ndarray | None = None) -> None:
        """Set the cells ``(i, y, x, channel)`` of ``out`` to True (where ``where``)."""
        if out.shape != self.shape:
            raise ValueError(f"Grid.paint: out has shape {out.shape}, expected {self.shape}")
        flat = self.cells(y, x, channel)
        if where is not None:
            flat = flat[where]
        out.reshape(-1)[flat] = True


def slot_names(fields: Sequence[str], slots: int) -> tuple[str, ...]:
    """The state columns of ``fields`` with ``slots`` slots each, field by field:
    ``("x_0", .., "x_{slots-1}", "y_0", ..)``."""
    return tuple(f"{name}_{j}" for name in fields for j in range(slots))


def slot_columns(fields: Sequence[tuple[str, Any]], slots: int) -> list[tuple[str, Any]]:
    """dtype entries declaring each ``(name, scalar type)`` of ``fields`` as ``slots``
    scalar columns ``name_0 .. name_{slots-1}``, to put in a state dtype. Give fields of
    one dtype together, and no other column of that dtype among them, so that
    :func:`slot_view` can read them as one array."""
    return [(column, dtype) for name, dtype in fields
            for column in slot_names([name], slots)]


def slot_view(s: State, fields: Sequence[str], slots: int) -> np.ndarray:
    """The slot columns of ``fields`` (declared by :func:`slot_columns`, one dtype) as one
    ``(len(fields), slots, len(s))`` view of ``s``'s storage: writes go to the state."""
    block = fields_view(s, slot_names(fields, slots))
    return block.reshape(len(fields), slots, len(s))
