"""Crafter's image, pixel for pixel as crafter 1.8.3's ``Env.render()`` draws it, and the
symbolic observation.

The image (``env.py``'s ``render``; ``engine.py``'s ``LocalView``, ``ItemView``,
``Textures``): 64 x 64 x 3 uint8, a 9 x 9 grid of 7-pixel cells (64 // 9; the last row and
column of pixels stay black): the top 9 x 7 cells show the world around the player (the
player in cell (4, 3); cells outside the world grey 127), each cell its material's texture
with the object on it drawn over it (alpha-blended); the bottom 9 x 2 cells the inventory,
each held item's texture with its count. The world's part is then lit
(``LocalView._light``) and, while the player sleeps, greyed (``LocalView._sleep``).

**Tables made once** (from the PNG files in the installed ``crafter`` package's ``assets``
folder, resized as crafter resizes them, with Pillow's nearest-neighbour filter):
:func:`tables` gives every cell's unlit picture for each (material, object) pair
(``tiles``), every inventory cell's (``item_tiles``), and the lit pictures of the day
(``day_tiles``: see below). The kernels copy cells from them.

**Light, per pixel** (``LocalView._light``, ``_noise``, ``_tint``, ``_sleep``; Pillow's
``ImageEnhance.Color``): with daylight ``d`` and an unlit pixel ``c``::

    t = c                                   by day (d >= 0.5)
    t = trunc((1 - m) * c + m * n)           at night: m = 2 (0.5 - d) * vignette, n noise
    L = (19595 t_r + 38470 t_g + 7471 t_b + 0x8000) >> 16     Pillow's RGB -> L
    e = (3 L + 2 t) // 5                    Pillow's blend(L, t, 0.4): L + 0.4 (t - L), in
                                            float32, truncated (equal for all bytes: tested)
    out = trunc(d * c + (1 - d) * (0.5 e + 0.5 tint)),   tint = (0, 16, 64)
    asleep: L' = L(out); out = trunc(0.5 L' + 0.5 (0, 0, 16))

in float64 as crafter's numpy does it. By day a cell's lit picture depends only on the cell,
``d`` and whether the player sleeps: ``day_tiles[day_level[step], asleep, tile]`` holds it
(:func:`tables`). At night and past crafter's 10,000 steps the pixels are lit one by one.

**The night noise** (crafter: ``world.random.uniform(32, 127, (63, 49))`` per night step):
one word of the env's stream per night step (``noise_key``, drawn at the end of the step
where crafter's ``render`` draws its noise), from which pixel ``p = 63 y + x``'s noise is
``32 + 95 (b + 0.5) / 65536``, ``b`` the low 16 bits of a 32-bit hash of the key and ``p``
(:func:`noise_hash`; :func:`noise_field` computes the same array in numpy, for the parity
tests).
"""

from __future__ import annotations

import importlib.util
import pathlib
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from batchenv import perenv
from batchenv.envs.crafter.data import (
    AREA,
    ARROW,
    ITEMS,
    LENGTH,
    LOCAL_VIEW,
    MATERIALS,
    PLANT,
)
from batchenv.envs.crafter.rules import DAYLIGHT, daylight

__all__ = ["tables", "Tables", "noise_field", "observe_pixels", "observe_symbolic",
           "assets_dir", "OBJECT_TEXTURES", "UNIT", "SYMBOLIC_SIZE", "symbolic_layout"]

UNIT = 7  # pixels a cell: 64 // 9 (env.py's render: unit = size // view)
SIZE = 64
_VW, _VH = LOCAL_VIEW  # 9 x 7 cells of world
_OFFSET_X, _OFFSET_Y = _VW // 2, _VH // 2  # the player's cell (LocalView's offset)
_WORLD_PX_W, _WORLD_PX_H = _VW * UNIT, _VH * UNIT  # 63 x 49 pixels
OUTSIDE = len(MATERIALS)  # the tile index of a cell outside the world (grey 127)
#: The object textures, by the index the kernels compute (0: no object)
OBJECT_TEXTURES = ("", "player-left", "player-right", "player-up", "player-down",
                   "player-sleep", "cow", "zombie", "skeleton", "arrow-left", "arrow-right",
                   "arrow-up", "arrow-down", "plant", "plant-ripe")
_PLAYER_TEX, _SLEEP_TEX = 1, 5  # + facing
_KIND_TEX = np.array([0, 6, 7, 8, 9, 13], dtype=np.int64)  # by kind (arrow, plant: + more)
TINT = (0, 16, 64)  # LocalView._light's night tint
SLEEP_TINT = (0, 0, 16)  # LocalView._sleep's tint
# each tint's half, as crafter's _tint computes ``amount * color`` (amount 0.5)
_TINT0, _TINT1, _TINT2 = (0.5 * c for c in TINT)
_SLEEP0, _SLEEP1, _SLEEP2 = (0.5 * c for c in SLEEP_TINT)
#: daylight < 0.5: the noise (LocalView._light)
_VIGNETTE_STDDEV = 0.5
_LANE32 = np.uint32(0xFFFF)
_LOW32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_S16, _S15 = np.uint32(16), np.uint32(15)
_LB1, _LB2 = np.uint32(0x7FEB352D), np.uint32(0x846CA68B)  # lowbias32's multipliers
#: Pillow's RGB -> L weights (``L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16``) and the
#: other constants of the light formula, as uint32
_R, _G, _B, _HALF = np.uint32(19595), np.uint32(38470), np.uint32(7471), np.uint32(0x8000)
_2, _3 = np.uint32(2), np.uint32(3)
#: ``x // 5`` as ``(x * 52429) >> 18``, exact for 0 <= x < 81920 (``3 L + 2 t`` is at most
#: 1275; tests/test_crafter.py checks every value)
_FIFTH_MUL, _FIFTH_SHIFT = np.uint32(52429), np.uint32(18)


def assets_dir() -> pathlib.Path:
    """The installed ``crafter`` package's ``assets`` folder (its textures), found without
    importing crafter. ImportError naming the extra when crafter is not installed."""
    spec = importlib.util.find_spec("crafter")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("BatchCrafter's pixel observations and rendering use crafter's own "
                          "textures: pip install 'batchenv[crafter]' (or pass "
                          "obs_type='symbolic', which needs no textures)")
    return pathlib.Path(next(iter(spec.submodule_search_locations))) / "assets"


@lru_cache(maxsize=1)
def _originals() -> dict[str, np.ndarray]:
    """``engine.Textures``' originals: each PNG as read, transposed to [x, y, channel]."""
    from PIL import Image

    out = {}
    for path in sorted(assets_dir().glob("*.png")):
        with Image.open(path) as im:
            image = np.array(im)
        out[path.stem] = image.transpose((1, 0) + tuple(range(2, image.ndim)))
    return out


def texture(name: str, size: int) -> np.ndarray:
    """``Textures.get(name, (size, size))``: resized with Pillow's NEAREST, [x, y, channel]."""
    from PIL import Image

    image = _originals()[name]
    return np.array(Image.fromarray(image).resize((size, size), resample=Image.Resampling.NEAREST))


def _draw(canvas: np.ndarray, x: int, y: int, tex: np.ndarray) -> None:
    """``engine._draw``: the texture's colour channels over the canvas ([x, y])."""
    w, h = tex.shape[:2]
    canvas[x:x + w, y:y + h] = tex[..., :3]


def _draw_alpha(canvas: np.ndarray, x: int, y: int, tex: np.ndarray) -> None:
    """``engine._draw_alpha``: alpha-blended in float32, as crafter computes it."""
    w, h = tex.shape[:2]
    if tex.shape[-1] == 4:
        alpha = tex[..., 3:].astype(np.float32) / 255
        colour = tex[..., :3].astype(np.float32) / 255
        current = canvas[x:x + w, y:y + h].astype(np.float32) / 255
        blended = alpha * colour + (1 - alpha) * current
        tex = (255 * blended).astype(np.uint8)
    canvas[x:x + w, y:y + h] = tex


def _cell_tiles() -> np.ndarray:
    """The unlit picture of a world cell for each (material or outside, object texture):
    ``(14, 15, 7, 7, 3)`` uint8 in the observation's orientation [row y, column x]."""
    out = np.zeros((len(MATERIALS) + 1, len(OBJECT_TEXTURES), UNIT, UNIT, 3), np.uint8)
    for m in range(len(MATERIALS) + 1):
        for o, name in enumerate(OBJECT_TEXTURES):
            canvas = np.full((UNIT, UNIT, 3), 127, np.uint8)
            if m < len(MATERIALS):
                _draw(canvas, 0, 0, texture(MATERIALS[m] if m else "unknown", UNIT))
            if name:
                _draw_alpha(canvas, 0, 0, texture(name, UNIT))
            out[m, o] = canvas.transpose(1, 0, 2)
    return out


def _item_tiles() -> np.ndarray:
    """``ItemView``'s cell for each item and count 0-9: ``(16, 10, 7, 7, 3)`` uint8 [y, x];
    the item's texture at 0.1 of the cell (5 pixels wide), its count at 0.4 (4 wide)."""
    out = np.zeros((len(ITEMS), 10, UNIT, UNIT, 3), np.uint8)
    first, second = int(0.1 * UNIT), int(0.4 * UNIT)  # (pos * unit + 0.1 * unit), int32
    for k, item in enumerate(ITEMS):
        for amount in range(1, 10):
            canvas = np.zeros((UNIT, UNIT, 3), np.uint8)
            _draw_alpha(canvas, first, first, texture(item, int(0.8 * UNIT)))
            _draw_alpha(canvas, second, second, texture(str(amount), int(0.6 * UNIT)))
            out[k, amount] = canvas.transpose(1, 0, 2)
    return out


def vignette() -> np.ndarray:
    """``LocalView._vignette((63, 49, 3), 0.5)`` as crafter computes it, in the
    observation's orientation, and a column of zeros for the border (:func:`light_row`):
    ``(49, 64)`` float64 [y, x]."""
    xs, ys = np.meshgrid(np.linspace(-1, 1, _WORLD_PX_W), np.linspace(-1, 1, _WORLD_PX_H))
    out = np.zeros((_WORLD_PX_H, SIZE))
    out[:, :_WORLD_PX_W] = (1 - np.exp(-0.5 * (xs ** 2 + ys ** 2) / (_VIGNETTE_STDDEV ** 2)).T).T
    return out


def light(pixels: np.ndarray, d: float, sleeping: bool = False) -> np.ndarray:
    """The lighting of the formula above without noise, in numpy, on uint8 pixels
    ``(..., 3)``: what the day's tables are made with."""
    c = pixels.astype(np.float64)
    t = pixels.astype(np.int64)
    grey = (t[..., 0] * 19595 + t[..., 1] * 38470 + t[..., 2] * 7471 + 0x8000) >> 16
    e = (3 * grey[..., None] + 2 * t) // 5
    night = (1 - 0.5) * e + 0.5 * np.array(TINT)
    out = (d * c + (1 - d) * night).astype(np.uint8)
    if sleeping:
        o = out.astype(np.int64)
        grey = (o[..., 0] * 19595 + o[..., 1] * 38470 + o[..., 2] * 7471 + 0x8000) >> 16
        out = ((1 - 0.5) * grey[..., None] + 0.5 * np.array(SLEEP_TINT)).astype(np.uint8)
    return out


class Tables(NamedTuple):
    """The pictures the pixel kernels copy (:func:`tables`)."""

    tiles: np.ndarray  # (14, 15, 7, 7, 3) uint8: a world cell, unlit
    item_tiles: np.ndarray  # (16, 10, 7, 7, 3) uint8: an inventory cell
    day_tiles: np.ndarray  # (levels, 2, 14, 15, 7, 7, 3) uint8: a world cell lit by day,
    #                        the player awake (0) and asleep (1)
    day_level: np.ndarray  # (10001,) int16: each step's level of day_tiles; -1 at night
    vignette: np.ndarray  # (49, 64) float64 (:func:`vignette`)


@lru_cache(maxsize=1)
def tables() -> Tables:
    """The pictures (made on the first call, about a second; cached for the process).
    The day's 550 daylights (steps 0-10,000 with daylight >= 0.5) light the 227 colours of
    the textures in 78 different ways: a level of ``day_tiles`` per way, each lit for a
    player awake and asleep (asleep, a pixel's grey is a function of its lit colour).
    Raises ImportError without crafter (:func:`assets_dir`)."""
    tiles = _cell_tiles()
    colours, index = np.unique(tiles.reshape(-1, 3), axis=0, return_inverse=True)
    index = index.reshape(tiles.shape[:-1])
    day_level = np.full(LENGTH + 1, -1, np.int16)
    levels: dict[bytes, int] = {}
    lit: list[np.ndarray] = []
    for step in np.flatnonzero(DAYLIGHT >= 0.5):
        palette = light(colours, DAYLIGHT[step])
        key = palette.tobytes()
        if key not in levels:
            levels[key] = len(lit)
            asleep = light(colours, DAYLIGHT[step], sleeping=True)
            lit.append(np.stack([palette[index], asleep[index]]))
        day_level[step] = levels[key]
    return Tables(tiles, _item_tiles(), np.stack(lit), day_level, vignette())


def noise_field(key: int) -> np.ndarray:
    """The night noise of :func:`observe_pixels` for ``noise_key`` ``key``, as crafter's
    ``uniform(32, 127, (63, 49))`` array ([x, y]): for the parity tests to give crafter."""
    key = int(key)
    k32 = np.uint32((key ^ (key >> 32)) & 0xFFFFFFFF)
    h = k32 ^ np.arange(_WORLD_PX_W * _WORLD_PX_H, dtype=np.uint32)
    with np.errstate(over="ignore"):
        h = (h ^ (h >> _S16)) * _LB1
        h = (h ^ (h >> _S15)) * _LB2
    h = h ^ (h >> _S16)
    n = 32.0 + 95.0 * (((h & _LANE32).astype(np.float64) + 0.5) * (1.0 / 65536.0))
    return n.reshape(_WORLD_PX_H, _WORLD_PX_W).T.copy()


# ----------------------------------------------------------------------------- kernels
@perenv.rule(inline=False)
def object_texture(s: Any, i: int, who: int) -> int:
    """The index into :data:`OBJECT_TEXTURES` of what stands on a cell (its object map
    entry): the player by facing (asleep: ``player-sleep``), arrows by direction, plants
    ripe or not (``Plant.texture``)."""
    if who == 0:
        return 0
    if who == 1:
        return _SLEEP_TEX if s.sleeping[i] else _PLAYER_TEX + np.int64(s.facing[i])
    k = who - 2
    kind = s.kind[i, k]
    tex = _KIND_TEX[kind]
    if kind == ARROW:
        tex += np.int64(s.obj_dir[i, k])
    elif kind == PLANT and s.obj_timer[i, k] > 300:
        tex += 1
    return tex


@perenv.rule
def noise_hash(key: np.uint32, p: np.uint32) -> np.uint32:
    """Pixel ``p``'s hash of the night's key (C. Wellons' ``lowbias32`` of ``key ^ p``): 32
    bits whose low 16 make the pixel's noise. 32-bit: the compiled loop over a row's
    pixels does eight or sixteen at once."""
    h = np.uint32(key ^ p)
    h = np.uint32((h ^ (h >> _S16)) * _LB1)  # (compiled, uint32 arithmetic is done in 64
    h = np.uint32((h ^ (h >> _S15)) * _LB2)  # bits: each product is cut back to 32)
    return np.uint32(h ^ (h >> _S16))


@perenv.rule(inline=False)
def light_rows(obs: np.ndarray, d: float, key: np.uint64, noisy: bool, sleeping: bool,
               vig: np.ndarray) -> None:
    """The formula of the module docstring over the world's 63 x 49 pixels of ``obs``, in
    place (unlit pixels in, lit out): :func:`light_row` on each row, then (asleep)
    :func:`sleep_row`."""
    amount = 2 * (0.5 - d) if noisy else 0.0
    flat = obs.reshape(-1)
    k32 = np.uint32((key ^ (key >> _S32)) & _LOW32)
    for y in range(_WORLD_PX_H):
        light_row(flat, y, d, amount, k32, vig)
        if sleeping:
            sleep_row(flat, y)


@perenv.rule
def fifth(x: np.uint32) -> np.uint32:
    """``x // 5`` for ``0 <= x < 81920``, as a product and a shift: numba computes uint32
    arithmetic in 64 bits, and a 64-bit division has no vector instruction (the compiled
    :func:`light_row` divided pixel by pixel, a third of its time)."""
    return (x * _FIFTH_MUL) >> _FIFTH_SHIFT


@perenv.rule
def light_row(flat: np.ndarray, y: int, d: float, amount: float, k32: np.uint32,
              vig: np.ndarray) -> None:
    """Row ``y`` of the world's pixels lit (``amount`` 0: no noise; the same values as
    without it, as ``m`` is then 0). Unsigned integers, one flat index, no branch: the
    loop compiles to vector instructions, eight pixels at a time. It runs over the row's
    64 pixels, the black border's too (``vig``'s column 63 is 0; :func:`observe_pixels`
    blacks the border after the light), so that the compiled loop is whole vectors, with
    no 31-pixel remainder done one by one."""
    first = y * SIZE * 3
    for x in range(SIZE):
        at = first + x * 3
        c0 = np.float64(flat[at])
        c1 = np.float64(flat[at + 1])
        c2 = np.float64(flat[at + 2])
        h = noise_hash(k32, np.uint32(y * _WORLD_PX_W + x))
        n = 32.0 + 95.0 * ((np.float64(h & _LANE32) + 0.5) * (1.0 / 65536.0))
        m = amount * vig[y, x]
        t0 = np.uint32((1 - m) * c0 + m * n)
        t1 = np.uint32((1 - m) * c1 + m * n)
        t2 = np.uint32((1 - m) * c2 + m * n)
        grey = (t0 * _R + t1 * _G + t2 * _B + _HALF) >> _S16
        e0 = fifth(_3 * grey + _2 * t0)
        e1 = fifth(_3 * grey + _2 * t1)
        e2 = fifth(_3 * grey + _2 * t2)
        flat[at] = np.uint32(d * c0 + (1 - d) * ((1 - 0.5) * np.float64(e0) + _TINT0))
        flat[at + 1] = np.uint32(d * c1 + (1 - d) * ((1 - 0.5) * np.float64(e1) + _TINT1))
        flat[at + 2] = np.uint32(d * c2 + (1 - d) * ((1 - 0.5) * np.float64(e2) + _TINT2))


@perenv.rule
def sleep_row(flat: np.ndarray, y: int) -> None:
    """Row ``y`` of the world's lit pixels greyed and tinted (``LocalView._sleep``)."""
    first = y * SIZE * 3
    for x in range(SIZE):  # (the border too: see light_row)
        at = first + x * 3
        grey = (np.uint32(flat[at]) * _R + np.uint32(flat[at + 1]) * _G
                + np.uint32(flat[at + 2]) * _B + _HALF) >> _S16
        flat[at] = np.uint32((1 - 0.5) * np.float64(grey) + _SLEEP0)
        flat[at + 1] = np.uint32((1 - 0.5) * np.float64(grey) + _SLEEP1)
        flat[at + 2] = np.uint32((1 - 0.5) * np.float64(grey) + _SLEEP2)


@perenv.rule
def copy_tile(obs: np.ndarray, oy: int, ox: int, tiles: np.ndarray, t: int) -> None:
    """Picture ``t`` of ``tiles`` (pictures x 7 x 7 x 3) into ``obs`` at pixel (oy, ox), byte
    by byte. (Compiled, a slice assignment's shape check, or a view of the picture, would be
    counted by numba's reference counting: about a third of a day image's time, for its 81
    views.)"""
    for ty in range(UNIT):
        for tx in range(UNIT):
            for ch in range(3):
                obs[oy + ty, ox + tx, ch] = tiles[t, ty, tx, ch]


@perenv.rule(inline=False)
def observe_pixels(p: Any, s: Any, i: int, obs: np.ndarray) -> None:
    """``Env.render()`` of row ``i`` into ``obs`` (64, 64, 3)."""
    step = s.step[i]
    d = daylight(step)
    sleeping = s.sleeping[i]
    level = p.day_level[step] if 0 <= step <= LENGTH else -1
    by_table = level >= 0
    # each table as a list of pictures: (material, object) pairs by day level and sleep,
    # items by count
    per_level = p.tiles.shape[0] * p.tiles.shape[1]
    tiles = p.day_tiles.reshape(-1, UNIT, UNIT, 3) if by_table else p.tiles.reshape(
        -1, UNIT, UNIT, 3)
    first = (2 * level + np.int64(sleeping)) * per_level if by_table else 0
    mat, occ = s.mat[i], s.occ[i]
    px, py = np.int64(s.player_x[i]), np.int64(s.player_y[i])
    for gy in range(_VH):
        for gx in range(_VW):
            x, y = px + gx - _OFFSET_X, py + gy - _OFFSET_Y
            if 0 <= x < AREA and 0 <= y < AREA:
                m = np.int64(mat[x, y])
                who = occ[x, y]  # (a call that takes s costs more than a cell's
                o = object_texture(s, i, who) if who != 0 else 0  # copy: only where needed)
            else:
                m = OUTSIDE
                o = 0
            copy_tile(obs, gy * UNIT, gx * UNIT, tiles, first + m * p.tiles.shape[1] + o)
    if not by_table:
        light_rows(obs, d, s.noise_key[i], d < 0.5 and p.night_noise, sleeping, p.vignette)
    draw_inventory(obs, p.item_tiles.reshape(-1, UNIT, UNIT, 3), p.item_tiles.shape[1],
                   s.inventory[i])
    black_border(obs)


@perenv.rule
def draw_inventory(obs: np.ndarray, items: np.ndarray, counts: int,
                   inventory: np.ndarray) -> None:
    """The two rows under the world: each item's picture at its count, then two blanks."""
    for k in range(len(ITEMS)):
        copy_tile(obs, _WORLD_PX_H + (k // _VW) * UNIT, (k % _VW) * UNIT, items,
                  k * counts + inventory[k])
    for k in range(len(ITEMS), 2 * _VW):  # the two cells after the last item
        copy_tile(obs, _WORLD_PX_H + (k // _VW) * UNIT, (k % _VW) * UNIT, items, 0)


@perenv.rule
def black_border(obs: np.ndarray) -> None:
    """The last row and column, which crafter leaves black."""
    for x in range(SIZE):
        for ch in range(3):
            obs[SIZE - 1, x, ch] = 0
            obs[x, SIZE - 1, ch] = 0


# ----------------------------------------------------------------------------- symbolic
_MAT_CHANNELS = len(MATERIALS) - 1  # water .. furnace (none: no channel)
_OBJ_CHANNELS = 6  # cow, zombie, skeleton, arrow, plant, ripe plant
CELL_CHANNELS = _MAT_CHANNELS + _OBJ_CHANNELS
_VIEW_SIZE = _VW * _VH * CELL_CHANNELS
SYMBOLIC_SIZE = _VIEW_SIZE + len(ITEMS) + 4 + 2


def symbolic_layout() -> list[tuple[str, int, int]]:
    """The symbolic observation's parts as ``(name, start, stop)``."""
    names = [("view", 0, _VIEW_SIZE)]
    at = _VIEW_SIZE
    for name, size in (("inventory", len(ITEMS)), ("facing", 4), ("daylight", 1),
                       ("sleeping", 1)):
        names.append((name, at, at + size))
        at += size
    return names


@perenv.rule(inline=False)
def observe_symbolic(p: Any, s: Any, i: int, obs: np.ndarray) -> None:
    """The symbolic observation of row ``i`` (float32, :data:`SYMBOLIC_SIZE`): the 9 x 7
    cells of the image's world part, row by row (``(7, 9, 18)`` reshaped), each a one-hot
    of its material (water .. furnace, 12 channels; none outside the world) and of its
    object (cow, zombie, skeleton, arrow, plant, ripe plant; none for the player, who is
    always in cell (4, 3)); then the inventory / 9 (data.yaml's order, vitals first), the
    facing one-hot (left, right, up, down), the daylight and 1 while asleep."""
    for j in range(SYMBOLIC_SIZE):
        obs[j] = 0
    px, py = np.int64(s.player_x[i]), np.int64(s.player_y[i])
    for gy in range(_VH):
        for gx in range(_VW):
            x, y = px + gx - _OFFSET_X, py + gy - _OFFSET_Y
            if 0 <= x < AREA and 0 <= y < AREA:
                at = (gy * _VW + gx) * CELL_CHANNELS
                m = np.int64(s.mat[i, x, y])
                if m > 0:
                    obs[at + m - 1] = 1
                who = np.int64(s.occ[i, x, y])
                if who >= 2:
                    k = who - 2
                    kind = np.int64(s.kind[i, k])
                    ch = kind - 1
                    if kind == PLANT and s.obj_timer[i, k] > 300:
                        ch += 1
                    obs[at + _MAT_CHANNELS + ch] = 1
    at = _VIEW_SIZE
    for k in range(len(ITEMS)):
        obs[at + k] = s.inventory[i, k] / 9
    at += len(ITEMS)
    obs[at + np.int64(s.facing[i])] = 1
    obs[at + 4] = daylight(s.step[i])
    obs[at + 5] = 1 if s.sleeping[i] else 0



def observe(p: Any, s: Any, i: int, obs: np.ndarray) -> None:
    """Row ``i``'s observation: :func:`observe_pixels` into an image ``(64, 64, 3)``,
    :func:`observe_symbolic` into a vector. Compiled, the choice is made by the type of
    ``obs`` (its number of dimensions) when the loop compiles, so each class's loop holds
    only the kernel its observations need."""
    if obs.ndim == 3:
        observe_pixels(p, s, i, obs)
    else:
        observe_symbolic(p, s, i, obs)


def _compile_observe() -> None:
    from numba.extending import overload

    # Not inline="always": numba 0.68.1's inlining of overloads and register_jitable
    # functions into the loop lost every store of reset_env in the same loop (a
    # reproducer of 30 lines in docs/crafter.md, "How the kernels are built"). A call
    # per observation costs nothing beside the image's work.
    @overload(observe)
    def _observe(p, s, i, obs):  # type: ignore[no-untyped-def]
        if obs.ndim == 3:
            return lambda p, s, i, obs: observe_pixels(p, s, i, obs)
        return lambda p, s, i, obs: observe_symbolic(p, s, i, obs)


if perenv.numba_available():
    _compile_observe()
