"""The benchmark suite: batchenv beside each peer that is installed, ratios measured in one run.

    python -m pytest benchmarks --benchmark-only                 # the default sizes, minutes
    python -m pytest benchmarks --benchmark-only -m ""           # also 65536 envs and threads
    python -m pytest benchmarks --benchmark-only --benchmark-json=/tmp/bench.json
    python benchmarks/plot_scaling.py /tmp/bench.json            # the scaling plot, from it

Every test times one call (a batched ``step``, or one step of a peer's single env) with the
``measure`` fixture below. Tests are grouped by env and batch size (pytest-benchmark's
``group``); inside a group each case says how many env-steps one call makes, whether it is a
peer (another library, or the plain-Python reference) and, optionally, which case of ours it
is compared with (``vs``: per-env against numpy kernels, 2 threads against 1). After the run
a table prints, per group, the peer's time per env-step over ours (above 1: ours is faster)
and each ``vs`` pair the same way, from the medians of this run. The same ratios go into the
JSON that ``--benchmark-json`` writes (key ``"ratios"``).

The batch size 65536, the two-thread cases and the larger sharded batches are marked
``slow`` (deselected by pyproject's ``addopts``, as in the test suite: ``-m ""`` runs them).
Peers that are not installed are skipped (``pytest.importorskip``): ``ale-py`` (the
``bench`` extra), ``minatar`` and ``minigrid`` (the ``test`` extra), PufferLib's C build
(``shared/anchors/pufferlib/build.sh``; run the suite from that venv).

pytest-benchmark runs the tests one after another, not interleaved: on a shared machine a
change of load between two tests of a group moves their ratio. ``--benchmark-timer
time.process_time`` times this process's CPU time instead of the wall clock (cleaner under
load for one thread; it adds up the threads of the two-thread cases and leaves out the
sharded workers' time).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pytest


def cycling(step: Callable[[Any], Any], actions: Sequence[Any]) -> Callable[[], None]:
    """A call of ``step`` with the next of ``actions`` (drawn beforehand, cycled), so that
    the benchmark times the env, not the drawing of actions."""
    count = len(actions)
    position = [0]

    def call() -> None:
        t = position[0]
        position[0] = t + 1
        step(actions[t % count])

    return call


def single_env_loop(env: Any, actions: Sequence[Any]) -> Callable[[], None]:
    """One step of a Gymnasium-style single env, reset when its episode ends."""
    env.reset(seed=0)
    count = len(actions)
    position = [0]

    def call() -> None:
        t = position[0]
        position[0] = t + 1
        _, _, terminated, truncated, _ = env.step(actions[t % count])
        if terminated or truncated:
            env.reset()

    return call


class Measure:
    """The ``measure`` fixture: ``measure(call, group=, label=, env_steps=, peer=False,
    vs=None, num_envs=None)`` times ``call()`` with pytest-benchmark under ``group``
    (``env_steps`` env-steps per call; ``num_envs``, the group's batch size, defaults to
    it). ``measure.batch``, ``measure.loop`` and ``measure.cycling`` make the calls."""

    cycling = staticmethod(cycling)
    loop = staticmethod(single_env_loop)

    @staticmethod
    def batch(env: Any, count: int = 16) -> Callable[[], None]:
        """A ``step`` of vector env ``env`` with one of ``count`` batches of random actions
        (its ``action_space``, seeded 0) drawn beforehand."""
        env.action_space.seed(0)
        return cycling(env.step, [env.action_space.sample() for _ in range(count)])

    def __init__(self, benchmark: Any) -> None:
        self.benchmark = benchmark

    def __call__(self, call: Callable[[], Any], *, group: str, label: str, env_steps: int,
                 peer: bool = False, vs: str | None = None, num_envs: int | None = None,
                 warmup: int = 3) -> None:
        self.benchmark.group = group
        self.benchmark.extra_info.update(
            label=label, env_steps=env_steps, peer=peer, vs=vs,
            num_envs=env_steps if num_envs is None else num_envs)
        for _ in range(warmup):  # first calls: compiles, page faults, caches
            call()
        self.benchmark(call)


@pytest.fixture
def measure(benchmark: Any) -> Measure:
    return Measure(benchmark)


# ------------------------------------------------------------------------ the ratios
def ratios(rows: Iterable[tuple[str, dict, float]]) -> list[dict[str, Any]]:
    """Per group, each case of ours against each peer, and each ``vs`` pair: the other's
    median seconds per env-step over ours (above 1: ours is faster). ``rows``: (group,
    extra_info, median seconds per call) of this run's benchmarks."""
    groups: dict[str, list[tuple[dict, float]]] = defaultdict(list)
    for group, info, median in rows:
        if "label" in info:
            groups[group].append((info, median / info["env_steps"]))
    out = []
    for group, cases in groups.items():
        by_label = {info["label"]: per_env for info, per_env in cases}
        peers = [(info["label"], t) for info, t in cases if info["peer"]]
        for info, ours in cases:
            if info["peer"]:
                continue
            others = list(peers)
            if info.get("vs") in by_label:
                others.append((info["vs"], by_label[info["vs"]]))
            for other, theirs in others:
                out.append({"group": group, "ours": info["label"], "other": other,
                            "ours_ns": ours * 1e9, "other_ns": theirs * 1e9,
                            "ratio": theirs / ours})
    return out


def _group_key(group: str) -> tuple[str, int]:
    name, _, n = group.rpartition(" n=")
    return (name, int(n)) if n.isdigit() else (group, 0)


_RESULTS = pytest.StashKey[list]()


@pytest.hookimpl(hookwrapper=True)
def pytest_benchmark_group_stats(config: pytest.Config, benchmarks: list[dict],
                                 group_by: str) -> Any:
    """Keep this run's medians (not those of a ``--benchmark-compare``d run) for the table."""
    config.stash[_RESULTS] = [(b["group"], b["extra_info"], b["median"]) for b in benchmarks
                              if not b.get("path")]
    yield


def pytest_benchmark_update_json(config: pytest.Config, benchmarks: Any,
                                 output_json: dict) -> None:
    """The ratios in the JSON too, for the plot and for comparing runs."""
    output_json["ratios"] = ratios((b["group"], b["extra_info"], b["stats"]["median"])
                                   for b in output_json["benchmarks"])


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    found = ratios(config.stash.get(_RESULTS, []))
    if not found:
        return
    write = terminalreporter.write_line
    terminalreporter.section("ratios of medians measured in this run (other / ours per "
                             "env-step: above 1, ours is faster)")
    width = max(len(r["group"]) for r in found)
    wo = max(len(r["ours"]) for r in found)
    wp = max(len(r["other"]) for r in found)
    write(f"{'group':{width}}  {'ours':{wo}}  {'against':{wp}}  {'ours ns':>10}  "
          f"{'other ns':>10}  {'ratio':>8}")
    for r in sorted(found, key=lambda r: _group_key(r["group"])):
        write(f"{r['group']:{width}}  {r['ours']:{wo}}  {r['other']:{wp}}  "
              f"{r['ours_ns']:10.1f}  {r['other_ns']:10.1f}  {r['ratio']:7.2f}x")
    per_env = [r["ratio"] for r in found]
    write(f"({len(found)} ratios; median {statistics.median(per_env):.2f}x; ns: median "
          "seconds per call over env-steps per call)")
