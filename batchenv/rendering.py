"""Rendering pieces every env family shares: laying frames out in one image."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from batchenv.core import StepBeforeResetError
from batchenv.state import take_rows

if TYPE_CHECKING:
    from batchenv.core import BatchEnv

__all__ = ["render_tiled", "tile_images"]


def render_tiled(env: BatchEnv, frames: Callable[[Any], np.ndarray], k: int | None = None,
                 cols: int | None = None, gap: int = 4) -> np.ndarray:
    """One RGB image of ``env``'s first ``k`` envs (default: all, at most 64), laid out in
    env order row by row on a grid of ``cols`` columns (default: about square), separated
    by ``gap`` black pixels. ``frames(s)`` draws the rows of a state ``(k, H, W, 3)``; only
    the first ``k`` rows are drawn. Works with any ``render_mode``."""
    env._check_open()
    if env._needs_reset:
        raise StepBeforeResetError("render_tiled() called before reset()")
    k = min(env.num_envs, 64) if k is None else int(k)
    if not 1 <= k <= env.num_envs:
        raise ValueError(f"k must be in [1, num_envs={env.num_envs}], got {k}")
    cols = int(np.ceil(np.sqrt(k))) if cols is None else int(cols)
    if cols < 1:
        raise ValueError(f"cols must be >= 1, got {cols}")
    return tile_images(frames(take_rows(env.state, np.arange(k))), cols, gap)


def tile_images(frames: np.ndarray, cols: int, gap: int = 2) -> np.ndarray:
    """Lay ``frames`` ``(k, H, W, C)`` out row by row on a grid of ``cols`` columns,
    ``gap`` pixels (value 0) between them: ``(rows*H + (rows-1)*gap, cols*W + (cols-1)*gap,
    C)``."""
    k, h, w, c = frames.shape
    cols = min(cols, k)
    rows = -(-k // cols)
    grid = np.zeros((rows, h + gap, cols, w + gap, c), dtype=frames.dtype)
    padded = np.zeros((rows * cols, h, w, c), dtype=frames.dtype)
    padded[:k] = frames
    grid[:, :h, :, :w] = padded.reshape(rows, cols, h, w, c).transpose(0, 2, 1, 3, 4)
    return grid.reshape(rows * (h + gap), cols * (w + gap), c)[:rows * (h + gap) - gap,
                                                               :cols * (w + gap) - gap]
