"""Side-by-side stepping of BatchPong and its scalar reference, asserting exact agreement
(used by tests/test_pong_reference.py; a test helper, not part of the package)."""

from __future__ import annotations

import numpy as np

from batchenv import BatchPong
from batchenv.reference import ReferencePong

STATE_FIELDS = ("ball_x", "ball_y", "ball_vx", "ball_vy", "left_y", "right_y", "score_left",
                "score_right", "action_left", "action_right", "elapsed_steps", "rng_key",
                "rng_counter", "awaiting_reset")


def make_pair(n: int, seed: int, **kwargs) -> tuple[BatchPong, list[ReferencePong]]:
    """A batch reset with ``seed`` and one reference per row, given the row's state."""
    env = BatchPong(n, **kwargs)
    env.reset(seed=seed)
    ref_kwargs = {k: v for k, v in kwargs.items() if k not in ("copy", "validate",
                                                                "render_mode")}
    refs = [ReferencePong(**ref_kwargs) for _ in range(n)]
    for ref, rec in zip(refs, env.get_state()):
        ref.set_record(rec)
    return env, refs


def assert_same_state(env: BatchPong, refs: list[ReferencePong], where: str = "") -> None:
    rec = env.get_state()
    ref_recs = [r.record() for r in refs]
    for name in STATE_FIELDS:
        want = np.array([d[name] for d in ref_recs], dtype=rec.dtype[name])
        got = rec[name]
        if not np.array_equal(got, want):
            bad = np.flatnonzero(got != want)[:5]
            raise AssertionError(f"{where}: field {name} differs at rows {bad.tolist()}: "
                                 f"batch {got[bad].tolist()} reference {want[bad].tolist()}")


def step_pair(env: BatchPong, refs: list[ReferencePong], action: np.ndarray,
              where: str = "") -> dict:
    """Step both with ``action``; assert obs, rewards, flags and final obs agree exactly.
    Returns counters of what happened (points, ends, truncations)."""
    obs, reward, terminated, truncated, info = env.step(action)
    outs = [ref.step(a) for ref, a in zip(refs, action)]
    want_obs = np.stack([o[0] for o in outs])
    assert obs.dtype == want_obs.dtype and obs.shape == want_obs.shape
    if not np.array_equal(obs, want_obs):
        bad = np.flatnonzero((obs != want_obs).reshape(len(obs), -1).any(axis=1))[:5]
        raise AssertionError(f"{where}: observations differ at rows {bad.tolist()}")
    np.testing.assert_array_equal(reward, [o[1] for o in outs], err_msg=where)
    np.testing.assert_array_equal(terminated, [o[2] for o in outs], err_msg=where)
    np.testing.assert_array_equal(truncated, [o[3] for o in outs], err_msg=where)
    finals = [i for i, o in enumerate(outs) if o[4] is not None]
    if finals or "final_obs" in info:
        assert list(np.flatnonzero(info["_final_obs"])) == finals, where
        for i in finals:
            np.testing.assert_array_equal(info["final_obs"][i], outs[i][4], err_msg=where)
    return {"points": int(np.count_nonzero(reward != 0)), "ends": int(terminated.sum()),
            "truncations": int(truncated.sum())}


def run_pair(n: int, steps: int, seed: int, check_state_every: int = 1, **kwargs) -> dict:
    """Random actions for ``steps`` steps; the state is compared every
    ``check_state_every`` steps. Returns the totals of :func:`step_pair`."""
    env, refs = make_pair(n, seed, **kwargs)
    assert_same_state(env, refs, "after reset")
    rng = np.random.default_rng(seed)
    totals = {"points": 0, "ends": 0, "truncations": 0}
    for t in range(steps):
        action = rng.integers(0, 3, env.action_space.shape)
        for k, v in step_pair(env, refs, action, f"step {t}").items():
            totals[k] += v
        if t % check_state_every == 0:
            assert_same_state(env, refs, f"step {t}")
    assert_same_state(env, refs, "end")
    return totals
