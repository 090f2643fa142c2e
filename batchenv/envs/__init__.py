"""The native batched environments, one module each."""

from batchenv.envs.acrobot import AcrobotParams, BatchAcrobot
from batchenv.envs.cartpole import BatchCartPole, CartPoleParams
from batchenv.envs.continuous_mountain_car import (
    BatchMountainCarContinuous,
    MountainCarContinuousParams,
)
from batchenv.envs.minatar import (
    BatchAsterix,
    BatchBreakout,
    BatchFreeway,
    BatchSeaquest,
    BatchSpaceInvaders,
)
from batchenv.envs.mountain_car import BatchMountainCar, MountainCarParams
from batchenv.envs.pendulum import BatchPendulum, PendulumParams
from batchenv.envs.pong import BatchPong, PongParams

__all__ = [
    "AcrobotParams",
    "BatchAcrobot",
    "BatchAsterix",
    "BatchBreakout",
    "BatchCartPole",
    "BatchFreeway",
    "BatchMountainCar",
    "BatchMountainCarContinuous",
    "BatchPendulum",
    "BatchPong",
    "BatchSeaquest",
    "BatchSpaceInvaders",
    "CartPoleParams",
    "MountainCarContinuousParams",
    "MountainCarParams",
    "PendulumParams",
    "PongParams",
]
