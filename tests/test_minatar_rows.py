"""The MinAtar games' shared helpers against plain-Python oracles: the canvas of rows kept
drawn between steps (``_rows.RowCanvas``), the slot helpers, the exact ``rand() < p``
test on random words (``_base.rand_below``) and the per-env kernels' board helpers
(``_base.clear_board``, ``paint_row``, ``paint_table_row``), compiled and as plain
Python."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from batchenv.envs.minatar._base import (
    clear_board,
    paint_row,
    paint_table_row,
    rand_below,
    word_threshold,
)
from batchenv.envs.minatar._rows import RowCanvas, per_slot, slot_word

BOARD = (10, 10, 4)
ROWS = (1, 2, 3, 7)


def images(count: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((count, 10, 4)) < 0.3


def oracle(codes: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Boards with row ROWS[j] of env i showing table[codes[i, j]], the rest empty."""
    out = np.zeros((len(codes), *BOARD), dtype=bool)
    for i, row_codes in enumerate(codes):
        for j, code in enumerate(row_codes):
            out[i, ROWS[j]] = table[code]
    return out


def test_canvas_draws_the_codes_it_is_given_step_after_step():
    rng = np.random.default_rng(1)
    table = images(50)
    n = 64
    canvas = RowCanvas(n, ROWS, table, BOARD)
    codes = rng.integers(0, 50, (n, len(ROWS))).astype(np.int8)
    out = np.empty((n, *BOARD), dtype=bool)
    for step in range(30):
        change = rng.random(codes.shape) < [0.0, 0.05, 0.5, 1.0][step % 4]
        codes[change] = rng.integers(0, 50, np.count_nonzero(change))
        out.fill(True)  # draw must overwrite every cell
        canvas.draw(out, codes)
        np.testing.assert_array_equal(out, oracle(codes, table), err_msg=f"step {step}")


def test_canvas_draws_other_batch_sizes_afresh_and_survives_pickling():
    rng = np.random.default_rng(2)
    table = images(20, seed=3)
    canvas = RowCanvas(16, ROWS, table, BOARD)
    codes = rng.integers(0, 20, (16, len(ROWS))).astype(np.int8)
    canvas.draw(np.empty((16, *BOARD), dtype=bool), codes)
    few = codes[[3, 5, 11]]
    out = np.ones((3, *BOARD), dtype=bool)
    canvas.draw(out, few)  # (e.g. the final observations of a SAME_STEP reset)
    np.testing.assert_array_equal(out, oracle(few, table))
    copy = pickle.loads(pickle.dumps(canvas))
    codes[::2] = (codes[::2] + 1) % 20  # rows the copy must redraw in its own canvas
    for c in (copy, canvas):
        out = np.empty((16, *BOARD), dtype=bool)
        c.draw(out, codes)
        np.testing.assert_array_equal(out, oracle(codes, table))


def test_canvas_rejects_images_of_another_row_shape():
    with pytest.raises(ValueError, match="one board row"):
        RowCanvas(4, ROWS, np.zeros((5, 10, 3), dtype=bool), BOARD)


@pytest.mark.parametrize("values", [np.arange(-128, 128, dtype=np.int8),
                                    np.arange(256, dtype=np.uint8),
                                    np.random.default_rng(4).random(300) < 0.5])
def test_per_slot_repeats_each_value_over_8_slots(values):
    np.testing.assert_array_equal(per_slot(values), np.repeat(values[:, None], 8, axis=1))
    assert per_slot(values).dtype == values.dtype


def test_slot_word_puts_slot_i_in_byte_i():
    mask = np.random.default_rng(5).random((200, 8)) < 0.5
    words = slot_word(mask)
    expected = [sum(int(b) << (8 * i) for i, b in enumerate(row)) for row in mask]
    assert words.tolist() == expected
    words[0] = 0  # a view: writing the word writes the slots
    assert not mask[0].any()


@pytest.mark.parametrize("p", [0.0, 0.1, 1 / 3, 0.5, 0.999, 1.0, 1.5])
def test_rand_below_is_exactly_rand_less_than_p(p):
    rng = np.random.default_rng(6)
    words = rng.integers(0, 2**64, 20000, dtype=np.uint64, endpoint=False)
    limit = word_threshold(p)
    if limit is not None:  # words at and around the threshold too
        edge = int(limit)
        words[:6] = [max(edge - 2049, 0), max(edge - 1, 0), edge, min(edge + 1, 2**64 - 1),
                     min(edge + 2048, 2**64 - 1), 0]
    expected = [(int(w) >> 11) * 2.0**-53 < p for w in words]
    assert rand_below(words, p).tolist() == expected


def test_states_the_canvases_cannot_draw_are_rejected():
    from batchenv.envs.minatar import BatchAsterix, BatchBreakout

    env = BatchBreakout(4)
    env.reset(seed=0)
    states = env.get_state()
    states["bricks"][2, 1] = 1 << 10
    with pytest.raises(ValueError, match=r"beyond column 9 at env indices \[2\]"):
        env.set_state(states)
    states = env.get_state()
    states["ball_dx"][3] = 0
    with pytest.raises(ValueError, match=r"not -1 or \+1 at env indices \[3\]"):
        env.set_state(states)
    env = BatchAsterix(4)
    env.reset(seed=0)
    states = env.get_state()
    states["alive"][1, 5], states["ent_x"][1, 5] = True, 10
    states["alive"][2, 0], states["ent_x"][2, 0] = False, 10  # a dead slot: ignored
    with pytest.raises(ValueError, match=r"outside columns 0-9 at env indices \[1\]"):
        env.set_state(states)


@pytest.mark.parametrize("density", [0.0, 0.02, 0.3, 1.0])
def test_set_bits_and_set_cells_list_every_set_cell_once(density):
    from batchenv.envs.minatar._rows import set_bits, set_cells

    cells = np.random.default_rng(7).random((300, 10, 10)) < density
    masks = (cells * (1 << np.arange(10))).sum(axis=2).astype(np.uint16)
    expected = sorted(zip(*(a.tolist() for a in cells.nonzero())))
    env, row, column = set_bits(masks)
    assert sorted(zip(env.tolist(), row.tolist(), column.tolist())) == expected
    pair, column = set_cells(masks)
    assert sorted(zip((pair // 10).tolist(), (pair % 10).tolist(), column.tolist())) \
        == expected


def _board_helpers(obs, table, codes, y):
    """Each helper in turn on one env's board ``obs``: a copy of ``obs`` after each."""
    seen = []
    for row in range(len(codes)):
        paint_table_row(obs, row, table, codes[row])
    seen.append(obs.copy())
    paint_row(obs, y, table[codes[0]])
    seen.append(obs.copy())
    clear_board(obs)
    seen.append(obs.copy())
    return seen


@pytest.mark.parametrize("channels", [4, 8])  # rows of whole words (Asterix: 4)
@pytest.mark.parametrize("compiled", [False, True])
def test_board_helpers_write_the_rows_they_name(channels, compiled):
    rng = np.random.default_rng(channels)
    width = 10 * channels // 8  # words per board row
    images = rng.random((7, 10, channels)) < 0.4
    table = np.ascontiguousarray(images.reshape(7, -1)).view(np.uint64)
    assert table.shape == (7, width)
    codes = rng.integers(0, 7, 10).astype(np.uint64)
    y = 5  # paint_row's row
    obs = rng.random((10, 10, channels)) < 0.5
    expected, board = [], obs.copy()
    board[:] = images[codes.astype(np.intp)]
    expected.append(board.copy())
    board[y] = images[codes[0]]
    expected.append(board.copy())
    expected.append(np.zeros_like(board))
    if compiled:
        numba = pytest.importorskip("numba")
        seen = numba.njit(_board_helpers)(obs, table, codes, y)
    else:
        seen = _board_helpers(obs, table, codes, y)
    for k, (got, want) in enumerate(zip(seen, expected)):
        np.testing.assert_array_equal(got, want, err_msg=f"helper {k}")
