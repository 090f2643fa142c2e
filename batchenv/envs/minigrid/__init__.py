"""MiniGrid (Farama's ``minigrid`` 3.x), batched: one module per family, the shared objects,
rules and views in ``common.py``, the env glue in ``base.py``. See ``docs/minigrid.md``."""

from batchenv.envs.minigrid.base import BatchMiniGrid
from batchenv.envs.minigrid.crossing import BatchCrossing
from batchenv.envs.minigrid.doorkey import BatchDoorKey
from batchenv.envs.minigrid.dynamicobstacles import BatchDynamicObstacles
from batchenv.envs.minigrid.empty import BatchEmpty
from batchenv.envs.minigrid.fourrooms import BatchFourRooms
from batchenv.envs.minigrid.keycorridor import BatchKeyCorridor
from batchenv.envs.minigrid.lavagap import BatchLavaGap
from batchenv.envs.minigrid.multiroom import BatchMultiRoom
from batchenv.envs.minigrid.unlock import (
    BatchBlockedUnlockPickup,
    BatchUnlock,
    BatchUnlockPickup,
)

__all__ = ["BatchBlockedUnlockPickup", "BatchCrossing", "BatchDoorKey", "BatchDynamicObstacles",
           "BatchEmpty", "BatchFourRooms", "BatchKeyCorridor", "BatchLavaGap", "BatchMiniGrid",
           "BatchMultiRoom", "BatchUnlock", "BatchUnlockPickup"]
