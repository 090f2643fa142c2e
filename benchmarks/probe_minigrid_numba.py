"""A probe, not a shipped path: MiniGrid's per-env ``step_env`` and ``observe_partial``
compiled with ``numba.njit`` into one loop over 4096 DoorKey-8x8 envs (no resets, no
base-class work), CPU ns per env-step. Run from the repository root:

    PYTHONPATH=. python benchmarks/probe_minigrid_numba.py

Replaced by the per-env kernel base class's compiled loop once the envs move onto it.
"""

from __future__ import annotations

import time
from collections import namedtuple

import numba
import numpy as np

from batchenv.envs.minigrid import BatchDoorKey, common


def main() -> None:
    env = BatchDoorKey(4096, size=8)
    env.reset(seed=0)  # before the helpers are swapped for compiled ones (reset is Python)
    for name in ("can_overlap", "can_pickup", "see_behind", "put"):
        setattr(common, name, numba.njit(getattr(common, name)))
    step = numba.njit(common.step_env)
    view = numba.njit(common.observe_partial)
    st = env.state
    fields = ["grid", "contains", "carry", "agent_x", "agent_y", "agent_dir", "step_count"]
    s = namedtuple("S", fields)(*(getattr(st, f) for f in fields))

    @numba.njit
    def loop(p, s, actions, out, rew, term):  # type: ignore[no-untyped-def]
        for i in range(actions.shape[0]):
            r, t = step(p, s, i, actions[i])
            rew[i] = r
            term[i] = t
            view(p, s, i, out[i])

    n = 4096
    out = np.zeros((n, 7, 7, 3), np.uint8)
    rew, term = np.zeros(n), np.zeros(n, bool)
    actions = np.random.default_rng(0).integers(0, 3, (50, n))
    loop(env.kernel_params, s, actions[0], out, rew, term)
    t = time.process_time()
    for a in actions:
        loop(env.kernel_params, s, a, out, rew, term)
    print(f"compiled step+observe: {(time.process_time() - t) / actions.size * 1e9:.0f} "
          f"ns per env-step")


if __name__ == "__main__":
    main()
