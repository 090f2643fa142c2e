"""Crafter (Hafner, 2021; the ``crafter`` package 1.8.3), batched: the env (:mod:`.env`),
crafter's data tables (:mod:`.data`), the world's bookkeeping (:mod:`.world`), the world
generator (:mod:`.worldgen`) and its noise (:mod:`.noise`), the rules (:mod:`.rules`) and
the observations (:mod:`.render`). See ``docs/crafter.md``."""

from batchenv.envs.crafter.data import ACHIEVEMENTS, ACTIONS, ITEMS, MATERIALS
from batchenv.envs.crafter.env import OBS_TYPES, BatchCrafter, CrafterState

__all__ = ["BatchCrafter", "CrafterState", "OBS_TYPES", "ACHIEVEMENTS", "ACTIONS", "ITEMS",
           "MATERIALS"]
