"""Adapters from batchenv's Gymnasium vector envs to the APIs of RL libraries.

Each adapter imports its library only when called, so ``batchenv`` itself does not depend on
any of them::

    from batchenv.adapters import to_sb3
    venv = to_sb3(batchenv.BatchCartPole(num_envs=16))   # a stable_baselines3 VecEnv
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from batchenv.adapters.sb3 import SB3VecEnv

__all__ = ["to_sb3"]


def to_sb3(vector_env: Any, *, add_channel_axis: bool = True) -> SB3VecEnv:
    """Wrap a Gymnasium ``VectorEnv`` (any batchenv env, or a Gymnasium vector env) as a
    Stable-Baselines3 ``VecEnv``; see :class:`batchenv.adapters.sb3.SB3VecEnv`.
    ``add_channel_axis``: give SB3 ``(H, W)`` grayscale images as ``(H, W, 1)``, which its
    image pipeline needs.

    Needs ``stable-baselines3`` (``pip install batchenv[sb3]``)."""
    from batchenv.adapters.sb3 import SB3VecEnv

    return SB3VecEnv(vector_env, add_channel_axis=add_channel_axis)
