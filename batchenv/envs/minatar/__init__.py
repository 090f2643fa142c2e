"""MinAtar's games (Young & Tian, 2019; the ``minatar`` package 1.0.15), batched: one module
per game, its rules written once as per-env kernels, the shared pieces in ``_base.py``. See
``docs/minatar.md``."""

from batchenv.envs.minatar.asterix import BatchAsterix
from batchenv.envs.minatar.breakout import BatchBreakout
from batchenv.envs.minatar.freeway import BatchFreeway
from batchenv.envs.minatar.seaquest import BatchSeaquest
from batchenv.envs.minatar.space_invaders import BatchSpaceInvaders

__all__ = ["BatchAsterix", "BatchBreakout", "BatchFreeway", "BatchSeaquest",
           "BatchSpaceInvaders"]
