"""The disk cache of per-env loops (batchenv/_loop_cache.py): a second process finds the
machine code the first compiled, with the same results; an edit to any function the kernels
reach is compiled afresh, never served stale; what cannot be keyed, or an unusable
directory, runs uncached with the same results."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from batchenv import _loop_cache, perenv

pytest.importorskip("numba")

ROOT = Path(__file__).resolve().parents[1]

# A tiny per-env game in its own module; its reward comes from a helper in another module,
# through a @rule and a numba-compiled function (the edits below change each).
GAME = '''
import numpy as np
from gymnasium import spaces

import batchenv
from batchenv import perenv

import helpers


class Counter(batchenv.BatchEnv):
    state_dtype = np.dtype([("x", np.int64)])
    single_action_space = spaces.Discrete(3)
    single_observation_space = spaces.Box(0, 100, (1,), np.float32)
    default_max_episode_steps = 7

    @staticmethod
    def reset_env(p, s, i):
        s.x[i] = perenv.integers(s, i, 0, 5)

    @staticmethod
    def step_env(p, s, i, action):
        s.x[i] += action
        return helpers.points(s.x[i]), s.x[i] > 9

    @staticmethod
    def observe_env(p, s, i, obs):
        obs[0] = s.x[i]
'''

HELPERS = '''
import numba

from batchenv import perenv

SCALE = {scale}


@numba.njit
def bonus(x):
    return {bonus}


@perenv.rule
def points(x):
    return SCALE * x + bonus(x)
'''

DRIVER = '''
import json
import sys

import numpy as np

from game import Counter


def run(kernels):
    env = Counter(6, kernels=kernels)
    obs, _ = env.reset(seed=1)
    seen = [obs.tolist()]
    rng = np.random.default_rng(0)
    for _ in range(12):
        obs, reward, terminated, truncated, _ = env.step(rng.integers(0, 3, 6))
        seen.append([obs.tolist(), reward.tolist(), terminated.tolist(), truncated.tolist()])
    return seen, env._per_env


compiled, runner = run("numba")
plain, _ = run("python")
stats = {name: [sum(loop.stats.cache_hits.values()), sum(loop.stats.cache_misses.values())]
         for name, loop in runner.loops.items()}
json.dump({"compiled": compiled, "plain": plain, "stats": stats,
           "module": runner.loops["run"].py_func.__module__}, sys.stdout)
'''


def _write_game(where: Path, scale: str = "0.5", bonus: str = "1.0") -> None:
    (where / "game.py").write_text(GAME)
    (where / "helpers.py").write_text(textwrap.dedent(HELPERS.format(scale=scale,
                                                                     bonus=bonus)))
    (where / "driver.py").write_text(DRIVER)


def _run(where: Path, cache: str) -> dict:
    env = {**os.environ, "BATCHENV_CACHE_DIR": cache, "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONPATH": os.pathsep.join([str(where), str(ROOT)])}
    done = subprocess.run([sys.executable, "driver.py"], cwd=where, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_second_process_finds_the_loops_and_an_edit_is_never_served_stale(tmp_path):
    _write_game(tmp_path)
    cache = str(tmp_path / "cache")
    first = _run(tmp_path, cache)
    assert first["compiled"] == first["plain"]
    assert {name: hits for name, (hits, _) in first["stats"].items()
            if hits} == {}  # nothing there yet
    assert first["stats"]["run"][1] == 1  # compiled once (every operation), and written
    second = _run(tmp_path, cache)
    assert second["compiled"] == second["plain"] == first["plain"]
    assert second["stats"]["run"] == [1, 0]  # found: not compiled again
    assert second["module"] == first["module"]
    # a numba function two calls below the kernel, and a constant it reads, edited: compiled
    # afresh (numba's cache alone would serve the old machine code: it checks neither)
    _write_game(tmp_path, scale="0.25", bonus="2.0 if x > 4 else 0.0")
    edited = _run(tmp_path, cache)
    assert edited["compiled"] == edited["plain"] != first["plain"]
    assert edited["stats"]["run"] == [0, 1]
    assert edited["module"] != first["module"]


def _game_module(tmp_path: Path, name: str, step: str):
    """The Counter game of GAME with ``step`` as the body of its step_env, imported from a
    file (``name``.py) in ``tmp_path``."""
    source = GAME.replace("import helpers\n", "").replace(
        "        s.x[i] += action\n        return helpers.points(s.x[i]), s.x[i] > 9\n", step)
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _same_as_the_python_loop(cls) -> object:
    """A compiled env of ``cls`` (returned), run next to the Python loop: the same results."""
    envs, runs = [], []
    for kernels in ("numba", "python"):
        envs.append(cls(5, kernels=kernels))
        seen = [envs[-1].reset(seed=4)[0]]
        for _ in range(9):
            seen.extend(envs[-1].step(np.arange(5) % 3)[:4])
        runs.append(seen)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    return envs[0]


def test_an_unusable_cache_directory_or_an_unkeyable_class_runs_uncached(monkeypatch,
                                                                         tmp_path):
    game = _game_module(tmp_path, "unkeyable_game",
                        "        s.x[i] += action\n        return 0.5 * s.x[i], s.x[i] > 9\n")
    cls = game.Counter
    kernels = tuple(getattr(cls, n) for n in perenv.PER_ENV_KERNELS)
    (tmp_path / "a_file").write_text("")
    monkeypatch.setenv("BATCHENV_CACHE_DIR", str(tmp_path / "a_file" / "cache"))
    assert perenv._cached_loops(cls, perenv._loops_text(cls, ("x",), ()), kernels, {},
                                None, lambda **options: None, {}, ()) is None
    # a class typed into an interactive session: its code has no source file
    namespace: dict = {"__name__": "__main__"}
    exec(compile(GAME.replace("import helpers\n", "").replace("helpers.points(s.x[i])",
                                                             "0.5 * s.x[i]"),
                 "<stdin>", "exec"), namespace)
    monkeypatch.setenv("BATCHENV_CACHE_DIR", str(tmp_path / "cache"))
    env = _same_as_the_python_loop(namespace["Counter"])
    assert env._per_env is not None
    assert env._per_env.loops["run"].py_func.__module__.startswith(
        "batchenv.perenv.<loops of")
    assert not (tmp_path / "cache").exists()


def test_a_kernel_that_allocates_is_cached_with_reference_counting(monkeypatch, tmp_path):
    monkeypatch.setenv("BATCHENV_CACHE_DIR", str(tmp_path / "cache"))
    game = _game_module(tmp_path, "allocating_game", (
        "        steps = np.arange(3)  # allocates: needs numba's reference counting\n"
        "        s.x[i] += steps[action]\n"
        "        return 0.5 * s.x[i], s.x[i] > 9\n"))
    env = _same_as_the_python_loop(game.Counter)
    runner = env._per_env
    assert runner.borrowing is False
    module = runner.loops["run"].py_func.__globals__
    assert module["__file__"].startswith(str(tmp_path / "cache"))
    # remembered beside it: the next process compiles the counting loops straight away
    assert [p.name for p in (tmp_path / "cache").glob("*.counting")] == [
        Path(perenv._loops(game.Counter, "numba", True, *runner._tuples).path).name
        + ".counting"]
    assert game.Counter(2, kernels="numba")._per_env.borrowing is False


def _key(cls: type) -> str:
    return _loop_cache.key(cls, tuple(getattr(cls, n) for n in perenv.PER_ENV_KERNELS),
                           "text", ())


def _kernels(step_env):
    """A per-env class (no instance made: nothing compiles) with ``step_env``."""

    def reset_env(p, s, i):
        s.x[i] = 0

    def observe_env(p, s, i, obs):
        obs[0] = s.x[i]

    return type("K", (), {"reset_env": staticmethod(reset_env),
                          "step_env": staticmethod(step_env),
                          "observe_env": staticmethod(observe_env)})


TABLE = np.arange(4.0)


def _reads_table(p, s, i, action):
    return TABLE[action], False


def test_the_key_follows_the_values_kernels_freeze_in(monkeypatch):
    before = _key(_kernels(_reads_table))
    assert _key(_kernels(_reads_table)) == before  # (deterministic)
    monkeypatch.setattr(sys.modules[__name__], "TABLE", np.arange(4.0) * 2)
    assert _key(_kernels(_reads_table)) != before  # a global array numba freezes in

    def closing(limit):
        def step_env(p, s, i, action):
            return 0.0, s.x[i] > limit

        return step_env

    assert _key(_kernels(closing(3))) != _key(_kernels(closing(4)))  # a closure cell


def test_every_shipped_per_env_class_can_be_keyed():
    """The key reaches every kernel's globals: one it cannot hash would leave the class
    compiled in every process, silently (as BatchPong was, its kernels reading
    ``p.image_constants`` beside a module function of that name). Nothing compiles here."""
    import batchenv
    from batchenv.registration import resolve

    classes = {batchenv.BatchPong}
    for env_id in batchenv.list_envs():
        resolved = resolve(env_id)
        if resolved is not None and perenv.has_per_env_kernels(resolved.cls):
            classes.add(resolved.cls)
    assert len(classes) >= 17  # Pong, 5 MinAtar games, 11 MiniGrid classes
    for cls in sorted(classes, key=lambda c: c.__name__):
        assert len(_key(cls)) == 64, cls.__name__  # (Uncachable would say what it met)


def test_what_the_key_cannot_hash_is_not_cached(monkeypatch, tmp_path):
    namespace: dict = {}
    exec("def step_env(p, s, i, action):\n    return 0.0, False\n", namespace)
    with pytest.raises(_loop_cache.Uncachable, match="no source file"):
        _key(_kernels(namespace["step_env"]))  # as typed into an interactive session
    lock = __import__("threading").Lock()

    def holding(p, s, i, action):
        return 0.0, lock is None

    with pytest.raises(_loop_cache.Uncachable, match="lock"):
        _key(_kernels(holding))
    monkeypatch.setenv("BATCHENV_CACHE_DIR", str(tmp_path))
    held = _kernels(holding)
    kernels = tuple(getattr(held, n) for n in perenv.PER_ENV_KERNELS)
    assert perenv._cached_loops(held, "", kernels, {}, None, None, {}, ()) is None
    assert list(tmp_path.iterdir()) == []


LOCK = __import__("threading").Lock()  # a module global the key cannot hash


def _reads_a_field_named_like_it(p, s, i, action):
    return 0.0, p.LOCK  # (an attribute of p, not the global LOCK)


def _reads_the_global(p, s, i, action):
    return 0.0, LOCK is None


def test_an_attribute_named_like_a_global_is_not_the_global():
    """The key follows the globals a kernel reads (LOAD_GLOBAL), not every name of its
    code: `p.LOCK` beside a module-level `LOCK` the key cannot hash still caches (BatchPong
    lost its cache once to `p.image_constants` beside a function of that name)."""
    assert _key(_kernels(_reads_a_field_named_like_it))
    with pytest.raises(_loop_cache.Uncachable, match="LOCK"):
        _key(_kernels(_reads_the_global))


def test_the_cache_directory_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("BATCHENV_CACHE_DIR", str(tmp_path))
    assert _loop_cache.cache_dir() == tmp_path
    monkeypatch.setenv("BATCHENV_CACHE_DIR", "")
    assert _loop_cache.cache_dir() is None
    monkeypatch.delenv("BATCHENV_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _loop_cache.cache_dir() == tmp_path / "xdg" / "batchenv"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _loop_cache.cache_dir() == tmp_path / "home" / ".cache" / "batchenv"
