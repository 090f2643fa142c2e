"""The disk cache of per-env loops (batchenv/_loop_cache.py, batchenv/_loops.py): a second
process finds the loop the first compiled, with the same results; after an edit of anything
the compiled code reads, a fresh process compiles afresh, never served stale; a corrupt
entry, an unusable directory or a full disk is a warning and an uncached compile with the
same results, never an error.

The cross-process tests share one first process (the ``written`` fixture) and copy its game
and cache; each runs ``driver.py`` in a fresh interpreter, which steps the game compiled and
as the Python loop (``kernels="python"``, which runs the current code and reads no cache)
and reports both. "Compiled afresh" shows as a loop file of a new name in the cache and no
machine code loaded from it; "loaded from the cache" as numba's count of loaded signatures
(the driver's one private hook, ``loaded_from_cache``) and files left as they were."""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from batchenv import _loop_cache, perenv

numba = pytest.importorskip("numba")

ROOT = Path(__file__).resolve().parents[1]

# A tiny per-env game whose step reads each thing an edit below changes: a module attribute
# read by the second of two functions reaching that module (lc_cfg.BONUS: lc_rules.a_scaled
# reaches lc_cfg first, reading SCALE), a namedtuple constant by field name (lc_consts.TUNE),
# a module global (lc_game.LIMIT) and the user's own numba.njit(cache=True) helper
# (lc_mine.boost). Each lives in a file of its own, so that an edit of one changes no other
# source file the key hashes. observe_env reads obs[peek], past the observation's shape
# when peek is 1: another env's row, or an IndexError when numba checks bounds.
SOURCES = {
    "lc_cfg.py": """
        SCALE = 0.5
        BONUS = 1.5
        """,
    "lc_consts.py": """
        from collections import namedtuple

        Tune = namedtuple("Tune", "gain cap")
        TUNE = Tune(3, 8)
        """,
    "lc_mine.py": """
        import numba


        @numba.njit(cache=True)
        def boost(a):
            return a + 1
        """,
    # (inline=False: an inlined rule makes numba 0.68 drop the loop's writes to s, a fault
    # of its own, outside the cache)
    "lc_rules.py": """
        import numba

        import lc_cfg
        from batchenv import perenv


        @numba.njit
        def a_scaled(x):
            return lc_cfg.SCALE * x


        @perenv.rule(inline=False)
        def b_bonus(x):
            return lc_cfg.BONUS if x > 3 else 0.0


        @perenv.rule(inline=False)
        def points(x):
            return a_scaled(x) + b_bonus(x)
        """,
    "lc_game.py": """
        import numpy as np
        from gymnasium import spaces

        import batchenv
        import lc_mine
        import lc_rules
        from lc_consts import TUNE

        LIMIT = 9


        class Counter(batchenv.BatchEnv):
            state_dtype = np.dtype([("x", np.int64), ("peek", np.int64)])
            single_action_space = spaces.Discrete(3)
            single_observation_space = spaces.Box(0, 100, (1,), np.float32)
            default_max_episode_steps = 7

            @staticmethod
            def reset_env(p, s, i):
                s.x[i] = i % 4
                s.peek[i] = 0

            @staticmethod
            def step_env(p, s, i, action):
                s.x[i] = min(s.x[i] + TUNE.gain * action, TUNE.cap + lc_mine.boost(action))
                return lc_rules.points(s.x[i]), s.x[i] > LIMIT

            @staticmethod
            def observe_env(p, s, i, obs):
                obs[0] = s.x[i] if s.peek[i] == 0 else obs[s.peek[i]]
        """,
    "driver.py": """
        import json
        import sys
        import warnings

        options = json.loads(sys.argv[1])
        if options.get("file_size"):  # a full disk: a write past this size fails (EFBIG)
            import resource
            import signal

            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (options["file_size"],) * 2)

        import numpy as np

        import lc_game


        def loaded_from_cache(env):
            # the one private hook: the signatures of the env's loop numba loaded from disk
            return sum(env.kernel_form.loops.run.stats.cache_hits.values())


        def play(kernels):
            env = lc_game.Counter(6, kernels=kernels)
            if "limit" in options:  # a global set after construction, before the first reset
                lc_game.LIMIT = options["limit"]
            obs, _ = env.reset(seed=1)
            seen = [[obs.tolist()]]
            rng = np.random.default_rng(0)
            for _ in range(12):
                obs, reward, terminated, truncated, _ = env.step(rng.integers(0, 3, 6))
                seen.append([obs.tolist(), reward.tolist(), terminated.tolist(),
                             truncated.tolist()])
            return env, seen


        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            env, compiled = play("numba")
            hits = loaded_from_cache(env)
            _, plain = play("python")
            env.reset(seed=1)
            env.state.peek[0] = 1  # env 0 observes obs[1]: past its observation's shape
            try:
                env.step(np.zeros(6, dtype=np.int64))
                peek = "read"
            except IndexError:
                peek = "IndexError"
        json.dump({"compiled": compiled, "plain": plain, "hits": hits, "peek": peek,
                   "warnings": [f"{w.category.__name__}: {w.message}" for w in caught]},
                  sys.stdout)
        """,
}


def _write(where: Path, name: str, source: str) -> None:
    (where / name).write_text(textwrap.dedent(source).lstrip())


def _write_game(where: Path) -> None:
    where.mkdir(parents=True, exist_ok=True)
    for name, source in SOURCES.items():
        _write(where, name, source)


def _run(where: Path, cache: Path, options: dict | None = None,
         numba_env: dict | None = None) -> dict:
    """driver.py in a fresh interpreter with ``cache`` as the cache directory (numba's own
    settings: only ``numba_env``); what it reports."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update(numba_env or {}, BATCHENV_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([str(where), str(ROOT)]))
    done = subprocess.run([sys.executable, "driver.py", json.dumps(options or {})], cwd=where,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _same_steps(a: list, b: list) -> None:
    """Two runs' reset observation and step results, equal element by element."""
    assert len(a) == len(b)
    for step, (x, y) in enumerate(zip(a, b)):
        for what, u, v in zip(("obs", "reward", "terminated", "truncated"), x, y):
            np.testing.assert_array_equal(np.array(u), np.array(v), err_msg=f"{what}, "
                                          f"step {step}")


def _entries(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.glob("_batchenv_loop_*.py"))


def _files(cache: Path) -> dict[str, tuple[int, bytes]]:
    return {str(p.relative_to(cache)): (p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(cache.rglob("*")) if p.is_file()}


def _cache_warnings(report: dict) -> list[str]:
    return [w for w in report["warnings"] if "compile cache" in w]


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, dict]:
    """The game's files and the cache its first process wrote; that process's report."""
    where = tmp_path_factory.mktemp("written")
    _write_game(where)
    first = _run(where, where / "cache")
    _same_steps(first["compiled"], first["plain"])
    assert first["hits"] == 0 and first["warnings"] == []
    assert len(_entries(where / "cache")) == 1
    return where, first


def _copy(written: tuple[Path, dict], tmp_path: Path) -> tuple[Path, Path, dict]:
    """A copy of the written game and cache (times kept: numba's index compares them)."""
    where = tmp_path / "game"
    shutil.copytree(written[0], where)
    return where, where / "cache", written[1]


# ---------------------------------------------------------------- across processes
def test_a_second_process_loads_the_first_ones_loop(written, tmp_path):
    where, cache, first = _copy(written, tmp_path)
    assert any(cache.glob("__pycache__/*.nbc"))  # numba's machine code, beside the loop
    before = _files(cache)
    second = _run(where, cache)
    assert second["hits"] >= 1  # loaded, not compiled
    _same_steps(second["compiled"], first["compiled"])
    _same_steps(second["compiled"], second["plain"])
    assert second["warnings"] == []
    assert _files(cache) == before  # nothing written: no new entry, none rewritten


@pytest.mark.slow  # (processes that compile the loop uncached)
def test_a_corrupt_entry_warns_once_runs_uncached_and_is_written_anew(written, tmp_path):
    where, cache, first = _copy(written, tmp_path)
    (entry,) = _entries(cache)
    garbled = {}
    for path in cache.rglob("*"):
        if path.is_file():  # truncated: half of every file of the entry
            path.write_bytes(path.read_bytes()[:path.stat().st_size // 2])
            garbled[path] = path.read_bytes()
    third = _run(where, cache)
    _same_steps(third["compiled"], first["plain"])
    assert third["hits"] == 0
    assert len(third["warnings"]) == 1, third["warnings"]
    assert str(cache / entry) in _cache_warnings(third)[0]
    assert all(not p.exists() or p.read_bytes() != b for p, b in garbled.items())
    fourth = _run(where, cache)  # the next process writes the entry anew, and quietly
    _same_steps(fourth["compiled"], first["plain"])
    assert fourth["warnings"] == []
    assert _entries(cache) == [entry] and any(cache.glob("__pycache__/*.nbc"))


@pytest.mark.slow  # (its path, an OSError from the loop's file, is the full disk's too)
def test_an_unusable_cache_directory_warns_and_runs_uncached(written, tmp_path):
    where, _, first = _copy(written, tmp_path)
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    report = _run(where, a_file / "cache")  # a directory under a regular file
    _same_steps(report["compiled"], first["plain"])
    assert report["hits"] == 0
    (warning,) = report["warnings"]
    assert str(a_file / "cache") in warning and "compiled without the cache" in warning
    assert a_file.read_text() == ""


@pytest.mark.parametrize("file_size", [
    1000,  # nothing fits: the loop's file, and numba's cache of the user's helper
    pytest.param(16384, marks=pytest.mark.slow),  # the loop's file fits, its machine code not
])
def test_a_full_disk_warns_and_runs_uncached(written, tmp_path, file_size):
    first = written[1]
    where = tmp_path / "game"
    _write_game(where)  # (no numba cache of lc_mine.boost yet: it is written in the run)
    report = _run(where, tmp_path / "cache", {"file_size": file_size})
    _same_steps(report["compiled"], first["plain"])
    assert report["hits"] == 0
    assert report["warnings"] and all("File too large" in w for w in report["warnings"])
    assert _cache_warnings(report) == report["warnings"]
    assert not any((tmp_path / "cache").rglob("*.nbc"))


def _edit_cfg(where: Path) -> dict:
    _write(where, "lc_cfg.py", "SCALE = 0.5\nBONUS = 4.0\n")
    return {}


def _rename_fields(where: Path) -> dict:
    _write(where, "lc_consts.py", SOURCES["lc_consts.py"].replace('"gain cap"', '"cap gain"'))
    return {}


def _edit_helper(where: Path) -> dict:
    _write(where, "lc_mine.py", SOURCES["lc_mine.py"].replace("a + 1", "a - 1"))
    return {}


EDITS = {
    "a module attribute read by the second function reaching its module": (_edit_cfg, {}),
    "a namedtuple's fields renamed": (_rename_fields, {}),
    "a global set between construction and the first reset": (lambda where: {"limit": 5}, {}),
    "the user's own numba.njit(cache=True) helper": (_edit_helper, {}),
}


@pytest.mark.slow
@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edit_is_compiled_afresh_in_the_next_process(written, tmp_path, edit):
    where, cache, first = _copy(written, tmp_path)
    change, numba_env = EDITS[edit]
    options = change(where)
    report = _run(where, cache, options, numba_env)
    with pytest.raises(AssertionError):  # (the edit shows in the results)
        _same_steps(report["plain"], first["plain"])
    _same_steps(report["compiled"], report["plain"])
    assert report["hits"] == 0 and report["warnings"] == []
    assert len(_entries(cache)) == 2  # a new entry beside the old one


@pytest.mark.slow
def test_numba_boundscheck_set_compiles_a_bounds_checked_loop(written, tmp_path):
    where, cache, first = _copy(written, tmp_path)
    assert first["peek"] == "read"  # unchecked: env 0 reads env 1's observation
    report = _run(where, cache, numba_env={"NUMBA_BOUNDSCHECK": "1"})
    assert report["peek"] == "IndexError"  # not the unchecked loop from the cache
    _same_steps(report["compiled"], first["plain"])
    assert report["hits"] == 0 and len(_entries(cache)) == 2


# ---------------------------------------------------------------- the key, in this process
def _key(cls: type, extra: object = ()) -> str:
    return _loop_cache.key(cls, tuple(getattr(cls, n) for n in perenv.PER_ENV_KERNELS), extra)


@pytest.fixture
def game(tmp_path, monkeypatch):
    """The game's modules, imported in this process (nothing compiles)."""
    _write_game(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    names = [name[:-3] for name in SOURCES if name.startswith("lc_")]
    yield __import__("lc_game")
    for name in names:
        sys.modules.pop(name, None)


def test_the_key_changes_with_each_thing_the_loop_reads_and_only_then(game, tmp_path):
    import lc_cfg
    import lc_mine

    counter = game.Counter
    before = _key(counter)
    assert _key(counter) == before  # nothing changed
    assert _key(counter, "checked") != before  # the compile options, fields, dtypes
    changes = {
        "BONUS": lambda mp: mp.setattr(lc_cfg, "BONUS", 4.0),  # (read by the second)
        "SCALE": lambda mp: mp.setattr(lc_cfg, "SCALE", 0.25),
        "fields renamed": lambda mp: mp.setattr(game, "TUNE", collections.namedtuple(
            "Tune", "cap gain")(3, 8)),
        "a plain tuple": lambda mp: mp.setattr(game, "TUNE", (3, 8)),
        "a global": lambda mp: mp.setattr(game, "LIMIT", 5),
        "the user's cache=True helper": lambda mp: mp.setattr(
            lc_mine, "boost", numba.njit(cache=True)(_boost_edited)),
        "NUMBA_BOUNDSCHECK": lambda mp: mp.setenv("NUMBA_BOUNDSCHECK", "1"),
        "NUMBA_OPT": lambda mp: mp.setenv("NUMBA_OPT", "0"),
        ".numba_config.yaml": lambda mp: (mp.chdir(tmp_path), (
            tmp_path / ".numba_config.yaml").write_text("boundscheck: 1\n")),
    }
    for what, change in changes.items():
        with pytest.MonkeyPatch.context() as mp:
            change(mp)
            assert _key(counter) != before, what
        assert _key(counter) == before, what  # (undone: the same key again)


def _boost_edited(a):
    return a - 1


TABLE = np.arange(4.0)


def _kernels(step_env):
    """A per-env class (no instance made: nothing compiles) with ``step_env``."""

    def reset_env(p, s, i):
        s.x[i] = 0

    def observe_env(p, s, i, obs):
        obs[0] = s.x[i]

    return type("K", (), {"reset_env": staticmethod(reset_env),
                          "step_env": staticmethod(step_env),
                          "observe_env": staticmethod(observe_env)})


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
    compiled in every process, silently. Nothing compiles here."""
    import batchenv
    from batchenv.forms import has_per_env_kernels
    from batchenv.registration import resolve

    classes = {batchenv.BatchPong}
    for env_id in batchenv.list_envs():
        resolved = resolve(env_id)
        if resolved is not None and has_per_env_kernels(resolved.cls):
            classes.add(resolved.cls)
    assert len(classes) >= 17  # Pong, 5 MinAtar games, 11 MiniGrid classes
    for cls in sorted(classes, key=lambda c: c.__name__):
        assert len(_key(cls)) == 64, cls.__name__  # (Uncachable would say what it met)


def test_what_the_key_cannot_hash_is_uncachable():
    namespace: dict = {}
    exec("def step_env(p, s, i, action):\n    return 0.0, False\n", namespace)
    with pytest.raises(_loop_cache.Uncachable, match="no source file"):
        _key(_kernels(namespace["step_env"]))  # as typed into an interactive session
    lock = threading.Lock()

    def holding(p, s, i, action):
        return 0.0, lock is None

    with pytest.raises(_loop_cache.Uncachable, match="lock"):
        _key(_kernels(holding))


LOCK = threading.Lock()  # a module global the key cannot hash


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


@pytest.mark.slow
def test_an_unkeyable_class_runs_uncached_and_writes_nothing(monkeypatch, tmp_path):
    """A class typed into an interactive session (no source file): compiled in the
    process, the same results as the Python loop, nothing in the cache directory."""
    monkeypatch.setenv("BATCHENV_CACHE_DIR", str(tmp_path / "cache"))
    source = textwrap.dedent(SOURCES["lc_game.py"]).replace("import lc_mine\n", "").replace(
        "import lc_rules\n", "").replace("from lc_consts import TUNE\n", "").replace(
        "min(s.x[i] + TUNE.gain * action, TUNE.cap + lc_mine.boost(action))",
        "s.x[i] + action").replace("lc_rules.points(s.x[i])", "0.5 * s.x[i]")
    namespace: dict = {"__name__": "__main__"}
    exec(compile(source, "<stdin>", "exec"), namespace)
    runs = []
    for kernels in ("numba", "python"):
        env = namespace["Counter"](5, kernels=kernels)
        seen = [env.reset(seed=4)[0]]
        for _ in range(9):
            seen.extend(env.step(np.arange(5) % 3)[:4])
        runs.append(seen)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    assert not (tmp_path / "cache").exists()
