"""docs/integrations.md's claim about ids in worker processes: a fresh interpreter that has
not imported batchenv (a spawned worker, a Ray actor) knows the prefixed id
``"batchenv:batchenv/CartPole-v1"`` and not the bare one, though batchenv is installed
(Gymnasium loads no env plugins)."""

from __future__ import annotations

import subprocess
import sys

FRESH = """
import gymnasium as gym
try:
    gym.make_vec({id!r}, num_envs=3, vectorization_mode="vector_entry_point")
except gym.error.NamespaceNotFound:
    print("NamespaceNotFound")
else:
    print("made")
"""


def fresh(env_id: str) -> str:
    out = subprocess.run([sys.executable, "-c", FRESH.format(id=env_id)], check=True,
                         capture_output=True, text=True, timeout=120)
    return out.stdout.strip().splitlines()[-1]


def test_a_fresh_process_knows_the_prefixed_id_only():
    assert fresh("batchenv/CartPole-v1") == "NamespaceNotFound"
    assert fresh("batchenv:batchenv/CartPole-v1") == "made"
