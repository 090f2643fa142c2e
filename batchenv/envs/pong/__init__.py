"""Pong, batched: the env (:mod:`.env`), its rules (:mod:`.rules`), the same rules for one
game as per-env kernels (:mod:`.per_env`) and its drawing (:mod:`.raster`).
``batchenv.envs.pong`` exports the env and every rule of :mod:`.rules`."""

from batchenv.envs.pong.env import CHANNEL_AXES, MODES, OBS_TYPES, BatchPong
from batchenv.envs.pong.raster import ansi_frames
from batchenv.envs.pong.rules import *  # noqa: F403
from batchenv.envs.pong.rules import __all__ as _rules
from batchenv.rendering import tile_images

__all__ = ["BatchPong", "MODES", "OBS_TYPES", "CHANNEL_AXES", "ansi_frames", "tile_images", *_rules]
