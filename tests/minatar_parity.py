"""The MinAtar parity harness: run the ``minatar`` package (1.0.15) and a batchenv MinAtar
game side by side with the same random outcomes, and compare observation, reward and
terminal at every step.

How the two get the same randomness. A batchenv MinAtar game draws a fixed number of 64-bit
words per env each step (``step_words``) and each reset (``reset_words``) from the env's
counter-based stream: word ``j`` of a block that starts at counter ``c`` is
``splitmix64_mix(key + (c + j) * GOLDEN)``, SplitMix64's output function (Steele, Lea &
Flood, OOPSLA 2014) at that position. This harness recomputes those words in plain scalar
Python from SplitMix64's definition (:func:`word`, independent of batchenv's numpy code),
reading each env's ``rng_key`` and ``rng_counter`` from ``get_state()`` before each step.
The reference gets, in place of its ``np.random.RandomState``, a :class:`StandIn` whose
``rand``/``randint`` return the value a given word stands for (``rand()``: ``(w >> 11) *
2**-53``; ``randint(low, high)``: ``low + w % (high - low)``). Which word a call gets is
decided by its *call site*: ``(file, function, method, k)`` (the k-th call of that method
from that function during this ``act``/``reset``), looked up in the game's table (its
"mapping", documented in the game's docstring and in docs/minatar.md). A call the table
does not list fails the test, and so does a word used twice.

The reference's conditional draws (a spawn only when a timer runs out, new car speeds only
on a crossing) map to words our env draws either every step, used or not (Seaquest's
``step_words``), or only on the event: the words a step drew are those between the env's
counter before the step and after it, and the reference may use no word beyond them (and,
for a game with ``exact_draws``, must use every one of them). Either way a row's stream
never depends on other rows.

In NEXT_STEP auto-reset (the default) the step after a terminal step resets the env
instead of stepping it, so the reference's ``reset`` gets the words from the counter the
step started at.
"""

from __future__ import annotations

import collections
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from minatar import Environment

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def splitmix64_mix(z: int) -> int:
    """SplitMix64's output function (Stafford's Mix13), on a Python int."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def word(key: int, counter: int, j: int) -> int:
    """Word ``j`` of the block starting at ``counter`` of the stream ``key``."""
    return splitmix64_mix((key + (counter + j) * GOLDEN) & MASK64)


def unit(w: int) -> float:
    """``rand()``'s value for a word: its top 53 bits over 2**53."""
    return (w >> 11) * 2.0**-53


#: A call site: (file name, function, RandomState method, k-th such call in this act/reset).
Site = tuple[str, str, str, int]


class StandIn:
    """A stand-in for ``np.random.RandomState``: values from preloaded words, by call site."""

    def __init__(self) -> None:
        self.key = self.counter = self.count = 0
        self.table: dict[Site, int] = {}
        self.calls: collections.Counter = collections.Counter()
        self.used: set[int] = set()

    def load(self, table: dict[Site, int], key: int, counter: int, count: int) -> None:
        self.table = table
        self.key, self.counter, self.count = key, counter, count  # words made on demand
        self.calls.clear()
        self.used = set()

    def _words(self, method: str, size: int) -> list[int]:
        frame = sys._getframe(2)
        where = (os.path.basename(frame.f_code.co_filename), frame.f_code.co_name, method)
        k = self.calls[where]
        self.calls[where] += 1
        site = (*where, k)
        if site not in self.table:
            raise AssertionError(f"the reference drew at an unmapped call site {site}")
        first = self.table[site]
        slots = list(range(first, first + size))
        if self.used.intersection(slots) or slots[-1] >= self.count:
            raise AssertionError(f"call site {site}: words {slots} reused or out of range")
        self.used.update(slots)
        return [word(self.key, self.counter, j) for j in slots]

    def rand(self, *size: int):
        if not size:
            return unit(self._words("rand", 1)[0])
        count = int(np.prod(size))
        return np.array([unit(w) for w in self._words("rand", count)]).reshape(size)

    def randint(self, low: int, high: int | None = None, size: int | None = None):
        if high is None:
            low, high = 0, low
        if size is None:
            return low + self._words("randint", 1)[0] % (high - low)
        return np.array([low + w % (high - low) for w in self._words("randint", int(size))])


@dataclass
class Game:
    """A game's parity set-up: the reference's name and the mapping."""

    name: str  # minatar.environments module
    step_table: dict[Site, int]
    reset_table: dict[Site, int]
    extra: Callable[[Environment], int] | None = None  # a statistic of the reference (ramp)
    #: our env draws exactly the words the reference uses (no word drawn and left unused)
    exact_draws: bool = False


@dataclass
class Result:
    steps: int = 0
    episodes: int = 0
    reward: float = 0.0
    sticky_repeats: int = 0
    extra_max: int = 0
    lengths: list[int] = field(default_factory=list)  # of finished episodes
    returns: list[float] = field(default_factory=list)


def run(env, game: Game, steps: int, policy: Callable, seed: int,
        rng: np.random.RandomState) -> Result:
    """Step ``env`` (a fresh batchenv MinAtar env, NEXT_STEP auto-reset) and one reference
    ``Environment`` per env for ``steps`` steps from ``reset(seed=seed)`` with actions
    ``policy(obs, rng)``; assert observation, reward and terminal equal at every step."""
    n = env.num_envs
    refs = [Environment(game.name, sticky_action_prob=env.sticky_action_prob,
                        difficulty_ramping=env.difficulty_ramping) for _ in range(n)]
    stand = StandIn()
    for ref in refs:
        ref.random = stand
        ref.env.random = stand
    k_reset = env.reset_words
    action_set = [int(a) for a in env.action_set]
    obs, _ = env.reset(seed=seed)
    st = env.get_state()
    for i, ref in enumerate(refs):
        stand.load(game.reset_table, int(st["rng_key"][i]), 0, k_reset)
        ref.reset()
    ref_obs = np.stack([ref.state() for ref in refs])
    np.testing.assert_array_equal(obs, ref_obs, err_msg="observations differ after reset")
    out = Result()
    length = np.zeros(n, dtype=int)
    ret = np.zeros(n)
    for t in range(steps):
        st = env.get_state()
        actions = policy(obs, rng)
        obs, reward, terminated, truncated, _ = env.step(actions)
        after = env.get_state()
        drawn = after["rng_counter"] - st["rng_counter"]  # this step's words
        ref_reward = np.zeros(n)
        ref_done = np.zeros(n, dtype=bool)
        for i, ref in enumerate(refs):
            key, counter = int(st["rng_key"][i]), int(st["rng_counter"][i])
            if st["awaiting_reset"][i]:
                assert drawn[i] == k_reset, f"env {i} drew {drawn[i]} words to reset"
                stand.load(game.reset_table, key, counter, k_reset)
                ref.reset()
                out.lengths.append(int(length[i]))
                out.returns.append(float(ret[i]))
                length[i] = 0
                ret[i] = 0
            else:
                stand.load(game.step_table, key, counter, int(drawn[i]))
                a = action_set[int(actions[i])]
                r, d = ref.act(a)
                out.sticky_repeats += ref.last_action != a
                ref_reward[i], ref_done[i] = r, d
                length[i] += 1
                ret[i] += r
            if game.exact_draws and len(stand.used) != stand.count:
                raise AssertionError(f"env {i} at step {t}: we drew {stand.count} words, the "
                                     f"reference used {sorted(stand.used)}")
            ref_obs[i] = ref.state()
            if game.extra is not None:
                out.extra_max = max(out.extra_max, game.extra(ref))
        where = f"at step {t} (seed {seed})"
        np.testing.assert_array_equal(reward, ref_reward, err_msg=f"rewards differ {where}")
        np.testing.assert_array_equal(terminated, ref_done, err_msg=f"terminals differ {where}")
        if not np.array_equal(obs, ref_obs):
            bad = np.flatnonzero((obs != ref_obs).reshape(n, -1).any(axis=1))
            raise AssertionError(f"observations differ {where} in envs {bad[:10].tolist()}")
        assert not truncated.any()
        out.steps += n
        out.episodes += int(ref_done.sum())
        out.reward += float(ref_reward.sum())
    return out


def random_policy(num_actions: int) -> Callable:
    def policy(obs: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
        return rng.randint(num_actions, size=len(obs))

    return policy
