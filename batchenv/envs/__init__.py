"""The native batched environments, one folder per family, and their declarations.

Each id is declared once, here, with :func:`batchenv.registration.register`: the id list
(``batchenv.list_envs()``), ``batchenv.make``, ``gymnasium.make_vec``, the contract tests
and the generated docs pages all read these declarations (``docs/writing_envs.md``).
"""

from batchenv.envs.classic.acrobot import AcrobotParams, BatchAcrobot
from batchenv.envs.classic.cartpole import BatchCartPole, CartPoleParams
from batchenv.envs.classic.continuous_mountain_car import (
    BatchMountainCarContinuous,
    MountainCarContinuousParams,
)
from batchenv.envs.classic.mountain_car import BatchMountainCar, MountainCarParams
from batchenv.envs.classic.pendulum import BatchPendulum, PendulumParams
from batchenv.envs.crafter import BatchCrafter
from batchenv.envs.minatar import (
    BatchAsterix,
    BatchBreakout,
    BatchFreeway,
    BatchSeaquest,
    BatchSpaceInvaders,
)
from batchenv.envs.minigrid import (
    BatchBlockedUnlockPickup,
    BatchCrossing,
    BatchDoorKey,
    BatchDynamicObstacles,
    BatchEmpty,
    BatchFourRooms,
    BatchKeyCorridor,
    BatchLavaGap,
    BatchMultiRoom,
    BatchUnlock,
    BatchUnlockPickup,
)
from batchenv.envs.pong import BatchPong, PongParams
from batchenv.registration import register

register(BatchPong, "batchenv/Pong-v0")
register(BatchCartPole, "batchenv/CartPole-v1", gymnasium_id="CartPole-v1",
         docs_page="cartpole")
register(BatchMountainCar, "batchenv/MountainCar-v0", gymnasium_id="MountainCar-v0",
         docs_page="mountain_car")
register(BatchMountainCarContinuous, "batchenv/MountainCarContinuous-v0",
         gymnasium_id="MountainCarContinuous-v0", docs_page="mountain_car_continuous")
register(BatchAcrobot, "batchenv/Acrobot-v1", gymnasium_id="Acrobot-v1", docs_page="acrobot")
register(BatchPendulum, "batchenv/Pendulum-v1", gymnasium_id="Pendulum-v1",
         docs_page="pendulum")
# MinAtar: -v0 all 6 actions, -v1 MinAtar's minimal action set, as MinAtar's own Gymnasium
# ids MinAtar/<Game>-v0/-v1 (minatar/gym.py); no time limit. Their pages: docs/envs/generate.py
for _cls, _name in [(BatchAsterix, "Asterix"), (BatchBreakout, "Breakout"),
                    (BatchFreeway, "Freeway"), (BatchSeaquest, "Seaquest"),
                    (BatchSpaceInvaders, "SpaceInvaders")]:
    for _v in (0, 1):
        register(_cls, f"batchenv/MinAtar-{_name}-v{_v}", gymnasium_id=f"MinAtar/{_name}-v{_v}",
                 kwargs={"minimal_action_set": bool(_v)})
del _cls, _name, _v
# MiniGrid (minigrid 3.x): the ids minigrid registers, as MiniGrid-* and batchenv/MiniGrid-*
for _size in (5, 6, 8, 16):
    register(BatchEmpty, f"batchenv/MiniGrid-Empty-{_size}x{_size}-v0",
             gymnasium_id=f"MiniGrid-Empty-{_size}x{_size}-v0", kwargs={"size": _size},
             max_episode_steps=4 * _size * _size)
for _size in (5, 6):
    register(BatchEmpty, f"batchenv/MiniGrid-Empty-Random-{_size}x{_size}-v0",
             gymnasium_id=f"MiniGrid-Empty-Random-{_size}x{_size}-v0",
             kwargs={"size": _size, "random_start": True}, max_episode_steps=4 * _size * _size)
for _size in (5, 6, 8, 16):
    register(BatchDoorKey, f"batchenv/MiniGrid-DoorKey-{_size}x{_size}-v0",
             gymnasium_id=f"MiniGrid-DoorKey-{_size}x{_size}-v0", kwargs={"size": _size},
             max_episode_steps=10 * _size * _size)
register(BatchFourRooms, "batchenv/MiniGrid-FourRooms-v0", gymnasium_id="MiniGrid-FourRooms-v0",
         max_episode_steps=100)
for _size in (5, 6, 7):
    register(BatchLavaGap, f"batchenv/MiniGrid-LavaGapS{_size}-v0",
             gymnasium_id=f"MiniGrid-LavaGapS{_size}-v0", kwargs={"size": _size},
             max_episode_steps=4 * _size * _size)
for _size, _n in ((9, 1), (9, 2), (9, 3), (11, 5)):
    for _name, _obstacle in (("LavaCrossing", "lava"), ("SimpleCrossing", "wall")):
        register(BatchCrossing, f"batchenv/MiniGrid-{_name}S{_size}N{_n}-v0",
                 gymnasium_id=f"MiniGrid-{_name}S{_size}N{_n}-v0",
                 kwargs={"size": _size, "num_crossings": _n, "obstacle": _obstacle},
                 max_episode_steps=4 * _size * _size)
del _size, _n, _name, _obstacle
register(BatchUnlock, "batchenv/MiniGrid-Unlock-v0", gymnasium_id="MiniGrid-Unlock-v0",
         max_episode_steps=288)
register(BatchUnlockPickup, "batchenv/MiniGrid-UnlockPickup-v0",
         gymnasium_id="MiniGrid-UnlockPickup-v0", max_episode_steps=288)
register(BatchBlockedUnlockPickup, "batchenv/MiniGrid-BlockedUnlockPickup-v0",
         gymnasium_id="MiniGrid-BlockedUnlockPickup-v0", max_episode_steps=576)
for _name, _kw in (("N2-S4-v0", {"min_rooms": 2, "max_rooms": 2, "max_room_size": 4}),
                   ("N4-S5-v0", {"min_rooms": 6, "max_rooms": 6, "max_room_size": 5}),  # (sic)
                   ("N4-S5-v1", {"min_rooms": 4, "max_rooms": 4, "max_room_size": 5}),
                   ("N6-v0", {"min_rooms": 6, "max_rooms": 6})):
    register(BatchMultiRoom, f"batchenv/MiniGrid-MultiRoom-{_name}",
             gymnasium_id=f"MiniGrid-MultiRoom-{_name}", kwargs=_kw,
             max_episode_steps=20 * _kw["max_rooms"])
for _s, _r in ((3, 1), (3, 2), (3, 3), (4, 3), (5, 3), (6, 3)):
    register(BatchKeyCorridor, f"batchenv/MiniGrid-KeyCorridorS{_s}R{_r}-v0",
             gymnasium_id=f"MiniGrid-KeyCorridorS{_s}R{_r}-v0",
             kwargs={"room_size": _s, "num_rows": _r}, max_episode_steps=30 * _s * _s)
for _name, _size, _n, _random in (("5x5", 5, 2, False), ("Random-5x5", 5, 2, True),
                                  ("6x6", 6, 3, False), ("Random-6x6", 6, 3, True),
                                  ("8x8", 8, 4, False), ("16x16", 16, 8, False)):
    register(BatchDynamicObstacles, f"batchenv/MiniGrid-Dynamic-Obstacles-{_name}-v0",
             gymnasium_id=f"MiniGrid-Dynamic-Obstacles-{_name}-v0",
             kwargs={"size": _size, "n_obstacles": _n, "random_start": _random},
             max_episode_steps=4 * _size * _size)
del _name, _kw, _s, _r, _size, _n, _random
# Crafter (crafter 1.8.3): its own ids CrafterReward-v1 / CrafterNoReward-v1 (crafter
# registers them with the old `gym`, not Gymnasium); length 10,000. Page: generate.py
register(BatchCrafter, "batchenv/Crafter-v1", gymnasium_id="CrafterReward-v1")
register(BatchCrafter, "batchenv/CrafterNoReward-v1", gymnasium_id="CrafterNoReward-v1",
         kwargs={"reward": False})

__all__ = [
    "AcrobotParams",
    "BatchAcrobot",
    "BatchAsterix",
    "BatchBlockedUnlockPickup",
    "BatchBreakout",
    "BatchCartPole",
    "BatchCrafter",
    "BatchCrossing",
    "BatchDoorKey",
    "BatchDynamicObstacles",
    "BatchEmpty",
    "BatchFourRooms",
    "BatchKeyCorridor",
    "BatchLavaGap",
    "BatchFreeway",
    "BatchMountainCar",
    "BatchMountainCarContinuous",
    "BatchMultiRoom",
    "BatchPendulum",
    "BatchPong",
    "BatchSeaquest",
    "BatchSpaceInvaders",
    "BatchUnlock",
    "BatchUnlockPickup",
    "CartPoleParams",
    "MountainCarContinuousParams",
    "MountainCarParams",
    "PendulumParams",
    "PongParams",
]
