"""Regenerate the example frames of docs/pong.md: ``python docs/img/make_pong_images.py``.

Writes, next to this file: pong_rgb.png (one ``rgb_array`` frame), pong_tiled.png
(``render_tiled`` of 16 envs), pong_obs.png (the three observation types of one game, and an
ALE Pong frame reduced to 84x84 grayscale when ale-py is installed). Needs Pillow.
"""

from __future__ import annotations

import os

import numpy as np
from PIL import Image

from batchenv import BatchPong

HERE = os.path.dirname(os.path.abspath(__file__))


def upscale(img: np.ndarray, k: int) -> np.ndarray:
    return img.repeat(k, axis=0).repeat(k, axis=1)


def label(img: np.ndarray, pad: int = 6) -> np.ndarray:
    out = np.full((img.shape[0] + 2 * pad, img.shape[1] + 2 * pad, 3), 255, np.uint8)
    out[pad:-pad, pad:-pad] = img if img.ndim == 3 else img[..., None]
    return out


def main() -> None:
    env = BatchPong(16, render_mode="rgb_array")
    env.reset(seed=7)
    rng = np.random.default_rng(0)
    for _ in range(60):
        env.step(rng.integers(0, 3, 16))
    Image.fromarray(env.render()[0]).save(os.path.join(HERE, "pong_rgb.png"))
    Image.fromarray(env.render_tiled(16, cols=4)).save(os.path.join(HERE, "pong_tiled.png"))

    state = env.get_state()[:1]
    panels = []
    tiles_env = BatchPong(1, obs_type="tiles")
    tiles_env.reset(seed=0)
    tiles = tiles_env.set_state(state)[0]
    palette = np.array([[0, 0, 0], [150, 150, 150], [255, 255, 255]], np.uint8)
    panels.append(upscale(palette[tiles], 8))  # 240 x 320
    pixels_env = BatchPong(1, obs_type="pixels")
    pixels_env.reset(seed=0)
    pixels = pixels_env.set_state(state)[0]
    panels.append(np.repeat(upscale(pixels, 3)[..., None], 3, axis=2))  # 252 x 252
    try:
        import ale_py
        import gymnasium as gym

        gym.register_envs(ale_py)
        ale = gym.make("ALE/Pong-v5", obs_type="grayscale")
        ale.reset(seed=0)
        for _ in range(60):
            frame = ale.step(0)[0]
        small = np.asarray(Image.fromarray(frame).resize((84, 84), Image.BILINEAR))
        panels.append(np.repeat(upscale(small, 3)[..., None], 3, axis=2))
    except ImportError:
        pass
    h = max(p.shape[0] for p in panels)
    row = [label(np.pad(p, ((0, h - p.shape[0]), (0, 0), (0, 0)), constant_values=255))
           for p in panels]
    Image.fromarray(np.concatenate(row, axis=1)).save(os.path.join(HERE, "pong_obs.png"))


if __name__ == "__main__":
    main()
