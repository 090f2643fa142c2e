"""MiniGrid's ``rgb_array`` frames with ``minigrid``'s tile look.

Ported from ``minigrid`` 3.x (Apache-2.0): ``minigrid/utils/rendering.py`` (the shape
tests, ``fill_coords``, ``highlight_img``, ``downsample``), ``Grid.render_tile`` and
``Grid.render`` (``minigrid/core/grid.py``), the objects' ``render`` methods
(``world_object.py``) and ``MiniGridEnv.get_full_render``'s highlight of the cells the
agent sees. A tile is drawn once per (object, direction, highlight, size), 3x supersampled
as ``minigrid`` does, and cached; a frame is its tiles. ``tests/test_minigrid.py`` compares
frames with ``minigrid``'s own ``render()`` pixel for pixel.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from batchenv.envs.minigrid import common

TILE = 32  # minigrid's TILE_PIXELS
SUBDIVS = 3  # render_tile's supersampling
#: minigrid's COLORS, by colour index
COLORS = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [112, 39, 195], [255, 255, 0],
                   [100, 100, 100]])

Shape = Callable[[float, float], bool]


# ------------------------------------------------------------------ minigrid/utils/rendering.py
def fill_coords(img: np.ndarray, fn: Shape, color: Any) -> None:
    for y in range(img.shape[0]):
        for x in range(img.shape[1]):
            if fn((x + 0.5) / img.shape[1], (y + 0.5) / img.shape[0]):
                img[y, x] = color


def rotate_fn(fin: Shape, cx: float, cy: float, theta: float) -> Shape:
    def fout(x: float, y: float) -> bool:
        x = x - cx
        y = y - cy
        x2 = cx + x * math.cos(-theta) - y * math.sin(-theta)
        y2 = cy + y * math.cos(-theta) + x * math.sin(-theta)
        return fin(x2, y2)
    return fout


def point_in_line(x0: float, y0: float, x1: float, y1: float, r: float) -> Shape:
    p0 = np.array([x0, y0], dtype=np.float32)
    p1 = np.array([x1, y1], dtype=np.float32)
    direction = p1 - p0
    dist = np.linalg.norm(direction)
    direction = direction / dist
    xmin, xmax = min(x0, x1) - r, max(x0, x1) + r
    ymin, ymax = min(y0, y1) - r, max(y0, y1) + r

    def fn(x: float, y: float) -> bool:
        if x < xmin or x > xmax or y < ymin or y > ymax:
            return False
        q = np.array([x, y])
        pq = q - p0
        a = np.clip(np.dot(pq, direction), 0, dist)
        p = p0 + a * direction
        return bool(np.linalg.norm(q - p) <= r)
    return fn


def point_in_circle(cx: float, cy: float, r: float) -> Shape:
    return lambda x, y: (x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r


def point_in_rect(xmin: float, xmax: float, ymin: float, ymax: float) -> Shape:
    return lambda x, y: xmin <= x <= xmax and ymin <= y <= ymax


def point_in_triangle(a: Any, b: Any, c: Any) -> Shape:
    a = np.array(a, dtype=np.float32)
    b = np.array(b, dtype=np.float32)
    c = np.array(c, dtype=np.float32)

    def fn(x: float, y: float) -> bool:
        v0, v1, v2 = c - a, b - a, np.array((x, y)) - a
        dot00, dot01, dot02 = np.dot(v0, v0), np.dot(v0, v1), np.dot(v0, v2)
        dot11, dot12 = np.dot(v1, v1), np.dot(v1, v2)
        inv_denom = 1 / (dot00 * dot11 - dot01 * dot01)
        u = (dot11 * dot02 - dot01 * dot12) * inv_denom
        v = (dot00 * dot12 - dot01 * dot02) * inv_denom
        return bool((u >= 0) and (v >= 0) and (u + v) < 1)
    return fn


def highlight_img(img: np.ndarray, color: Any = (255, 255, 255), alpha: float = 0.30) -> None:
    blend = img + alpha * (np.array(color, dtype=np.uint8) - img)
    img[:, :, :] = blend.clip(0, 255).astype(np.uint8)


def downsample(img: np.ndarray, factor: int) -> np.ndarray:
    img = img.reshape([img.shape[0] // factor, factor, img.shape[1] // factor, factor, 3])
    return img.mean(axis=3).mean(axis=1)


# ------------------------------------------------------------------ world_object.py's render
def draw_object(img: np.ndarray, t: int, color: int, state: int) -> None:
    """The object ``(type, colour, state)``'s ``render(img)``."""
    c = COLORS[color]
    if t == common.GOAL or t == common.WALL:
        fill_coords(img, point_in_rect(0, 1, 0, 1), c)
    elif t == common.FLOOR:
        fill_coords(img, point_in_rect(0.031, 1, 0.031, 1), c / 2)
    elif t == common.LAVA:
        fill_coords(img, point_in_rect(0, 1, 0, 1), (255, 128, 0))
        for k in range(3):  # little waves
            ylo, yhi = 0.3 + 0.2 * k, 0.4 + 0.2 * k
            fill_coords(img, point_in_line(0.1, ylo, 0.3, yhi, r=0.03), (0, 0, 0))
            fill_coords(img, point_in_line(0.3, yhi, 0.5, ylo, r=0.03), (0, 0, 0))
            fill_coords(img, point_in_line(0.5, ylo, 0.7, yhi, r=0.03), (0, 0, 0))
            fill_coords(img, point_in_line(0.7, yhi, 0.9, ylo, r=0.03), (0, 0, 0))
    elif t == common.DOOR:
        if state == common.OPEN:
            fill_coords(img, point_in_rect(0.88, 1.00, 0.00, 1.00), c)
            fill_coords(img, point_in_rect(0.92, 0.96, 0.04, 0.96), (0, 0, 0))
        elif state == common.LOCKED:
            fill_coords(img, point_in_rect(0.00, 1.00, 0.00, 1.00), c)
            fill_coords(img, point_in_rect(0.06, 0.94, 0.06, 0.94), 0.45 * np.array(c))
            fill_coords(img, point_in_rect(0.52, 0.75, 0.50, 0.56), c)  # key slot
        else:
            fill_coords(img, point_in_rect(0.00, 1.00, 0.00, 1.00), c)
            fill_coords(img, point_in_rect(0.04, 0.96, 0.04, 0.96), (0, 0, 0))
            fill_coords(img, point_in_rect(0.08, 0.92, 0.08, 0.92), c)
            fill_coords(img, point_in_rect(0.12, 0.88, 0.12, 0.88), (0, 0, 0))
            fill_coords(img, point_in_circle(cx=0.75, cy=0.50, r=0.08), c)  # handle
    elif t == common.KEY:
        fill_coords(img, point_in_rect(0.50, 0.63, 0.31, 0.88), c)  # vertical quad
        fill_coords(img, point_in_rect(0.38, 0.50, 0.59, 0.66), c)  # teeth
        fill_coords(img, point_in_rect(0.38, 0.50, 0.81, 0.88), c)
        fill_coords(img, point_in_circle(cx=0.56, cy=0.28, r=0.190), c)  # ring
        fill_coords(img, point_in_circle(cx=0.56, cy=0.28, r=0.064), (0, 0, 0))
    elif t == common.BALL:
        fill_coords(img, point_in_circle(0.5, 0.5, 0.31), c)
    elif t == common.BOX:
        fill_coords(img, point_in_rect(0.12, 0.88, 0.12, 0.88), c)  # outline
        fill_coords(img, point_in_rect(0.18, 0.82, 0.18, 0.82), (0, 0, 0))
        fill_coords(img, point_in_rect(0.16, 0.84, 0.47, 0.53), c)  # horizontal slit


# ------------------------------------------------------------------ Grid.render_tile / render
_TILES: dict[tuple[int, ...], np.ndarray] = {}


def tile(t: int, color: int, state: int, agent_dir: int, highlight: bool,
         size: int = TILE) -> np.ndarray:
    """``Grid.render_tile``: one cell's tile (float, before the frame's uint8 cast);
    ``agent_dir`` -1: no agent on it."""
    key = (t, color, state, agent_dir, highlight, size)
    img = _TILES.get(key)
    if img is None:
        img = np.zeros((size * SUBDIVS, size * SUBDIVS, 3), dtype=np.uint8)
        fill_coords(img, point_in_rect(0, 0.031, 0, 1), (100, 100, 100))  # grid lines
        fill_coords(img, point_in_rect(0, 1, 0, 0.031), (100, 100, 100))
        if t != common.EMPTY:
            draw_object(img, t, color, state)
        if agent_dir >= 0:
            agent = point_in_triangle((0.12, 0.19), (0.87, 0.50), (0.12, 0.81))
            agent = rotate_fn(agent, cx=0.5, cy=0.5, theta=0.5 * math.pi * agent_dir)
            fill_coords(img, agent, (255, 0, 0))
        if highlight:
            highlight_img(img)
        img = _TILES[key] = downsample(img, SUBDIVS)
    return img


def visible_cells(p: Any, s: Any, i: int, view: np.ndarray) -> np.ndarray:
    """``get_full_render``'s highlight mask ``[x, y]``: the grid cells the agent sees, from
    its 7x7 view ``view`` (``observe_partial``'s: a cell it does not see is UNSEEN)."""
    mask = np.zeros((p.width, p.height), dtype=bool)
    d = int(s.agent_dir[i])
    fx, fy = int(common.DIR_DX[d]), int(common.DIR_DY[d])
    rx, ry = -fy, fx
    v = common.VIEW
    for vx in range(v):
        for vy in range(v):
            if view[vx, vy, 0] == common.UNSEEN:
                continue
            x = int(s.agent_x[i]) + fx * (v - 1 - vy) + rx * (vx - v // 2)
            y = int(s.agent_y[i]) + fy * (v - 1 - vy) + ry * (vx - v // 2)
            if 0 <= x < p.width and 0 <= y < p.height:
                mask[x, y] = True
    return mask


def frame(p: Any, s: Any, i: int, size: int = TILE) -> np.ndarray:
    """Row ``i``'s frame, ``(height * size, width * size, 3)`` uint8, as ``minigrid``'s
    ``render()`` (``highlight=True``, the whole grid)."""
    view = np.zeros((common.VIEW, common.VIEW, 3), dtype=np.uint8)
    common.observe_partial(p, s, i, view)
    highlight = visible_cells(p, s, i, view)
    img = np.zeros((p.height * size, p.width * size, 3), dtype=np.uint8)
    ax, ay, d = int(s.agent_x[i]), int(s.agent_y[i]), int(s.agent_dir[i])
    for x in range(p.width):
        for y in range(p.height):
            t, c, st = (int(v) for v in s.grid[i, x, y])
            agent = d if (x, y) == (ax, ay) else -1
            img[y * size:(y + 1) * size, x * size:(x + 1) * size] = tile(
                t, c, st, agent, bool(highlight[x, y]), size)
    return img
