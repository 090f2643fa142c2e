"""The steppers of ``python -m batchenv bench pong``: BatchPong and its baselines, each a
function ``run(t)`` making one timed call of ``step`` (one call steps every env of a batch,
or one game of a scalar baseline). Actions are drawn beforehand (16 batches, cycled), so
the figures time the env, not the action sampling. The full comparison is the benchmark
suite (``python -m pytest benchmarks --benchmark-only``, docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["ale_available", "batch_stepper", "loop_stepper", "plain_games", "ale_stepper"]


Stepper = Callable[[int], None]  # step(t): one timed call; t counts calls


def batch_stepper(num_envs: int, **kwargs: Any) -> tuple[Any, Stepper]:
    """``BatchPong(num_envs, **kwargs)``, reset with seed 0, and a stepper cycling 16
    batches of random actions drawn beforehand."""
    from batchenv import BatchPong

    env = BatchPong(num_envs, **kwargs)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 3, env.action_space.shape) for _ in range(16)]
    step = env.step

    def run(t: int) -> None:
        step(actions[t & 15])

    return env, run


def loop_stepper(games: list[Any], n_actions: int = 3) -> Stepper:
    """A stepper for scalar ``games`` (Gymnasium-style ``step(action)``), stepped one after
    the other in a Python loop with the same random action; one game is called directly,
    with no loop around it (the baseline the issues define: one game stepped in a loop)."""
    actions = np.random.default_rng(0).integers(0, n_actions, 4096).tolist()
    if len(games) == 1:
        step = games[0].step

        def run(t: int) -> None:
            step(actions[t & 4095])

        return run
    steps = [g.step for g in games]

    def run_all(t: int) -> None:
        a = actions[t & 4095]
        for step in steps:
            step(a)

    return run_all


def plain_games(num_games: int = 1) -> list[Any]:
    """:class:`~batchenv.reference.PlainPong` games (plain floats), seeds 0, 1, ..."""
    from batchenv.reference import PlainPong

    return [PlainPong(seed=i) for i in range(num_games)]


def ale_stepper(num_games: int = 1, env_id: str = "ALE/Pong-v5",
                **kwargs: Any) -> tuple[list[Any], Stepper]:
    """``num_games`` envs of ``gymnasium.make(env_id)`` (ale-py, its defaults: RGB frames,
    frameskip 4, sticky actions 0.25) in a Python loop, each reset when its episode ends."""
    import ale_py
    import gymnasium as gym

    gym.register_envs(ale_py)
    envs = [gym.make(env_id, **kwargs) for _ in range(num_games)]
    for i, e in enumerate(envs):
        e.reset(seed=i)
    n_actions = int(envs[0].action_space.n)  # type: ignore[attr-defined]  # Discrete
    actions = np.random.default_rng(0).integers(0, n_actions, 4096).tolist()

    def run(t: int) -> None:
        a = actions[t & 4095]
        for e in envs:
            _, _, terminated, truncated, _ = e.step(a)
            if terminated or truncated:
                e.reset()

    return envs, run


def ale_available() -> bool:
    try:
        import ale_py  # noqa: F401
    except ImportError:
        return False
    return True


