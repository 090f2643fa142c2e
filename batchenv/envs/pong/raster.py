"""Vectorized rasterizer of BatchPong: tile maps, Atari-like pixel frames, rendered frames.

An image of the court is a background (court, walls) plus three moving boxes: the ball and
two paddles. :class:`Layout` says where they land in an image of a given size;
:class:`Raster` draws a batch of them.

* **Full draw** (:meth:`Raster.draw`): background, then boxes, for any rows into any buffer.
* **Incremental draw** (:meth:`Raster.update`): the env's own observation buffer keeps the
  previous frame; only the pixels of the previous boxes are erased and the new boxes drawn,
  with two flat scatters (the box pixel indices of the last frame are kept for erasing).
  At 84x84 a full redraw writes 7,056 bytes per env; an update writes about 120.

Box placement, one axis (``u`` a position in court cells, ``scale`` pixels per cell,
``origin`` the pixel where court cell 0 starts, ``size`` the box's size in pixels): the
box's first pixel is ``trunc(u * scale + (origin + scale / 2 - size / 2 + 1/2))`` in
float32 (``u * a + b``: round the box's continuous start to the nearest pixel), clipped so
the box stays inside the court. The scalar reference (:mod:`batchenv.reference.pong`) uses
the same two float32 operations, so both agree bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from batchenv.state import fields_view

if TYPE_CHECKING:
    from batchenv.envs.pong.rules import PongParams, PongState

__all__ = ["Layout", "Raster", "tile_layout", "pixel_layout", "render_layout", "PALETTE",
           "BACKGROUND", "WALL", "LEFT_PADDLE", "RIGHT_PADDLE", "BALL"]

#: Labels of :func:`render_layout` images, turned into colours by :data:`PALETTE`.
BACKGROUND, WALL, LEFT_PADDLE, RIGHT_PADDLE, BALL = range(5)
PALETTE = np.array([
    [20, 24, 36],  # background: dark blue-grey
    [200, 200, 200],  # walls: light grey
    [80, 200, 120],  # left paddle (the agent / player 0): green
    [230, 120, 60],  # right paddle (the CPU / player 1): orange
    [255, 255, 255],  # ball: white
], dtype=np.uint8)


@dataclass(frozen=True)
class Layout:
    """Where the court and its objects land in an image of ``height`` x ``width`` pixels.

    The court occupies pixel rows ``[court_top, court_top + court_rows)`` and every column;
    rows above and below are the walls. Values are the pixel values of each thing.
    """

    height: int  # image rows
    width: int  # image columns
    court_top: int  # first pixel row of the court (= wall thickness)
    court_rows: int  # pixel rows of the court
    scale_y: float  # pixels per court cell, vertically
    scale_x: float  # pixels per court cell, horizontally
    ball_size: tuple[int, int]  # (rows, cols) of the ball's box
    paddle_size: tuple[int, int]  # (rows, cols) of a paddle's box
    court_cells: tuple[int, int]  # (height, width) of the court in cells
    background: int = 0
    wall: int = 0
    left_paddle: int = 1
    right_paddle: int = 1
    ball: int = 2

    # --- placement constants (float32, as the kernels use them)
    def _start(self, scale: float, origin: int, size: int) -> np.float32:
        return np.float32(origin + scale / 2 - size / 2 + 0.5)

    @property
    def ball_y_coef(self) -> tuple[np.float32, np.float32]:
        """``(a, b)``: the ball's first pixel row is ``trunc(ball_y * a + b)`` (then clipped)."""
        return np.float32(self.scale_y), self._start(self.scale_y, self.court_top,
                                                     self.ball_size[0])

    @property
    def ball_x_coef(self) -> tuple[np.float32, np.float32]:
        return np.float32(self.scale_x), self._start(self.scale_x, 0, self.ball_size[1])

    @property
    def paddle_y_coef(self) -> tuple[np.float32, np.float32]:
        return np.float32(self.scale_y), self._start(self.scale_y, self.court_top,
                                                     self.paddle_size[0])

    @property
    def ball_rows(self) -> tuple[int, int]:
        """Bounds of the ball's first pixel row (inclusive)."""
        return self.court_top, self.court_top + self.court_rows - self.ball_size[0]

    @property
    def ball_cols(self) -> tuple[int, int]:
        return 0, self.width - self.ball_size[1]

    @property
    def paddle_rows(self) -> tuple[int, int]:
        return self.court_top, self.court_top + self.court_rows - self.paddle_size[0]

    @property
    def paddle_cols(self) -> tuple[int, int]:
        """First pixel column of the left and the right paddle (court columns 0, width-1)."""
        size = self.paddle_size[1]
        a, b = np.float32(self.scale_x), self._start(self.scale_x, 0, size)
        last = float(self.court_cells[1] - 1)
        cols = [int(np.float32(0.0) * a + b), int(np.float32(last) * a + b)]
        left, right = (min(max(c, 0), self.width - size) for c in cols)
        return left, right

    def background_image(self) -> np.ndarray:
        """The image without ball and paddles, ``(height, width)`` uint8."""
        img = np.full((self.height, self.width), self.background, dtype=np.uint8)
        img[:self.court_top] = self.wall
        img[self.court_top + self.court_rows:] = self.wall
        return img


def _box(scale: float, cells: float) -> int:
    return max(1, int(round(scale * cells)))


def tile_layout(height: int, width: int, paddle_height: int) -> Layout:
    """The seed's tile map: one cell per pixel, 0 empty, 1 paddle, 2 ball, no walls."""
    return Layout(height, width, 0, height, 1.0, 1.0, (1, 1), (paddle_height, 1),
                  (height, width))


def pixel_layout(court: tuple[int, int], paddle_height: int, shape: tuple[int, ...] = (84, 84),
                 values: tuple[int, int, int, int, int] = (87, 236, 147, 148, 236)) -> Layout:
    """An Atari-DQN-like grayscale frame: walls of ``max(1, rows // 42)`` pixels above and
    below the court; values (background, wall, left paddle, right paddle, ball) default to
    the gray levels of ALE's Pong frames."""
    rows, cols = shape
    wall = max(1, rows // 42)
    court_rows = rows - 2 * wall
    if court_rows < 2 or cols < 2:
        raise ValueError(f"pixel shape {shape} is too small for a court")
    sy, sx = court_rows / court[0], cols / court[1]
    bg, wall_v, left, right, ball = values
    return Layout(rows, cols, wall, court_rows, sy, sx, (_box(sy, 1), _box(sx, 1)),
                  (_box(sy, paddle_height), _box(sx, 1)), court, bg, wall_v, left, right,
                  ball)


def render_layout(court: tuple[int, int], paddle_height: int, scale: int) -> Layout:
    """Frames for people: ``scale`` pixels per cell, walls one cell thick; values are the
    labels indexing :data:`PALETTE`."""
    h, w = court
    return Layout((h + 2) * scale, w * scale, scale, h * scale, float(scale), float(scale),
                  (scale, scale), (paddle_height * scale, scale), court, BACKGROUND, WALL,
                  LEFT_PADDLE, RIGHT_PADDLE, BALL)


def _pattern(rows: int, cols: int, stride: int | np.ndarray) -> np.ndarray:
    return (np.arange(rows)[:, None] * stride + np.arange(cols)).ravel().astype(np.intp)


class Raster:
    """Draws the images of a :class:`Layout` for a batch of ``num_envs`` states.

    The state ``s`` needs the fields ``ball_x``, ``ball_y`` (consecutive float32) and
    ``left_y``, ``right_y`` (consecutive float32), as :class:`~batchenv.BatchPong`'s.
    """

    def __init__(self, layout: Layout, num_envs: int) -> None:
        lay = self.layout = layout
        self.num_envs = n = num_envs
        self.pixels = lay.height * lay.width
        w = lay.width
        (ay, by), (ax, bx), (py, pb) = lay.ball_y_coef, lay.ball_x_coef, lay.paddle_y_coef
        # ball: a (2, n) block [x; y] of the state
        self._ball_a = np.array([[ax], [ay]], dtype=np.float32)
        self._ball_b = np.array([[bx], [by]], dtype=np.float32)
        self._ball_lo = np.array([[lay.ball_cols[0]], [lay.ball_rows[0]]], dtype=np.intp)
        self._ball_hi = np.array([[lay.ball_cols[1]], [lay.ball_rows[1]]], dtype=np.intp)
        self._ball_pattern = _pattern(*lay.ball_size, w)
        # paddles: written in units of a whole paddle row (uint16 for a 2-pixel-wide paddle)
        # when the paddle columns allow, so a paddle is `rows` writes instead of rows * cols
        rows, cols = lay.paddle_size
        unit = cols if (cols in (1, 2, 4, 8) and w % cols == 0
                        and all(c % cols == 0 for c in lay.paddle_cols)) else 1
        self._unit = np.dtype(f"u{unit}")
        self._uw = np.array(w // unit, dtype=np.intp)  # canvas row length in units
        # constants as 0-d arrays: cheaper ufunc operands than numpy or Python scalars
        self._paddle_a, self._paddle_b = np.array(py), np.array(pb)
        self._paddle_lo, self._paddle_hi = (np.array(v, dtype=np.intp) for v in lay.paddle_rows)
        self._width = np.array(w, dtype=np.intp)
        self._paddle_cols = np.array([c // unit for c in lay.paddle_cols], dtype=np.intp)[:, None]
        self._paddle_pattern = _pattern(rows, cols // unit, self._uw)
        repeat = sum(256**i for i in range(unit))  # a byte value repeated in every byte
        self._paddle_values = [self._unit.type(lay.left_paddle * repeat),
                               self._unit.type(lay.right_paddle * repeat)]
        self._paddle_bg = self._unit.type(lay.background * repeat)
        self.background = lay.background_image()
        self._kb, self._kp = self._ball_pattern.size, self._paddle_pattern.size
        # incremental state: the indices drawn last (ball in pixels, then paddles in units),
        # two buffers used in turn
        self._bufs = [np.zeros(n * (self._kb + 2 * self._kp), dtype=np.intp) for _ in "ab"]
        self._drawn: np.ndarray | None = None  # None: the canvas holds no frame yet
        self._tmp = self._temporaries(n)
        self._env_offset = np.arange(n, dtype=np.intp) * self.pixels
        self._paddle_base = (self._env_offset // unit)[None, :] + self._paddle_cols  # (2, n)

    @staticmethod
    def _temporaries(n: int) -> tuple[np.ndarray, ...]:
        return (np.empty((2, n), np.float32), np.empty((2, n), np.intp), np.empty(n, np.intp),
                np.empty((2, n), np.float32), np.empty((2, n), np.intp))

    def _split(self, buf: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        cut = n * self._kb
        return buf[:cut].reshape(n, self._kb), buf[cut:].reshape(2, n, self._kp)

    def _indices(self, s: PongState, env_offset: np.ndarray, paddle_base: np.ndarray,
                 buf: np.ndarray, tmp: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Flat indices of every row's ball pixels and paddle units, into ``buf``."""
        n = len(env_offset)
        fb, ib, base, fp, ip = tmp
        ball_idx, paddle_idx = self._split(buf, n)
        # ball: first pixel (col, row) = clip(trunc([x; y] * a + b)), base = row * W + col
        np.multiply(fields_view(s, ["ball_x", "ball_y"]), self._ball_a, out=fb)
        fb += self._ball_b
        np.copyto(ib, fb, casting="unsafe")
        np.clip(ib, self._ball_lo, self._ball_hi, out=ib)
        np.multiply(ib[1], self._width, out=base)
        base += ib[0]
        base += env_offset
        np.add(base[:, None], self._ball_pattern, out=ball_idx)
        # paddles: first pixel row of each, fixed columns
        np.multiply(fields_view(s, ["left_y", "right_y"]), self._paddle_a, out=fp)
        fp += self._paddle_b
        np.copyto(ip, fp, casting="unsafe")
        np.clip(ip, self._paddle_lo, self._paddle_hi, out=ip)
        ip *= self._uw
        ip += paddle_base
        np.add(ip[:, :, None], self._paddle_pattern, out=paddle_idx)
        return ball_idx, paddle_idx

    def _paint(self, flat: np.ndarray, ball_idx: np.ndarray, paddle_idx: np.ndarray) -> None:
        flat[ball_idx] = self.layout.ball
        wide = flat.view(self._unit)  # paddles over the ball; a scalar value per call is
        wide[paddle_idx[0]] = self._paddle_values[0]  # cheaper than one broadcast call
        wide[paddle_idx[1]] = self._paddle_values[1]

    def draw(self, s: PongState, out: np.ndarray) -> None:
        """Full draw of every row of ``s`` into ``out`` (``(len(s), height, width)``,
        C-contiguous uint8)."""
        n = len(s)
        out[...] = self.background
        env_offset = np.arange(n, dtype=np.intp) * self.pixels
        buf = np.empty(n * (self._kb + 2 * self._kp), dtype=np.intp)
        paddle_base = (env_offset // self._unit.itemsize)[None, :] + self._paddle_cols
        ball_idx, paddle_idx = self._indices(s, env_offset, paddle_base, buf,
                                             self._temporaries(n))
        self._paint(out.reshape(-1), ball_idx, paddle_idx)

    def update(self, s: PongState, canvas: np.ndarray) -> None:
        """Bring ``canvas`` (the env's observation buffer, holding the frame this raster
        drew last, or anything on the first call) to the frame of ``s``."""
        flat = canvas.reshape(-1)
        buf = self._bufs[0] if self._drawn is not self._bufs[0] else self._bufs[1]
        if self._drawn is None:
            canvas[...] = self.background
        else:
            old_ball, old_paddles = self._split(self._drawn, self.num_envs)
            flat[old_ball] = self.layout.background
            flat.view(self._unit)[old_paddles] = self._paddle_bg
        ball_idx, paddle_idx = self._indices(s, self._env_offset, self._paddle_base, buf,
                                             self._tmp)
        self._paint(flat, ball_idx, paddle_idx)
        self._drawn = buf

    def invalidate(self) -> None:
        """Forget the canvas: the next :meth:`update` redraws it whole."""
        self._drawn = None

    def __getstate__(self) -> dict:
        d = self.__dict__.copy()
        d["_drawn_index"] = (None if self._drawn is None
                             else next(i for i, b in enumerate(self._bufs) if b is self._drawn))
        del d["_drawn"]
        return d

    def __setstate__(self, d: dict) -> None:
        i = d.pop("_drawn_index")
        self.__dict__.update(d)
        self._drawn = None if i is None else self._bufs[i]


def ansi_frames(s: PongState, p: PongParams) -> list[str]:
    """Text frames: the tile map with ``o`` the ball, ``#`` paddles, walls of ``-``, and
    the score line on top."""
    tiles = np.empty((len(s), p.height, p.width), dtype=np.uint8)
    Raster(tile_layout(p.height, p.width, p.paddle_height), 1).draw(s, tiles)
    chars = np.array([" ", "#", "o"])[tiles]
    wall = "+" + "-" * p.width + "+"
    out = []
    for i in range(len(s)):
        rows = ["|" + "".join(r) + "|" for r in chars[i]]
        head = f" {int(s.score_left[i]):>3} : {int(s.score_right[i]):<3}".center(p.width + 2)
        out.append("\n".join([head, wall, *rows, wall]) + "\n")
    return out
