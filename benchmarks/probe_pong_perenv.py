"""Where BatchPong's per-env step goes, against a hand-written minimal compiled Pong loop.

    python benchmarks/probe_pong_perenv.py [--num-envs 4096]

BatchPong's defaults (cpu mode, frameskip 1, no sticky actions, state observation,
NEXT_STEP auto-reset, copies, validation). Timed by CPU time (``time.process_time``),
microseconds per call, medians of 7 blocks:

* the numpy kernels' ``env.step`` and the per-env kernels' ``env.step``;
* the per-env step's pieces: the action's validation, ``Runner.step``, and the compiled
  loop alone (its entry point called directly);
* ``hand``: the same step written by hand as one numba loop over plain arrays (the rules,
  the random serve, the time limit, the flags, auto-reset, the 6-float observation), checked
  equal to the per-env env's states and observations over 300 steps first;
* ``hand, rules only``: the loop without the base class's bookkeeping (no time limit, no
  auto-reset, no flags), to split the two.

docs/performance.md ("Per-env kernels: BatchPong against a loop written by hand") quotes it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import batchenv  # noqa: E402

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_ONE = np.uint64(1)


def micros(f: Callable[[], Any], calls: int = 300, blocks: int = 7) -> float:
    """CPU microseconds per call of ``f``: the median of ``blocks`` blocks of ``calls``."""
    times = []
    for _ in range(blocks):
        t = time.process_time()
        for _ in range(calls):
            f()
        times.append((time.process_time() - t) / calls * 1e6)
    return statistics.median(times)


@numba.njit(inline="always")
def _word(key, counter, i):  # type: ignore[no-untyped-def]
    c = counter[i]
    counter[i] = c + _ONE
    x = key[i] + c * _GOLDEN
    x = (x ^ (x >> _S30)) * _MIX1
    x = (x ^ (x >> _S27)) * _MIX2
    return x ^ (x >> _S31)


@numba.njit(inline="always")
def _serve(f, d, bx, by, bvx, bvy, key, counter, i):  # type: ignore[no-untyped-def]
    side = np.float64(_word(key, counter, i) >> _S11)
    row = np.float64(_word(key, counter, i) >> _S11)
    vy = np.float64(_word(key, counter, i) >> _S11)
    bx[i] = f[10]
    by[i] = row * d[0] + d[1]
    bvx[i] = np.copysign(d[3], side * 2.0**-53 + -0.5)
    bvy[i] = (vy * 2.0**-52 + -1.0) * d[2]


@numba.njit(inline="always")
def _clip(x, lo, hi):  # type: ignore[no-untyped-def]
    return min(max(x, lo), hi)


@numba.njit(inline="always")
def _rules(f, d, steps, ptw, bx, by, bvx, bvy, ly, ry, sl, sr, key, counter, i, a
           ):  # type: ignore[no-untyped-def]
    # f: paddle_min, paddle_max, cpu_speed, top, top2, left_plane, right_plane,
    # left_plane2, right_plane2, reach, serve_x, spin, max_vy  (float32)
    ly[i] = _clip(ly[i] + steps[a], f[0], f[1])
    r = ry[i]
    ry[i] = _clip(r + _clip(by[i] - r, -f[2], f[2]), f[0], f[1])
    bx[i] += bvx[i]
    by[i] += bvy[i]
    y = by[i]
    if y < 0:
        by[i] = -y
        bvy[i] = -bvy[i]
    elif y > f[3]:
        by[i] = f[4] - y
        bvy[i] = -bvy[i]
    x = bx[i]
    left = x < f[5]
    if not (left or x > f[6]):
        return 0.0, False
    offset = by[i] - (ly[i] if left else ry[i])
    if abs(offset) <= f[9]:
        bx[i] = (f[7] if left else f[8]) - x
        bvx[i] = -bvx[i]
        bvy[i] = _clip(offset * f[11] + bvy[i], -f[12], f[12])
        return 0.0, False
    if x > f[6]:
        sl[i] += 1
        reward = 1.0
    else:
        sr[i] += 1
        reward = -1.0
    over = max(sl[i], sr[i]) >= ptw
    _serve(f, d, bx, by, bvx, bvy, key, counter, i)
    return reward, over


@numba.njit(_nrt=False, nogil=True)
def hand(f, d, steps, ptw, centre, scale, offset, bx, by, bvx, bvy, ly, ry, sl, sr, al, ar,
         elapsed, key, counter, awaiting, action, reward, terminated, truncated, obs,
         max_steps, lo, hi):  # type: ignore[no-untyped-def]
    """BatchPong's whole per-env step (NEXT_STEP), written by hand."""
    for i in range(lo, hi):
        if i < 0:  # (never: tells the compiler that i >= 0, so a[i] skips the wraparound)
            continue
        if awaiting[i]:
            sl[i] = 0
            sr[i] = 0
            al[i] = 0
            ar[i] = 0
            ly[i] = centre
            ry[i] = centre
            _serve(f, d, bx, by, bvx, bvy, key, counter, i)
            elapsed[i] = 0
            awaiting[i] = False
            reward[i] = 0.0
            terminated[i] = False
            truncated[i] = False
        else:
            r, t = _rules(f, d, steps, ptw, bx, by, bvx, bvy, ly, ry, sl, sr, key, counter, i,
                          action[i])
            e = elapsed[i] + 1
            elapsed[i] = e
            tr = max_steps > 0 and e >= max_steps
            reward[i] = r
            terminated[i] = t
            truncated[i] = tr
            if t or tr:
                awaiting[i] = True
        row = obs[i]
        row[0] = bx[i] * scale[0] + offset[0]
        row[1] = by[i] * scale[1] + offset[1]
        row[2] = bvx[i] * scale[2] + offset[2]
        row[3] = bvy[i] * scale[3] + offset[3]
        row[4] = ly[i] * scale[4] + offset[4]
        row[5] = ry[i] * scale[5] + offset[5]


@numba.njit(_nrt=False, nogil=True)
def hand_rules_only(f, d, steps, ptw, bx, by, bvx, bvy, ly, ry, sl, sr, key, counter, action,
                    reward, lo, hi):  # type: ignore[no-untyped-def]
    for i in range(lo, hi):
        if i < 0:
            continue
        r, t = _rules(f, d, steps, ptw, bx, by, bvx, bvy, ly, ry, sl, sr, key, counter, i,
                      action[i])
        reward[i] = r


def hand_args(env: Any, obs: np.ndarray, action: np.ndarray) -> tuple[Any, ...]:
    k = env.constants
    s = env.state
    f = np.array([k.paddle_min, k.paddle_max, k.cpu_speed, k.top, k.top2, k.left_plane,
                  k.right_plane, k.left_plane2, k.right_plane2, k.reach, k.serve_x, k.spin,
                  k.max_vy], np.float32)
    d = np.array([k.serve_y_scale, k.serve_y_offset, k.serve_vy, k.ball_speed64])
    return (f, d, k.paddle_steps, k.points_to_win, k.centre_y, k.obs_scale, k.obs_offset,
            s.ball_x, s.ball_y, s.ball_vx, s.ball_vy, s.left_y, s.right_y, s.score_left,
            s.score_right, s.action_left, s.action_right, s.elapsed_steps, s.rng_key,
            s.rng_counter, s.awaiting_reset, action, env._reward, env._terminated,
            env._truncated, obs, env.max_episode_steps or 0)


def check_equal(n: int) -> None:
    """The hand-written loop gives the per-env env's states and observations."""
    env = batchenv.BatchPong(n, kernels="numba", max_episode_steps=50)
    twin = batchenv.BatchPong(n, kernels="numba", max_episode_steps=50)
    env.reset(seed=3)
    twin.reset(seed=3)
    rng = np.random.default_rng(0)
    obs = np.zeros_like(twin._obs)
    for _ in range(300):
        action = rng.integers(0, 3, n)
        expected = env.step(action)[0]
        hand(*hand_args(twin, obs, action), 0, n)
        assert np.array_equal(obs, expected), "observations differ"
    for (name, a), (_, b) in zip(env.state, twin.state):
        assert np.array_equal(a, b), f"{name} differs"


class _NoObservation(batchenv.BatchPong):
    """BatchPong per-env whose observe_env writes nothing (timing only)."""

    @staticmethod
    def observe_env(p, s, i, obs):  # type: ignore[no-untyped-def]
        pass


class _NoRules(batchenv.BatchPong):
    """BatchPong per-env whose step_env changes nothing (timing only)."""

    @staticmethod
    def step_env(p, s, i, action):  # type: ignore[no-untyped-def]
        return 0.0, False


class _Neither(_NoObservation):
    """Neither rules nor observation: the base class's work in the loop, and the Python
    around it."""

    @staticmethod
    def step_env(p, s, i, action):  # type: ignore[no-untyped-def]
        return 0.0, False


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--num-envs", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=7)
    args_ = ap.parse_args()
    n, rounds = args_.num_envs, args_.rounds
    check_equal(min(n, 512))
    numpy_env = batchenv.BatchPong(n, kernels="numpy")
    env = batchenv.BatchPong(n, kernels="numba")
    twin = batchenv.BatchPong(n, kernels="numba")
    variants = {name: cls(n, kernels="numba") for name, cls in
                (("no observation", _NoObservation), ("no rules", _NoRules),
                 ("neither", _Neither))}
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 3, n) for _ in range(16)]
    action = actions[0]
    for e in (numpy_env, env, twin, *variants.values()):
        e.reset(seed=0)
        for t in range(100):
            e.step(actions[t % 16])
    runner = env._per_env
    form = runner.actions
    outputs = runner.pool.take()  # (the loop's arguments as Runner.step gives them)
    loop_args = (runner.p, runner.fields(env.state), 0, runner.every, action, form.low,
                 form.high, *outputs, 0, env.max_episode_steps, 1, 0, n)
    obs = np.empty_like(twin._obs)
    h = hand_args(twin, obs, action)
    rules = h[:4] + h[7:15] + h[18:20] + (action, np.zeros(n))
    cases: dict[str, Callable[[], Any]] = {
        "numpy kernels: env.step": lambda: numpy_env.step(action),
        "per-env: env.step": lambda: env.step(action),
        "  the compiled loop alone": lambda: runner._entry(*loop_args),
        **{f"  {name}: env.step": (lambda e=e: e.step(action)) for name, e in variants.items()},
        "hand-written loop, same work": lambda: hand(*h, 0, n),
        "hand-written, rules only": lambda: hand_rules_only(*rules, 0, n),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for r in range(rounds):  # interleaved: every case once per round, the order rotated
        names = list(cases)
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].append(micros(cases[name], blocks=1))
    print(f"BatchPong, num_envs={n}, CPU microseconds per call (median of {rounds} "
          f"interleaved rounds); ns per env-step in brackets")
    med = {name: statistics.median(t) for name, t in times.items()}
    for name, us in med.items():
        print(f"  {name:42s} {us:9.2f}  ({us * 1e3 / n:6.2f})")
    full, no_obs, no_rules, neither = (med["per-env: env.step"],
                                       med["  no observation: env.step"],
                                       med["  no rules: env.step"], med["  neither: env.step"])
    print(f"split of the per-env step (ns per env-step): rules {(full - no_rules) * 1e3 / n:.2f}, "
          f"observation {(full - no_obs) * 1e3 / n:.2f}, base class and Python "
          f"{neither * 1e3 / n:.2f} (of {full * 1e3 / n:.2f}; the parts overlap)")


if __name__ == "__main__":
    main()
