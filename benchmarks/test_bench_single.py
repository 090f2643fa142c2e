"""The single-env routes: batchenv's ids beside the env each mirrors, as the client libraries
build them from an id.

    python -m pytest benchmarks/test_bench_single.py --benchmark-only
    python -m pytest benchmarks/test_bench_single.py --benchmark-only \
        --benchmark-timer time.process_time          # CPU time: steadier on a busy host

Groups ``single <id> <route> n=N``, each ``batchenv/<id>`` against its peer (Gymnasium's
own id; for MinAtar, ``minatar``'s Gymnasium env ``MinAtar/<game>-v1``) through the same
route, so that both carry the same wrappers:

* ``gym.make`` (n=1): one env (``SingleEnv``, a batch of one, for ours), stepped with
  random actions and reset at each episode's end (every classic id, one MinAtar game);
* ``make_vec sync`` and ``make_vec async`` (n=4): ``gymnasium.make_vec(id, 4,
  vectorization_mode=...)``, Gymnasium's ``SyncVectorEnv`` / ``AsyncVectorEnv`` of four
  ``gymnasium.make`` copies (what RLlib's default, SB3's ``make_vec_env`` and TorchRL's
  ``GymEnv`` build), with their own auto-reset. The async workers' time is not this
  process's CPU time: time that route with the default wall clock.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest

import batchenv  # noqa: F401  (registers the batchenv/ ids)

CLASSIC = ["CartPole-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Acrobot-v1",
           "Pendulum-v1"]
MINATAR = "Breakout-v1"
VECTOR_ROUTES = ["sync", "async"]


def ids(name: str) -> tuple[str, str, str]:
    """(our id, the peer's id, the peer's label) of a classic id or a MinAtar game."""
    if name in CLASSIC:
        return f"batchenv/{name}", name, "Gymnasium"
    import minatar.gym

    minatar.gym.register_envs()
    return f"batchenv/MinAtar-{name}", f"MinAtar/{name}", "minatar"


def make(env_id: str, route: str, n: int) -> gym.Env | gym.vector.VectorEnv:
    with warnings.catch_warnings():  # the peers' deprecation notes
        warnings.simplefilter("ignore")
        if route == "gym.make":
            return gym.make(env_id)
        return gym.make_vec(env_id, num_envs=n, vectorization_mode=route)


def timed(measure, name: str, route: str, n: int, peer: bool) -> None:
    if name == MINATAR:
        pytest.importorskip("minatar", reason="the test extra: MinAtar 1.0.15")
    ours, theirs, who = ids(name)
    env = make(theirs if peer else ours, route, n)
    label = f"{who} {theirs}" if peer else f"batchenv {ours}"
    group = f"single {name} {route} n={n}"
    try:
        if route == "gym.make":
            env.action_space.seed(0)
            actions = [env.action_space.sample() for _ in range(64)]
            measure(measure.loop(env, actions), group=group, label=label, env_steps=1,
                    peer=peer)
        else:
            env.reset(seed=0)
            measure(measure.batch(env), group=group, label=label, env_steps=n, peer=peer)
    finally:
        env.close()


@pytest.mark.parametrize("peer", [False, True], ids=["batchenv", "peer"])
@pytest.mark.parametrize("name", [*CLASSIC, MINATAR])
def test_gym_make(measure, name, peer):
    timed(measure, name, "gym.make", 1, peer)


@pytest.mark.parametrize("peer", [False, True], ids=["batchenv", "peer"])
@pytest.mark.parametrize("route", VECTOR_ROUTES)
@pytest.mark.parametrize("name", ["CartPole-v1", MINATAR])
def test_make_vec(measure, name, route, peer):
    timed(measure, name, route, 4, peer)
