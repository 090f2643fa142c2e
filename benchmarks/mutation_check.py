"""Plant plausible bugs in a copy of the package, one at a time, and see which tests catch them.

Each mutation replaces one code snippet that occurs exactly once in ``batchenv/`` (searched
across every module, so it survives files being moved or renamed); the relevant tests then
run on the mutated copy with ``pytest -x``. A mutation is *caught* when a test fails (the
first failing test is reported), *missed* when every test passes. A snippet that is not
found (or found twice) is reported as ``not applied``: update the snippet, don't drop it.

Usage (from the repository root)::

    python benchmarks/mutation_check.py                 # every mutation, this checkout
    python benchmarks/mutation_check.py --root /tmp/old # another tree (e.g. an older commit)
    python benchmarks/mutation_check.py -k pong         # mutations whose id contains "pong"
    python benchmarks/mutation_check.py --list          # the mutations, without running

Each mutation names the tests that should catch it (files, or single tests as
``file::name``); the table ends with the mutations planted and caught per area (the base
class, Pong, classic control, concurrent, the per-env layer, its compile cache, MinAtar,
MiniGrid, the sharded env). Exit status: 1 if any mutation was missed or not applied, else
0. One pytest run per mutation, on those tests only.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

CORE = ["tests/test_core.py", "tests/test_autoreset.py", "tests/test_random.py",
        "tests/test_contract.py"]
PONG = ["tests/test_pong_rules.py", "tests/test_pong_reference.py", "tests/test_pong_env.py",
        "tests/test_pong_render.py", "tests/test_random.py"]
CLASSIC = ["tests/test_classic_control.py"]
CONCURRENT = ["tests/test_concurrent.py", "tests/test_concurrent_disabled.py"]
PERENV = "tests/test_perenv.py::"
CACHE = "tests/test_loop_cache.py::"
MINATAR = "tests/test_minatar_parity.py::"
MINIGRID = "tests/test_minigrid.py::"
SHARDED = "tests/test_sharded.py::"


@dataclass(frozen=True)
class Mutation:
    id: str
    bug: str  # what a maintainer would have got wrong
    find: str  # a snippet occurring exactly once in batchenv/
    replace: str
    tests: tuple[str, ...]
    #: the same bug in other versions of the code: (find, replace) pairs tried in order when
    #: ``find`` does not occur (code refactored since the mutation was written)
    also: tuple[tuple[str, str], ...] = ()


MUTATIONS = [
    # ---------------------------------------------------------------- base class
    Mutation("core-seed-off-by-one", "row i seeded s+i+1 instead of s+i",
             "np.arange(n, dtype=np.uint64) + np.uint64(seed), np.ones(n, dtype=bool)",
             "np.arange(n, dtype=np.uint64) + np.uint64(seed + 1), np.ones(n, dtype=bool)",
             (*CORE, "tests/test_pong_env.py")),
    Mutation("core-truncate-late", "episodes truncated one step after max_episode_steps",
             "np.greater_equal(s.elapsed_steps, self.max_episode_steps, out=self._truncated)",
             "np.greater(s.elapsed_steps, self.max_episode_steps, out=self._truncated)",
             tuple(CORE)),
    Mutation("core-box-clip-low", "Box actions clipped to the upper bound only",
             "np.clip(buffer, low, high, out=buffer)",
             "np.clip(buffer, None, high, out=buffer)",
             (*CORE, "tests/test_classic_control.py")),
    Mutation("core-discrete-accepts-n", "Discrete(n) accepts the action n",
             "u.flat[u.argmax()] >= hi_max", "u.flat[u.argmax()] > hi_max", tuple(CORE)),
    Mutation("core-reset-step-flags", "the step that resets an env keeps its old flags",
             "self._flags[:, waiting] = False  # terminated and truncated",
             "pass  # mutated", tuple(CORE)),
    Mutation("random-seed-salt", "a different seed hash (salt + 2)",
             "x += _SEED_SALT", "x += _SEED_SALT + np.uint64(2)", tuple(PONG + CORE[2:3])),
    # ---------------------------------------------------------------- Pong
    Mutation("pong-paddle-speed", "PongParams.paddle_speed 3 instead of the seed's 2",
             "paddle_speed: float = 2.0  # cells per step of the agent's paddle",
             "paddle_speed: float = 3.0  # cells per step of the agent's paddle", tuple(PONG)),
    Mutation("pong-cpu-speed", "the CPU paddle moves 1.5 cells per step instead of 1",
             "cpu_speed: float = 1.0  # cells per step of the CPU paddle",
             "cpu_speed: float = 1.5  # cells per step of the CPU paddle", tuple(PONG)),
    Mutation("pong-points-to-win", "games end at 11 points instead of 21",
             "points_to_win: int = 21  # the game ends",
             "points_to_win: int = 11  # the game ends", tuple(PONG)),
    Mutation("pong-wall-at-zero", "a ball exactly at y = 0 is reflected",
             "low, high = y < k.zero, y > k.top", "low, high = y <= k.zero, y > k.top",
             tuple(PONG)),
    Mutation("pong-reach-strict", "a ball exactly at the paddle's edge is missed",
             "hit = np.abs(offset) <= k.reach", "hit = np.abs(offset) < k.reach", tuple(PONG)),
    Mutation("pong-left-paddle-colour", "rendered left paddle (80, 200, 130), not green 120",
             "[80, 200, 120],", "[80, 200, 130],", tuple(PONG)),
    Mutation("pong-pixel-paddle-levels", "pixel frames swap ALE's paddle grey levels",
             "int, int, int, int] = (87, 236, 147, 148, 236)",
             "int, int, int, int] = (87, 236, 148, 147, 236)", tuple(PONG)),
    # ---------------------------------------------------------------- classic control
    Mutation("classic-cart-grey", "CartPole's cart drawn grey instead of black",
             "canvas.polygon(cart + (cartx, carty), BLACK)",
             "canvas.polygon(cart + (cartx, carty), (128, 128, 128))", tuple(CLASSIC)),
    Mutation("classic-pole-colour", "CartPole's pole (202, 152, 141) instead of Gymnasium's",
             "(202, 152, 101)", "(202, 152, 141)", tuple(CLASSIC)),
    Mutation("classic-sin-coefficient", "last sine coefficient off in its 16th digit",
             "-2.498795167765636e-08", "-2.498795167765646e-08", tuple(CLASSIC)),
    Mutation("classic-mountain-car-force", "MountainCar force 0.0011 instead of 0.001",
             "force: float = 0.001", "force: float = 0.0011", tuple(CLASSIC)),
    # ---------------------------------------------------------------- concurrency
    Mutation("concurrent-seed-off-by-one", "sub-env i seeded s+i+1",
             "seeds = [int(v) if g else None", "seeds = [int(v) + 1 if g else None",
             tuple(CONCURRENT), also=(("seeds = [int(seed) + i for i in range(n)]",
                                       "seeds = [int(seed) + i + 1 for i in range(n)]"),)),
    Mutation("concurrent-next-step-reward", "the NEXT_STEP reset step rewards 1, not 0",
             "lambda r: (r[0], 0.0, False, False, r[1])",
             "lambda r: (r[0], 1.0, False, False, r[1])", tuple(CONCURRENT),
             also=(("obs, info = env.reset()\n        return obs, 0.0, False, False, info",
                    "obs, info = env.reset()\n        return obs, 1.0, False, False, info"),
                   ("(checked(r, 2)[0], 0.0, False, False, r[1])",
                    "(checked(r, 2)[0], 1.0, False, False, r[1])"))),
    Mutation("concurrent-truncation-no-reset", "DISABLED: a truncated sub-env is not held",
             "self._autoreset |= done", "self._autoreset |= terminations", tuple(CONCURRENT),
             also=(("self._autoreset |= terminations | truncations",
                    "self._autoreset |= terminations"),)),
    # ---------------------------------------------------------------- the per-env layer
    Mutation("perenv-draw-mix", "the random words' second mixing shift 30 instead of 27",
             "x = (x ^ (x >> _S27)) * _MIX2", "x = (x ^ (x >> _S30)) * _MIX2",
             (PERENV + "test_random_functions_follow_batch_random",)),
    Mutation("perenv-normal-sine", "perenv.normal's Box-Muller with a sine, not a cosine",
             "r * np.cos(2.0 * np.pi * u1)", "r * np.sin(2.0 * np.pi * u1)",
             (PERENV + "test_random_functions_follow_batch_random",)),
    Mutation("loops-truncate-late", "the compiled loop truncates one step after the limit",
             "tr = elapsed >= max_steps", "tr = elapsed > max_steps",
             (PERENV + "test_per_env_equals_numpy_kernels_in_every_mode",)),
    Mutation("loops-disabled-resets", "DISABLED: the loop resets an env whose episode ended",
             "restart = op == 0 and mode != 2", "restart = op == 0",
             (PERENV + "test_disabled_mode_frozen_until_masked_reset",
              PERENV + "test_per_env_equals_numpy_kernels_in_every_mode")),
    Mutation("loops-pool-reuses-held", "the output pool reuses a set whose observation a "
             "caller holds", "and getrefcount(held[2]) == 2 and getrefcount(held[3]) == 2",
             "and getrefcount(held[2]) == 2",
             (PERENV + "test_returned_arrays_are_never_written_again",)),
    Mutation("borrow-discrete-accepts-n", "the compiled range check accepts the action n",
             "bad |= (action[i] < a) | (action[i] >= b)",
             "bad |= (action[i] < a) | (action[i] > b)",
             (PERENV + "test_bad_actions_change_nothing",
              PERENV + "test_the_compiled_check_refuses_before_any_row_changes")),
    # ---------------------------------------------------------------- the compile cache
    Mutation("cache-array-contents", "the key hashes a frozen array's shape, not its values",
             "hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest())", "\"\")",
             (CACHE + "test_the_key_follows_the_values_kernels_freeze_in",)),
    Mutation("cache-closure-cells", "the key leaves out the kernels' closure cells",
             "for cell in f.__closure__ or ():", "for cell in ():",
             (CACHE + "test_the_key_follows_the_values_kernels_freeze_in",)),
    Mutation("cache-module-attributes", "the key leaves out a module attribute a kernel reads",
             "self.add(\"module\", v.__name__)\n            if _top(v.__name__) not in _LIBRARIES:",
             "self.add(\"module\", v.__name__)\n            if False:",
             (CACHE + "test_the_key_changes_with_each_thing_the_loop_reads_and_only_then",)),
    Mutation("cache-off-ignored", "BATCHENV_CACHE_DIR=\"\" does not turn the cache off",
             "return Path(chosen).expanduser() if chosen else None",
             "return Path(chosen).expanduser()",
             (CACHE + "test_the_cache_directory_follows_the_environment",)),
    # ---------------------------------------------------------------- MinAtar
    Mutation("minatar-breakout-corner", "Breakout: the paddle's corner does not turn the ball",
             "if x == s.pos[i]:  # its corner: back the way it came\n        "
             "s.ball_dx[i] = -s.ball_dx[i]\n",
             "if x == s.pos[i]:  # its corner: back the way it came\n", (
                 MINATAR + "test_breakout_random_policy",)),
    Mutation("minatar-freeway-speed", "Freeway: the chicken moves every 2 steps, not 3",
             "PLAYER_SPEED = 3", "PLAYER_SPEED = 2", (MINATAR + "test_freeway_random_policy",)),
    Mutation("minatar-asterix-gold", "Asterix: a spawn is gold with probability 1/4, not 1/3",
             "GOLD_PROB = 1 / 3", "GOLD_PROB = 1 / 4", (MINATAR + "test_asterix_random_policy",)),
    Mutation("minatar-seaquest-oxygen", "Seaquest: 190 oxygen, not 200",
             "MAX_OXYGEN = 200", "MAX_OXYGEN = 190", ("tests/test_minatar_seaquest.py",)),
    Mutation("minatar-invaders-cool-down", "Space Invaders: the cannon's cool-down 4, not 5",
             "SHOT_COOL_DOWN = 5  # shot_cool_down: steps between the cannon's shots",
             "SHOT_COOL_DOWN = 4  # shot_cool_down: steps between the cannon's shots",
             ("tests/test_minatar_space_invaders.py",)),
    # ---------------------------------------------------------------- MiniGrid
    Mutation("minigrid-goal-reward", "the goal pays 1 - 0.8 * steps / max_steps, not 0.9",
             "return 1.0 - 0.9 * (s.step_count[i] / p.max_steps), True",
             "return 1.0 - 0.8 * (s.step_count[i] / p.max_steps), True",
             (MINIGRID + "test_doorkey_reward_on_goal", MINIGRID + "test_empty_parity")),
    Mutation("minigrid-lava-harmless", "stepping into lava does not end the episode",
             "return 0.0, t == LAVA", "return 0.0, False", (MINIGRID + "test_lavagap_parity",)),
    Mutation("minigrid-door-stays-open", "toggling an open door leaves it open",
             "s.grid[i, fx, fy, 2] = CLOSED if st == OPEN else OPEN",
             "s.grid[i, fx, fy, 2] = OPEN", (MINIGRID + "test_doorkey_parity",
                                             MINIGRID + "test_unlock_parity")),
    # ---------------------------------------------------------------- the sharded env
    Mutation("sharded-seed-same", "every shard seeded s, not s + its first row",
             "return int(seed) + a", "return int(seed)",
             (SHARDED + "test_row_i_is_a_batch_of_one_seeded_s_plus_i",
              SHARDED + "test_same_as_unsharded")),
    Mutation("sharded-seed-list-reversed", "a shard's slice of a seed list reversed",
             "list(seed)[a:b]]", "list(seed)[a:b][::-1]]", (SHARDED + "test_same_as_unsharded",)),
    Mutation("sharded-info-rows", "every shard's step infos placed at the batch's first rows",
             "_merge_info(info, extra, self.bounds[k] - a, b - a)",
             "_merge_info(info, extra, 0, b - a)",
             (SHARDED + "test_step_infos_come_through_the_pipe",)),
]


def locate(tree: Path, snippet: str) -> list[Path]:
    """Files under tree/batchenv containing snippet, once per occurrence."""
    hits = []
    for path in sorted((tree / "batchenv").rglob("*.py")):
        hits += [path] * path.read_text().count(snippet)
    return hits


#: Each mutation's area (the prefix of its id) as the table of areas names it.
AREAS = {"core": "base class", "random": "base class", "pong": "Pong", "classic":
         "classic control", "concurrent": "concurrent", "perenv": "per-env layer",
         "loops": "per-env layer", "borrow": "per-env layer", "cache": "compile cache",
         "minatar": "MinAtar", "minigrid": "MiniGrid", "sharded": "sharded"}


def run(root: Path, m: Mutation, timeout: float, cache: Path) -> tuple[str, str, float]:
    """(status, detail, seconds) of one mutation on a fresh copy of root. The per-env loops'
    compile cache is ``cache`` (shared by the mutations: its keys hash the loop's files and
    the kernels, so a mutated one is compiled afresh), except for mutations of the cache
    itself, which get an empty one of their own."""
    with tempfile.TemporaryDirectory(prefix="batchenv-mut-") as tmp:
        tree = Path(tmp)
        shutil.copytree(root / "batchenv", tree / "batchenv",
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(root / "tests", tree / "tests",
                        ignore=shutil.ignore_patterns("__pycache__"))
        for extra in ("pyproject.toml", "conftest.py", "README.md", "docs", "examples",
                      "benchmarks"):
            src = root / extra
            if src.is_dir():
                shutil.copytree(src, tree / extra, ignore=shutil.ignore_patterns("__pycache__"))
            elif src.exists():
                shutil.copy(src, tree / extra)
        pairs = ((m.find, m.replace), *m.also)
        find, replace = next(((f, r) for f, r in pairs if locate(tree, f)), pairs[0])
        hits = locate(tree, find)
        if len(hits) != 1:
            return "not applied", f"snippet found {len(hits)} times", 0.0
        path = hits[0]
        path.write_text(path.read_text().replace(find, replace))
        tests = [t for t in m.tests if (tree / t.partition("::")[0]).exists()]
        env = {k: v for k, v in os.environ.items() if k != "CI"}  # skips are not failures here
        env["PYTHONPATH"] = str(tree)  # the mutated copy, also in the tests' subprocesses
        env["BATCHENV_CACHE_DIR"] = str(tree / "loop-cache" if m.id.startswith("cache-")
                                        else cache)
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
               "-p", "no:randomly", *dict.fromkeys(tests)]
        t0 = time.perf_counter()
        try:
            out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True,
                                 timeout=timeout)
        except subprocess.TimeoutExpired:
            return "caught", f"(timed out after {timeout:.0f} s)", time.perf_counter() - t0
        seconds = time.perf_counter() - t0
        text = out.stdout + out.stderr
        if out.returncode == 0:
            return "MISSED", _summary(text), seconds
        failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", text, re.M)
        if failed:
            return "caught", failed[0], seconds
        return "caught", f"(pytest exit {out.returncode}) " + _summary(text), seconds


def _summary(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                    help="tree to mutate (a checkout with batchenv/ and tests/)")
    ap.add_argument("-k", default="", help="only mutations whose id contains this")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per pytest run")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    args = ap.parse_args()
    chosen = [m for m in MUTATIONS if args.k in m.id]
    if args.list:
        for m in chosen:
            print(f"{m.id:32} {m.bug}")
        return 0
    root = args.root.resolve()
    print(f"mutating copies of {root} ({len(chosen)} mutations)\n")
    print("| mutation | bug | result | first failing test (or pytest's summary) | s |")
    print("|---|---|---|---|---:|")
    bad = 0
    areas: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory(prefix="batchenv-mut-cache-") as cache:
        for m in chosen:
            status, detail, seconds = run(root, m, args.timeout, Path(cache))
            bad += status != "caught"
            tally = areas.setdefault(AREAS.get(m.id.split("-")[0], "other"), [0, 0])
            tally[0] += 1
            tally[1] += status == "caught"
            print(f"| {m.id} | {m.bug} | {status} | {detail} | {seconds:.0f} |", flush=True)
    print("\n| area | planted | caught |\n|---|---:|---:|")
    for area, (planted, caught) in areas.items():
        print(f"| {area} | {planted} | {caught} |")
    print(f"\n{len(chosen) - bad} of {len(chosen)} mutations caught")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
