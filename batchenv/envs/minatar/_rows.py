"""Boards kept as row masks: a 10 x 10 board of booleans as ten 10-bit integers per env (bit
x of row y is cell (y, x)), as BatchSpaceInvaders and BatchSeaquest keep theirs (and
BatchBreakout its three rows of bricks). Marching
and bullets are then shifts, hits ANDs, counts a popcount table; :class:`RowCells` turns
the masks back into cells for an observation.

Observation rows that change rarely (bricks, the lanes of entities that move every few
steps) are kept drawn between steps by a :class:`RowCanvas`: each such row has a small code
(its brick mask, its entity), the canvas redraws only the rows whose code changed, and an
observation is a copy of the canvas with the pieces that move every step painted on.
:func:`slot_word` reads the 8 slot booleans of an env (one per lane) as one integer, and
:func:`per_slot` repeats a per-env value over 8 slots.

Why the scratch buffers: at 4096 envs a plane of cells is 400 KB, and a fresh numpy array
of that size is fresh memory from the C allocator here, paid again in page faults at every
step; the buffers are allocated once per batch size.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ROW_BITS", "BIT", "POPCOUNT", "RowCells", "RowCanvas", "per_slot", "set_bits",
           "set_cells", "slot_word"]

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
#: The column of the lowest set bit of each nonzero 10-bit mask (0 for 0).
_LOWEST_BIT = np.array([(m & -m).bit_length() - 1 if m else 0 for m in range(1 << ROW_BITS)],
                       dtype=np.intp)


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
    """The set cells of row masks ``(n, rows)``, as ``(env, row, column)`` index arrays (in
    no particular order): for sparse boards (bullets), where painting a few cells beats
    unpacking every row."""
    pair, column = set_cells(masks)
    env, row = np.divmod(pair, masks.shape[1])
    return env, row, column


def set_cells(masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The set cells of row masks ``(n, rows)`` as ``(pair, column)``: ``pair`` the flat
    index of the row in ``masks.reshape(-1)`` (``env * rows + row``), in no particular
    order. A row gives its lowest set bit per round (a table look-up), then drops it: as
    many rounds as the fullest row has bits, each on the rows still holding some."""
    flat = masks.reshape(-1)
    pair = np.not_equal(flat, 0).nonzero()[0]  # (bool arrays have numpy's fast nonzero)
    bits = flat[pair].astype(np.intp)
    pairs, columns = [], []
    while len(pair):
        pairs.append(pair)
        columns.append(_LOWEST_BIT.take(bits))
        bits &= bits - 1  # drop the lowest set bit
        more = bits != 0
        pair, bits = pair[more], bits[more]
    if len(pairs) == 1:
        return pairs[0], columns[0]
    if not pairs:
        return pair, pair.copy()
    return np.concatenate(pairs), np.concatenate(columns)


_SPLAT = np.array(0x0101010101010101, dtype=np.uint64)


def per_slot(values: np.ndarray) -> np.ndarray:
    """``(n,)`` one-byte values (int8, uint8, bool) repeated over 8 slots: ``(n, 8)`` of
    the same dtype, as ``values[:, None]`` broadcast would give, but as a real array.
    (numpy runs an ``(n, 8)`` op against an ``(n, 1)`` operand as n inner loops of 8, much
    slower than two same-shape arrays; one multiply makes the copy. The figures:
    ``docs/performance.md``, "Why the kernels are written as they are".)"""
    words = values.view(np.uint8).astype(np.uint64)
    words *= _SPLAT  # the byte in all 8 bytes of the word
    return words.view(values.dtype).reshape(len(values), 8)


def slot_word(mask: np.ndarray) -> np.ndarray:
    """An ``(n, 8)`` bool array (8 slots per env, e.g. one per lane) as ``(n,)`` uint64
    words, slot ``i`` in byte ``i`` (a view): a test of the slot of each env's lane is
    then one AND with that lane's byte mask."""
    return mask.view(np.uint64).reshape(len(mask))


class RowCanvas:
    """Board rows kept drawn between steps: an observation background of ``num_envs``
    boards in which the board rows ``rows`` show ``images[code]`` (an image is one board
    row: ``(width, channels)`` bools) and every other row is empty.

    :meth:`draw` takes this step's codes ``(num_envs, len(rows))``, redraws the rows whose
    code changed since the last call and copies the canvas into ``out``; the caller then
    paints the pieces that move every step. Since the canvas remembers the code of every
    row it drew, it is right for any state it is given, however that state was reached
    (steps, resets, ``set_state``). A batch of another size (the final observations of a
    SAME_STEP reset, rendering) is drawn afresh, without a canvas.
    """

    def __init__(self, num_envs: int, rows: tuple[int, ...], images: np.ndarray,
                 board: tuple[int, int, int], code_dtype: type = np.int8) -> None:
        height, width, channels = board
        if images.shape[1:] != (width, channels):
            raise ValueError(f"RowCanvas: images of shape {images.shape[1:]}, expected "
                             f"{(width, channels)} (one board row)")
        self.num_envs, self.rows, self.board = num_envs, tuple(rows), board
        self._row_index = np.array(rows, dtype=np.intp)
        row_bytes = width * channels
        flat_images = np.ascontiguousarray(images, dtype=bool).reshape(len(images), row_bytes)
        # a row as one raw element (numpy copies those fastest in fancy indexing)
        self._row_dtype = np.dtype((np.void, row_bytes))
        self._images = flat_images.view(self._row_dtype).reshape(len(images))
        self._canvas = np.zeros((num_envs, height, width, channels), dtype=bool)
        self.__setstate__({})  # _canvas_rows: the canvas, one element per row
        # the canvas row (flat) of each (env, row) pair, flat
        self._row_of = (np.arange(num_envs, dtype=np.intp)[:, None] * height
                        + self._row_index).reshape(-1)
        # every row starts drawn with code 0
        self._drawn: np.ndarray = np.zeros((num_envs, len(rows)), dtype=code_dtype)
        self._canvas_rows.reshape(-1)[self._row_of] = self._images[0]

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        del state["_canvas_rows"]  # a view of _canvas: made again on unpickling
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._canvas_rows = self._canvas.reshape(self.num_envs, self.board[0], -1).view(
            self._row_dtype).reshape(self.num_envs, self.board[0])

    def draw(self, out: np.ndarray, codes: np.ndarray) -> None:
        """``out`` (``(n, height, width, channels)`` bool) := the background for ``codes``
        (``(n, len(rows))``, indices into ``images``)."""
        if len(codes) != self.num_envs:
            out.fill(False)
            out_rows = out.reshape(len(out), self.board[0], -1).view(self._row_dtype)
            out_rows[:, self._row_index, 0] = self._images.take(codes)
            return
        changed = (codes != self._drawn).reshape(-1)
        if changed.any():
            which = changed.nonzero()[0]  # (env, row) pairs, flat
            code = codes.reshape(-1)[which]
            self._canvas_rows.reshape(-1)[self._row_of[which]] = self._images.take(code)
            self._drawn.reshape(-1)[which] = code
        np.copyto(out, self._canvas)
