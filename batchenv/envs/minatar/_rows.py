"""Boards kept as row masks: a 10 x 10 board of booleans as ten 10-bit integers per env (bit
x of row y is cell (y, x)), as BatchSpaceInvaders and BatchSeaquest keep theirs. Marching
and bullets are then shifts, hits ANDs, counts a popcount table; :class:`RowCells` turns
the masks back into cells for an observation.

Why the scratch buffers: at 4096 envs a plane of cells is 400 KB, and a fresh numpy array
of that size is fresh memory from the C allocator here, paid again in page faults at every
step; the buffers are allocated once per batch size.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ROW_BITS", "BIT", "POPCOUNT", "RowCells", "set_bits"]

ROW_BITS = 10  # cells in a row
BIT = (1 << np.arange(ROW_BITS)).astype(np.uint16)  # the mask of column x
#: Bits set in each 10-bit mask (np.bitwise_count needs numpy >= 2).
POPCOUNT = np.array([bin(m).count("1") for m in range(1 << ROW_BITS)], dtype=np.int16)
_CELLS = ((np.arange(1 << ROW_BITS)[:, None] >> np.arange(ROW_BITS)) & 1).astype(np.uint8)
_IS_SET = _CELLS.astype(bool)
# a row's 10 cell bytes as one uint64 (cells 0-7) and one uint16 (cells 8-9)
_LOW = np.ascontiguousarray(_CELLS[:, :8]).view(np.uint64).ravel()
_HIGH = np.ascontiguousarray(_CELLS[:, 8:]).view(np.uint16).ravel()
_ROW = np.dtype([("low", np.uint64), ("high", np.uint16)])  # packed: 10 bytes, one row


class RowCells:
    """Row masks of shape ``shape`` (``(n, 10)``) to 0/1 cells ``(*shape, 10)`` uint8, by
    two table look-ups per row written into a buffer of packed 10-byte rows (so the cells
    come out contiguous). The result is the buffer: valid until the next call."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self._index = np.empty(shape, dtype=np.intp)
        self._low = np.empty(shape, dtype=np.uint64)
        self._high = np.empty(shape, dtype=np.uint16)
        self._rows = np.empty(shape, dtype=_ROW)

    def __call__(self, masks: np.ndarray) -> np.ndarray:
        np.copyto(self._index, masks, casting="unsafe")
        _LOW.take(self._index, out=self._low, mode="clip")
        _HIGH.take(self._index, out=self._high, mode="clip")
        self._rows["low"] = self._low
        self._rows["high"] = self._high
        # a view made here, not kept: a copied or unpickled RowCells has no shared views
        return self._rows.view(np.uint8).reshape(*self.shape, ROW_BITS)


def set_bits(masks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The set cells of row masks ``(n, rows)``, as ``(env, row, column)`` index arrays: for
    sparse boards (bullets), where painting a few cells beats unpacking every row."""
    flat = masks.reshape(-1)
    pairs = np.not_equal(flat, 0).nonzero()[0]  # (bool arrays have numpy's fast nonzero)
    bits = _IS_SET.take(flat[pairs].astype(np.intp), axis=0).reshape(-1).nonzero()[0]
    which, column = np.divmod(bits, ROW_BITS)
    env, row = np.divmod(pairs[which], masks.shape[1])
    return env, row, column
