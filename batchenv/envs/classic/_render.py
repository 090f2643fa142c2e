"""``rgb_array`` frames of the classic-control envs, drawn with numpy: no pygame needed.

Each frame repeats the geometry of Gymnasium's pygame drawing code (same sizes, colours,
coordinates and draw order, y flipped at the end as Gymnasium does), with simple
rasterizers emulating pygame's ``gfxdraw`` rules: polygon vertices truncated to integer
pixels and filled scanline by scanline, filled circles, one-pixel lines. Gymnasium also
anti-aliases the outlines (``aapolygon``, ``aacircle``, ``aalines``); these frames do not,
so edge pixels differ (tests compare with Gymnasium's pygame frames: well under 1% of the
pixels differ). The static parts of a frame (background, track, hill, flag) are drawn once
per env instance and copied into each frame, so a frame draws only its moving parts (what a
frame costs: ``docs/classic_control.md``, "Rendering").
"""

from __future__ import annotations

import math
import struct
import zlib
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

WHITE = (255, 255, 255)
BLACK = (0, 0, 0)


# -------------------------------------------------------------------- primitives
class Canvas:
    """An (H, W, 3) uint8 frame addressed in Gymnasium's drawing coordinates (x right, y
    up: pygame's surface rows before Gymnasium's final vertical flip)."""

    def __init__(self, frame: np.ndarray) -> None:
        self.frame = frame
        self.height, self.width = frame.shape[:2]

    def _rows(self, y0: int, y1: int) -> tuple[int, int]:
        """Image row slice bounds of drawing rows y0..y1 (inclusive, clipped)."""
        y0, y1 = max(y0, 0), min(y1, self.height - 1)
        return self.height - 1 - y1, self.height - y0

    def hline(self, x0: int, x1: int, y: int, color: tuple[int, int, int]) -> None:
        if 0 <= y < self.height:
            x0, x1 = max(min(x0, x1), 0), min(max(x0, x1), self.width - 1)
            if x0 <= x1:
                self.frame[self.height - 1 - y, x0:x1 + 1] = color

    def vline(self, x: int, y0: int, y1: int, color: tuple[int, int, int]) -> None:
        if 0 <= x < self.width:
            r0, r1 = self._rows(min(y0, y1), max(y0, y1))
            if r0 < r1:
                self.frame[r0:r1, x] = color

    def polygon(self, points: Any, color: tuple[int, int, int]) -> None:
        """A filled polygon: vertices truncated to integers (as pygame's gfxdraw does),
        each scanline filled between its edge crossings, rounded."""
        pts = np.trunc(np.asarray(points, dtype=np.float64))
        ys = pts[:, 1]
        y_min, y_max = int(ys.min()), int(ys.max())
        if y_max < 0 or y_min >= self.height:
            return
        scan = np.arange(max(y_min, 0), min(y_max, self.height - 1) + 1, dtype=np.float64)
        a, b = pts, np.roll(pts, -1, axis=0)
        lo, hi = np.minimum(a[:, 1], b[:, 1]), np.maximum(a[:, 1], b[:, 1])
        flat = hi == lo
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (scan[:, None] - a[:, 1]) / (b[:, 1] - a[:, 1])
        x = a[:, 0] + t * (b[:, 0] - a[:, 0])
        crosses = (scan[:, None] >= lo) & (scan[:, None] <= hi) & ~flat
        left = np.where(crosses, x, np.inf).min(axis=1)
        right = np.where(crosses, x, -np.inf).max(axis=1)
        # horizontal edges on a scanline extend it
        for k in np.flatnonzero(flat):
            on = scan == lo[k]
            left[on] = np.minimum(left[on], min(a[k, 0], b[k, 0]))
            right[on] = np.maximum(right[on], max(a[k, 0], b[k, 0]))
        x0 = np.clip(np.floor(left + 0.5), 0, self.width).astype(np.int64)
        x1 = np.clip(np.floor(right + 0.5), -1, self.width - 1).astype(np.int64)
        cols = np.arange(self.width)
        r0, r1 = self._rows(int(scan[0]), int(scan[-1]))
        mask = (cols >= x0[:, None]) & (cols <= x1[:, None])  # rows in drawing order
        c0, c1 = int(max(x0.min(), 0)), int(min(x1.max() + 1, self.width))
        if c0 < c1:
            region = self.frame[r0:r1, c0:c1]
            region[mask[::-1, c0:c1]] = color

    def circle(self, cx: int, cy: int, r: int, color: tuple[int, int, int]) -> None:
        """A filled circle of integer centre and radius (gfxdraw.filled_circle)."""
        if r < 0:
            return
        ys = np.arange(cy - r, cy + r + 1)
        xs = np.arange(cx - r, cx + r + 1)
        inside = (xs[None, :] - cx) ** 2 + (ys[:, None] - cy) ** 2 <= r * r + r
        keep_y = (ys >= 0) & (ys < self.height)
        keep_x = (xs >= 0) & (xs < self.width)
        if not keep_y.any() or not keep_x.any():
            return
        inside = inside[keep_y][:, keep_x]
        ys, xs = ys[keep_y], xs[keep_x]
        region = self.frame[self.height - 1 - ys[::-1, None], xs[None, :]]
        region[inside[::-1]] = color
        self.frame[self.height - 1 - ys[::-1, None], xs[None, :]] = region

    def polyline(self, points: np.ndarray, color: tuple[int, int, int]) -> None:
        """Connected one-pixel line segments (sampled densely, rounded to pixels)."""
        for (x0, y0), (x1, y1) in zip(points[:-1], points[1:]):
            steps = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
            t = np.linspace(0.0, 1.0, steps + 1)
            xs = np.floor(x0 + t * (x1 - x0) + 0.5).astype(np.int64)
            ys = np.floor(y0 + t * (y1 - y0) + 0.5).astype(np.int64)
            ok = (xs >= 0) & (xs < self.width) & (ys >= 0) & (ys < self.height)
            self.frame[self.height - 1 - ys[ok], xs[ok]] = color

    def blend(self, image: np.ndarray, left: int, top: int) -> None:
        """Alpha-blend an RGBA image (rows top-down in drawing coordinates, like a pygame
        surface before the flip) with its top-left pixel at drawing (left, top)."""
        h, w = image.shape[:2]
        ys = top + np.arange(h)  # drawing rows (y grows with the image's row index)
        xs = left + np.arange(w)
        ky = (ys >= 0) & (ys < self.height)
        kx = (xs >= 0) & (xs < self.width)
        if not ky.any() or not kx.any():
            return
        img = image[ky][:, kx].astype(np.float32)
        rows = self.height - 1 - ys[ky]
        cols = xs[kx]
        dst = self.frame[rows[:, None], cols[None, :]].astype(np.float32)
        alpha = img[..., 3:4] / 255.0
        out = dst + (img[..., :3] - dst) * alpha
        self.frame[rows[:, None], cols[None, :]] = np.clip(out + 0.5, 0, 255).astype(np.uint8)


def rotate(points: Any, angle: float) -> np.ndarray:
    """``pygame.math.Vector2(p).rotate_rad(angle)`` for each point."""
    c, s = math.cos(angle), math.sin(angle)
    p = np.asarray(points, dtype=np.float64)
    return np.stack([p[:, 0] * c - p[:, 1] * s, p[:, 0] * s + p[:, 1] * c], axis=1)


def _frames(count: int, background: np.ndarray) -> np.ndarray:
    out = np.empty((count, *background.shape), dtype=np.uint8)
    out[...] = background
    return out


# -------------------------------------------------------------------- CartPole
CARTPOLE_SIZE = (400, 600)


@cache
def _cartpole_background() -> np.ndarray:
    frame = np.full((*CARTPOLE_SIZE, 3), 255, dtype=np.uint8)
    Canvas(frame).hline(0, CARTPOLE_SIZE[1], 100, BLACK)  # the track
    frame.flags.writeable = False
    return frame


def cartpole_frames(x: np.ndarray, theta: np.ndarray, p: Any) -> list[np.ndarray]:
    """Gymnasium's CartPole frame (600 x 400) for each (x, theta)."""
    height, width = CARTPOLE_SIZE
    scale = width / (p.x_threshold * 2)
    polewidth, polelen = 10.0, scale * (2 * p.length)
    cartwidth, cartheight = 50.0, 30.0
    axleoffset = cartheight / 4.0
    carty = 100
    lft, rgt, top, bot = -cartwidth / 2, cartwidth / 2, cartheight / 2, -cartheight / 2
    cart = np.array([(lft, bot), (lft, top), (rgt, top), (rgt, bot)])
    lft, rgt, top, bot = -polewidth / 2, polewidth / 2, polelen - polewidth / 2, -polewidth / 2
    pole = np.array([(lft, bot), (lft, top), (rgt, top), (rgt, bot)])
    frames = _frames(len(x), _cartpole_background())
    for frame, xi, th in zip(frames, x, theta):
        canvas = Canvas(frame)
        cartx = float(xi) * scale + width / 2.0
        canvas.polygon(cart + (cartx, carty), BLACK)
        canvas.polygon(rotate(pole, -float(th)) + (cartx, carty + axleoffset), (202, 152, 101))
        canvas.circle(int(cartx), int(carty + axleoffset), int(polewidth / 2), (129, 132, 203))
        canvas.hline(0, width, carty, BLACK)
    return list(frames)


# -------------------------------------------------------------------- MountainCar
MOUNTAIN_CAR_SIZE = (400, 600)


def _height(xs: Any) -> Any:
    return np.sin(3 * xs) * 0.45 + 0.55


@cache
def _mountain_background(min_position: float, max_position: float,
                         goal_position: float) -> np.ndarray:
    height, width = MOUNTAIN_CAR_SIZE
    frame = np.full((height, width, 3), 255, dtype=np.uint8)
    canvas = Canvas(frame)
    scale = width / (max_position - min_position)
    xs = np.linspace(min_position, max_position, 100)
    ys = _height(xs)
    canvas.polyline(np.stack([(xs - min_position) * scale, ys * scale], axis=1), BLACK)
    flagx = int((goal_position - min_position) * scale)
    flagy1 = int(_height(goal_position) * scale)
    flagy2 = flagy1 + 50
    canvas.vline(flagx, flagy1, flagy2, BLACK)
    canvas.polygon([(flagx, flagy2), (flagx, flagy2 - 10), (flagx + 25, flagy2 - 5)],
                   (204, 204, 0))
    frame.flags.writeable = False
    return frame


def mountain_car_frames(position: np.ndarray, p: Any) -> list[np.ndarray]:
    """Gymnasium's MountainCar frame (600 x 400) for each position (both versions)."""
    height, width = MOUNTAIN_CAR_SIZE
    scale = width / (p.max_position - p.min_position)
    carwidth, carheight, clearance = 40, 20, 10
    lft, rgt, top, bot = -carwidth / 2, carwidth / 2, carheight, 0
    body = np.array([(lft, bot), (lft, top), (rgt, top), (rgt, bot)])
    wheels = np.array([(carwidth / 4, 0), (-carwidth / 4, 0)])
    background = _mountain_background(p.min_position, p.max_position, p.goal_position)
    frames = _frames(len(position), background)
    for frame, pos in zip(frames, position):
        canvas = Canvas(frame)
        pos = float(pos)
        angle = math.cos(3 * pos)
        origin = ((pos - p.min_position) * scale, clearance + _height(pos) * scale)
        canvas.polygon(rotate(body, angle) + origin, BLACK)
        for wx, wy in rotate(wheels, angle):
            canvas.circle(int(wx + origin[0]), int(wy + origin[1]), int(carheight / 2.5),
                          (128, 128, 128))
        # the flag is drawn after the car in Gymnasium
        flagx = int((p.goal_position - p.min_position) * scale)
        flagy1 = int(_height(p.goal_position) * scale)
        canvas.vline(flagx, flagy1, flagy1 + 50, BLACK)
        canvas.polygon([(flagx, flagy1 + 50), (flagx, flagy1 + 40), (flagx + 25, flagy1 + 45)],
                       (204, 204, 0))
    return list(frames)


# -------------------------------------------------------------------- Acrobot
ACROBOT_SIZE = 500


@cache
def _acrobot_background(bound: float) -> np.ndarray:
    dim = ACROBOT_SIZE
    frame = np.full((dim, dim, 3), 255, dtype=np.uint8)
    scale, offset = dim / (bound * 2), dim / 2
    y = int(1 * scale + offset)
    Canvas(frame).hline(int(-2.2 * scale + offset), int(2.2 * scale + offset), y, BLACK)
    frame.flags.writeable = False
    return frame


def acrobot_frames(theta1: np.ndarray, theta2: np.ndarray, p: Any) -> list[np.ndarray]:
    """Gymnasium's Acrobot frame (500 x 500) for each (theta1, theta2)."""
    dim = ACROBOT_SIZE
    bound = p.LINK_LENGTH_1 + p.LINK_LENGTH_2 + 0.2
    scale, offset = dim / (bound * 2), dim / 2
    lengths = [p.LINK_LENGTH_1 * scale, p.LINK_LENGTH_2 * scale]
    frames = _frames(len(theta1), _acrobot_background(bound))
    for frame, t1, t2 in zip(frames, theta1, theta2):
        canvas = Canvas(frame)
        t1, t2 = float(t1), float(t2)
        p1 = [-p.LINK_LENGTH_1 * math.cos(t1) * scale, p.LINK_LENGTH_1 * math.sin(t1) * scale]
        joints = [(0.0, 0.0), (p1[1], p1[0])]  # Gymnasium's xys = [[0, 0], p1][:, ::-1]
        angles = [t1 - math.pi / 2, t1 + t2 - math.pi / 2]
        for (jx, jy), angle, length in zip(joints, angles, lengths):
            x, y = jx + offset, jy + offset
            lft, rgt, top, bot = 0, length, 0.1 * scale, -0.1 * scale
            link = np.array([(lft, bot), (lft, top), (rgt, top), (rgt, bot)])
            canvas.polygon(rotate(link, angle) + (x, y), (0, 204, 204))
            canvas.circle(int(x), int(y), int(0.1 * scale), (204, 204, 0))
    return list(frames)


# -------------------------------------------------------------------- Pendulum
PENDULUM_SIZE = 500


def _read_png(path: Path) -> np.ndarray:
    """A non-interlaced 8-bit RGBA PNG as an (H, W, 4) uint8 array (zlib + the five PNG
    row filters; enough for Gymnasium's arrow). Decoded here, with numpy and zlib only, so
    that rendering needs no image library."""
    header, compressed = _png_chunks(path.read_bytes())
    if header is None or header[2:5] != (8, 6, 0) or header[6] != 0:
        raise ValueError(f"{path}: expected a non-interlaced 8-bit RGBA PNG")
    width, height = header[0], header[1]
    raw = np.frombuffer(zlib.decompress(compressed), dtype=np.uint8)
    raw = raw.reshape(height, 1 + width * 4)
    out = np.zeros((height, width * 4), dtype=np.int32)
    prev = np.zeros(width * 4, dtype=np.int32)
    for y in range(height):
        out[y] = prev = _unfilter(int(raw[y, 0]), raw[y, 1:].astype(np.int32), prev)
    return out.reshape(height, width, 4).astype(np.uint8)


def _png_chunks(data: bytes) -> tuple[tuple[int, ...] | None, bytes]:
    """A PNG's IHDR fields (width, height, bit depth, colour type, compression, filter,
    interlace; None if it has none) and its IDAT chunks joined."""
    pos, chunks, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    return header, b"".join(chunks)


def _unfilter(kind: int, line: np.ndarray, prev: np.ndarray) -> np.ndarray:
    """One row of 4-byte pixels with PNG filter ``kind`` undone, given the row above."""
    if kind == 0:  # none
        return line
    if kind == 2:  # up
        return (line + prev) & 255
    cur = np.zeros_like(line)  # 1 (sub), 3 (average), 4 (Paeth) need the left pixel: per byte
    for x in range(len(line)):
        a = cur[x - 4] if x >= 4 else 0
        b, c = prev[x], prev[x - 4] if x >= 4 else 0
        if kind == 1:
            pred = a
        elif kind == 3:
            pred = (a + b) // 2
        else:
            pred = _paeth(a, b, c)
        cur[x] = (line[x] + pred) & 255
    return cur


def _paeth(a: int, b: int, c: int) -> int:
    """PNG's Paeth predictor of a byte from its left ``a``, upper ``b`` and upper-left ``c``
    neighbours."""
    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


@lru_cache(maxsize=1)
def _arrow() -> np.ndarray:
    import gymnasium.envs.classic_control as cc

    return _read_png(Path(cc.__file__).parent / "assets" / "clockwise.png")


@lru_cache(maxsize=256)
def _arrow_of_size(size: int) -> np.ndarray:
    """The arrow smooth-scaled to size x size and flipped vertically (as Gymnasium does)."""
    arrow = _resize(_arrow(), size, size)[::-1]
    arrow.flags.writeable = False
    return arrow


def _resize(image: np.ndarray, width: int, height: int) -> np.ndarray:
    """Area-average resampling to (height, width) (like pygame's smoothscale)."""
    if width <= 0 or height <= 0:
        return image[:0, :0]
    h, w = image.shape[:2]
    img = image.astype(np.float32)
    img[..., :3] *= img[..., 3:4] / 255.0  # premultiply, so transparent pixels don't bleed
    ys = np.minimum((np.arange(height + 1) * h) // height, h)
    xs = np.minimum((np.arange(width + 1) * w) // width, w)
    ii = np.concatenate([np.zeros((1, w + 1, 4), np.float32),
                         np.concatenate([np.zeros((h, 1, 4), np.float32),
                                         img.cumsum(0).cumsum(1)], axis=1)], axis=0)
    area = ((ys[1:] - ys[:-1])[:, None] * (xs[1:] - xs[:-1])[None, :]).astype(np.float32)
    area = np.maximum(area, 1)[..., None]
    total = (ii[ys[1:]][:, xs[1:]] - ii[ys[:-1]][:, xs[1:]] - ii[ys[1:]][:, xs[:-1]]
             + ii[ys[:-1]][:, xs[:-1]]) / area
    alpha = total[..., 3:4]
    rgb = np.where(alpha > 0, total[..., :3] * 255.0 / np.maximum(alpha, 1e-6), 0)
    return np.clip(np.concatenate([rgb, alpha], axis=2) + 0.5, 0, 255).astype(np.uint8)


def pendulum_frames(th: np.ndarray, last_u: np.ndarray, p: Any) -> list[np.ndarray]:
    """Gymnasium's Pendulum frame (500 x 500) for each angle, with the torque arrow of the
    last action (none when it is 0, as after a reset)."""
    dim = PENDULUM_SIZE
    bound = 2.2
    scale, offset = dim / (bound * 2), dim // 2
    rod_length, rod_width = 1 * scale, 0.2 * scale
    lft, rgt, top, bot = 0, rod_length, rod_width / 2, -rod_width / 2
    rod = np.array([(lft, bot), (lft, top), (rgt, top), (rgt, bot)])
    red = (204, 77, 77)
    background = np.full((dim, dim, 3), 255, dtype=np.uint8)
    frames = _frames(len(th), background)
    for frame, angle, u in zip(frames, th, last_u):
        canvas = Canvas(frame)
        angle = float(angle) + np.pi / 2
        canvas.polygon(rotate(rod, angle) + (offset, offset), red)
        canvas.circle(offset, offset, int(rod_width / 2), red)
        end = rotate([(rod_length, 0)], angle)[0]
        canvas.circle(int(end[0] + offset), int(end[1] + offset), int(rod_width / 2), red)
        size = int(float(scale * abs(float(u)) / 2))
        if size > 0:
            arrow = _arrow_of_size(size)  # pygame.transform.flip(img, is_flip, True)
            if u > 0:
                arrow = arrow[:, ::-1]
            canvas.blend(arrow, offset - size // 2, offset - size // 2)
        canvas.circle(offset, offset, int(0.05 * scale), BLACK)
    return list(frames)
