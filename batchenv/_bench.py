"""Timing helpers for BatchPong and its baselines (used by ``python -m batchenv bench pong``,
``benchmarks/bench_pong.py`` and ``benchmarks/plot_scaling.py``).

Every figure is the median over ``repeats`` timed blocks of seconds per call of ``step``
(one call steps every env of a batch, or one game of a scalar baseline); a block lasts about
``block`` seconds, after a warm-up. Actions are drawn beforehand (16 batches, cycled), so
the figures time the env, not the action sampling.
"""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["time_calls", "time_batch", "time_plain", "time_reference", "time_ale",
           "memory_per_env", "ale_available", "batch_stepper", "loop_stepper", "plain_games",
           "reference_games", "ale_stepper"]


def time_calls(step: Callable[[int], Any], repeats: int = 5, block: float = 0.2,
               warmup: int = 3) -> float:
    """Median seconds per call of ``step(t)`` (``t`` counts calls) over ``repeats`` blocks."""
    t = 0
    for _ in range(warmup):
        step(t)
        t += 1
    # calibrate the block length
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < block / 4 or calls < 2:
        step(t)
        t += 1
        calls += 1
    per_block = max(2, int(calls * block / (time.perf_counter() - start)))
    results = []
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(per_block):
                step(t)
                t += 1
            results.append((time.perf_counter() - start) / per_block)
    finally:
        if gc_was:
            gc.enable()
    return statistics.median(results)


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


def reference_games(num_games: int = 1) -> list[Any]:
    """:class:`~batchenv.reference.ReferencePong` games (numpy float32 scalars, BatchPong's
    exact arithmetic; state observation), reset with seeds 0, 1, ..."""
    from batchenv.reference import ReferencePong

    games = [ReferencePong() for _ in range(num_games)]
    for i, g in enumerate(games):
        g.reset(seed=i)
    return games


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


def time_batch(num_envs: int, repeats: int = 5, block: float = 0.2, **kwargs: Any) -> float:
    """Seconds per ``step`` of ``BatchPong(num_envs, **kwargs)`` with random actions
    (NEXT_STEP auto-reset and validation on, unless ``kwargs`` say otherwise)."""
    env, run = batch_stepper(num_envs, **kwargs)
    try:
        return time_calls(run, repeats, block)
    finally:
        env.close()


def time_plain(num_games: int = 1, repeats: int = 5, block: float = 0.2) -> float:
    """Seconds per ``step`` of :class:`~batchenv.reference.PlainPong` (plain floats), with
    ``num_games`` games stepped one after the other in a Python loop (per game-step)."""
    return time_calls(loop_stepper(plain_games(num_games)), repeats, block) / num_games


def time_reference(num_games: int = 1, repeats: int = 5, block: float = 0.2) -> float:
    """Seconds per game-step of :class:`~batchenv.reference.ReferencePong` in a Python
    loop."""
    return time_calls(loop_stepper(reference_games(num_games)), repeats, block) / num_games


def ale_available() -> bool:
    try:
        import ale_py  # noqa: F401
    except ImportError:
        return False
    return True


def time_ale(num_games: int = 1, repeats: int = 5, block: float = 0.2,
             env_id: str = "ALE/Pong-v5", **kwargs: Any) -> float:
    """Seconds per game-step of :func:`ale_stepper`'s envs."""
    envs, run = ale_stepper(num_games, env_id, **kwargs)
    try:
        return time_calls(run, repeats, block) / num_games
    finally:
        for e in envs:
            e.close()


def memory_per_env(num_envs: int = 65536, **kwargs: Any) -> tuple[float, float]:
    """Bytes per env held by ``BatchPong(num_envs, **kwargs)`` after ``reset`` and one
    ``step`` (its state and buffers), and the peak per env during that step (temporaries
    included), measured with :mod:`tracemalloc`."""
    from batchenv import BatchPong

    probe = BatchPong(2, **kwargs)
    action = np.zeros(probe.action_space.shape[1:], dtype=np.int64)  # type: ignore[index]
    actions = np.broadcast_to(action, (num_envs, *action.shape)).copy()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        env = BatchPong(num_envs, **kwargs)
        env.reset(seed=0)
        env.step(actions)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        env.step(actions)
        peak = tracemalloc.get_traced_memory()[1] - base + held
    finally:
        tracemalloc.stop()
    return held / num_envs, peak / num_envs
