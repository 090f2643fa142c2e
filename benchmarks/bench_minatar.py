"""MinAtar games: batchenv at 4096 envs vs MinAtar's own loop and vs gymnax, in one run.

    python benchmarks/bench_minatar.py                       # all games, ~2 min
    python benchmarks/bench_minatar.py --games breakout --rounds 5 --no-gymnax
    python benchmarks/bench_minatar.py --games seaquest --no-gymnax --ref 684e38e  # before/after

For each game, in rounds that alternate the contenders (medians over rounds):

* batchenv: ``BatchX(num_envs)`` with its defaults (sticky actions 0.1, NEXT_STEP
  auto-reset, validation on, copies returned, ``kernels="auto"``: its per-env kernels
  compiled when numba is installed), random actions; seconds per env-step;
* the same game with ``kernels="numpy"`` (its numpy kernels), when the default runs the
  per-env kernels: the A/B of the two forms, in the same rounds;
* MinAtar 1.0.15's own loop, one env: ``act(a)`` then ``state()`` per step, ``reset()`` on
  a terminal (``minatar.Environment``, sticky actions 0.1);
* gymnax (if ``--gymnax-python`` exists: a venv with gymnax and jax, see docs/minatar.md):
  the same game (``<Game>-MinAtar``) under ``jax.jit(jax.vmap(env.step))`` at the same
  ``num_envs`` on the CPU, run in a subprocess that times one block per round when asked,
  so its rounds interleave with ours. gymnax auto-resets inside ``step`` and returns the
  observation, as ours does.

With ``--ref REV``, that git revision's game (its ``batchenv`` extracted by ``git archive``
and imported beside this one, as ``benchmarks/ab_versions.py`` does) runs in the same rounds:
a before/after of a change, each against MinAtar's loop under the same load.

Times are both wall-clock and CPU time (``time.process_time``: ours and MinAtar's run
single-threaded in this process, so under a loaded machine their CPU times are the cleaner
measure; gymnax's child may use more than one thread, so for it the wall clock is the fair
one, and its CPU time counts all its threads). Also the memory per env at 65536 envs
(tracemalloc: everything the env allocates, state and buffers, over construction,
``reset`` and one ``step``) and the state record's size.
Report ratios only; the machine is shared, so absolute times vary from run to run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))  # ab_versions, for --ref

import batchenv.envs.minatar as minatar_envs  # noqa: E402

GAMES = {"asterix": "BatchAsterix", "breakout": "BatchBreakout", "freeway": "BatchFreeway",
         "seaquest": "BatchSeaquest", "space_invaders": "BatchSpaceInvaders"}
GYMNAX_NAMES = {"asterix": "Asterix-MinAtar", "breakout": "Breakout-MinAtar",
                "freeway": "Freeway-MinAtar", "seaquest": "Seaquest-MinAtar",
                "space_invaders": "SpaceInvaders-MinAtar"}  # gymnax 1.0.1 has all five
DEFAULT_GYMNAX_PYTHON = "/work/venvs/gymnax/bin/python"

# The gymnax side, run by the venv's python: compile, then time `steps` steps per request.
GYMNAX_CHILD = r"""
import sys, time
import jax, jax.numpy as jnp, gymnax
name, n = sys.argv[1], int(sys.argv[2])
env, params = gymnax.make(name)
vstep = jax.vmap(env.step, in_axes=(0, 0, 0, None))

@jax.jit
def step(key, state, action):
    key, sub = jax.random.split(key)
    out = vstep(jax.random.split(sub, n), state, action, params)
    obs, state, reward, done = out[:4]  # (gymnax 1.0 also returns more after done)
    return key, state, obs, reward, done

key = jax.random.PRNGKey(0)
obs, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(jax.random.split(key, n), params)
actions = jax.random.randint(key, (16, n), 0, env.num_actions)
key, state, obs, reward, done = step(key, state, actions[0])
jax.block_until_ready(obs)
print("ready", flush=True)
for line in sys.stdin:
    steps = int(line)
    t0, c0 = time.perf_counter(), time.process_time()
    for t in range(steps):
        key, state, obs, reward, done = step(key, state, actions[t % 16])
    jax.block_until_ready((obs, reward, done))
    print((time.perf_counter() - t0) / steps, (time.process_time() - c0) / steps, flush=True)
"""


class Gymnax:
    """A gymnax timing process; ``time(steps)`` runs one block there."""

    def __init__(self, python: str, game: str, n: int) -> None:
        self.proc = subprocess.Popen([python, "-c", GYMNAX_CHILD, GYMNAX_NAMES[game], str(n)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"gymnax child failed to start ({line!r})")

    def time(self, steps: int) -> tuple[float, float]:
        """Wall and CPU seconds per step (CPU: all of the child's threads)."""
        self.proc.stdin.write(f"{steps}\n")
        self.proc.stdin.flush()
        wall, cpu = self.proc.stdout.readline().split()
        return float(wall), float(cpu)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def empty_rules_class() -> type:
    """A MinAtar env with Breakout's spaces and no rules: the base class, the sticky draw
    and writing a 4-channel observation, i.e. what every game pays before its own rules."""
    from batchenv.envs.minatar._base import STICKY_FIELDS, MinAtarEnv

    class EmptyRules(MinAtarEnv):
        game, channels, minimal_actions = "breakout", ("a", "b", "c", "d"), (0, 1, 3)
        state_dtype = np.dtype([("x", np.int8), *STICKY_FIELDS])

        def reset_envs(self, s, rng):
            s.x[:] = 0

        def step_envs(self, s, action, rng):
            self.game_actions(s, action, self.step_draws(s, rng)[0])
            self.reward_buffer.fill(0.0)
            self.terminated_buffer.fill(False)
            return self.reward_buffer, self.terminated_buffer

        def observe(self, s, out):
            out.fill(False)

    return EmptyRules


def empty_rules_per_env_class() -> type:
    """The floor in the per-env form (compiled: the sticky draw, the clear of the
    observation and the base class's per-step work in one pass): what a game on per-env
    kernels pays before its own rules."""
    from batchenv.envs.minatar._base import clear_board, sticky_action_env

    class EmptyRulesPerEnv(empty_rules_class()):
        @staticmethod
        def reset_env(p, s, i):
            s.x[i] = 0

        @staticmethod
        def step_env(p, s, i, action):
            sticky_action_env(p, s, i, action)
            return 0.0, False

        @staticmethod
        def observe_env(p, s, i, obs):
            clear_board(obs)

    return EmptyRulesPerEnv


def batch_timer(cls: type, n: int, **kwargs):
    env = cls(n, **kwargs)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, env.single_action_space.n, n) for _ in range(16)]
    for t in range(10):
        env.step(actions[t % 16])

    def run(steps: int) -> tuple[float, float]:
        t0, c0 = time.perf_counter(), time.process_time()
        for t in range(steps):
            env.step(actions[t % 16])
        return (time.perf_counter() - t0) / steps, (time.process_time() - c0) / steps

    return run


def minatar_timer(game: str):
    from minatar import Environment

    env = Environment(game)
    env.seed(0)
    env.reset()
    actions = np.random.default_rng(1).integers(0, 6, 4096).tolist()

    def run(steps: int) -> tuple[float, float]:
        act, state, reset = env.act, env.state, env.reset
        t0, c0 = time.perf_counter(), time.process_time()
        for t in range(steps):
            _, done = act(actions[t % 4096])
            state()
            if done:
                reset()
        return (time.perf_counter() - t0) / steps, (time.process_time() - c0) / steps

    return run


def memory_per_env(cls: type, n: int) -> tuple[float, int]:
    """Bytes allocated per env (construction, reset, one step) and the state record size."""
    tracemalloc.start()
    env = cls(n)
    env.reset(seed=0)
    env.step(np.zeros(n, dtype=np.int64))
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return current / n, env.full_state_dtype.itemsize


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", nargs="+", default=None, choices=sorted(GAMES))
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--block", type=float, default=0.3, help="seconds per timed block")
    parser.add_argument("--memory-envs", type=int, default=65536)
    parser.add_argument("--gymnax-python", default=DEFAULT_GYMNAX_PYTHON)
    parser.add_argument("--no-gymnax", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here")
    parser.add_argument("--ref", default=None,
                        help="also time this git revision's game in the same rounds")
    parser.add_argument("--floor", action="store_true",
                        help="also time a game with no rules (Breakout's spaces) against "
                             "MinAtar's Breakout: the cost every game pays before its rules "
                             "(floor: numpy; floor-perenv: per-env kernels, compiled, "
                             "when numba is installed)")
    parser.add_argument("--threads", type=int, default=None,
                        help="also time the game on this many threads (num_threads=, "
                             "per-env kernels) in the same rounds: wall-clock ratio")
    args = parser.parse_args(argv)
    games = args.games or [g for g in GAMES if hasattr(minatar_envs, GAMES[g])]
    if args.floor:
        games = [*games, "floor"]
        from batchenv.perenv import numba_available

        if numba_available():
            games.append("floor-perenv")
    use_gymnax = not args.no_gymnax and Path(args.gymnax_python).exists()
    n = args.num_envs
    ref_pkg = None
    if args.ref:
        from ab_versions import extract, load_package

        tmp = tempfile.mkdtemp()
        ref_pkg = load_package(extract(args.ref, tmp))
    print(f"MinAtar at num_envs={n}: time per env-step, medians of {args.rounds} "
          f"interleaved rounds (machine shared: compare ratios)", flush=True)
    rows = []
    for game in games:
        cls = (empty_rules_class() if game == "floor" else empty_rules_per_env_class()
               if game == "floor-perenv" else getattr(minatar_envs, GAMES[game]))
        ours, ref = batch_timer(cls, n), minatar_timer(cls.game)
        layer = getattr(cls(1), "kernels", "numpy")
        numpy_layer = batch_timer(cls, n, kernels="numpy") \
            if layer == "numba" and game != "floor-perenv" else None
        threaded = batch_timer(cls, n, num_threads=args.threads) \
            if args.threads and cls(1).__dict__.get("_per_env") is not None else None
        before = (batch_timer(getattr(ref_pkg, GAMES[game]), n)
                  if ref_pkg is not None and not game.startswith("floor") else None)
        gx = Gymnax(args.gymnax_python, game, n) if use_gymnax and game in GYMNAX_NAMES \
            else None
        # block sizes from one probe each, so every block lasts about --block seconds
        ours_steps = max(3, int(args.block / ours(3)[0]))
        ref_steps = max(100, int(args.block / ref(200)[0]))
        gx_steps = max(3, int(args.block / gx.time(3)[0])) if gx else 0
        before_steps = max(3, int(args.block / before(3)[0])) if before else 0
        np_steps = max(3, int(args.block / numpy_layer(3)[0])) if numpy_layer else 0
        th_steps = max(3, int(args.block / threaded(3)[0])) if threaded else 0
        names = ("ours", "minatar", "gymnax", "ref", "numpy", "threads")
        wall: dict[str, list[float]] = {k: [] for k in names}
        cpu: dict[str, list[float]] = {k: [] for k in names}
        for _ in range(args.rounds):
            for name, (w, c) in [("ours", ours(ours_steps)), ("minatar", ref(ref_steps)),
                                 *([("numpy", numpy_layer(np_steps))] if numpy_layer else []),
                                 *([("threads", threaded(th_steps))] if threaded else []),
                                 *([("gymnax", gx.time(gx_steps))] if gx else []),
                                 *([("ref", before(before_steps))] if before else [])]:
                per = n if name != "minatar" else 1  # seconds per env-step
                wall[name].append(w / per)
                cpu[name].append(c / per)
        if gx:
            gx.close()
        mw = {k: statistics.median(v) for k, v in wall.items() if v}
        mc = {k: statistics.median(v) for k, v in cpu.items() if v}
        per_round = [m / o for m, o in zip(cpu["minatar"], cpu["ours"])]
        mem, record = memory_per_env(cls, args.memory_envs)
        row = {"game": game, "num_envs": n, "kernels": layer,
               "ours_ns_per_env_step_cpu": mc["ours"] * 1e9,
               "minatar_ns_per_step_cpu": mc["minatar"] * 1e9,
               "x_minatar_cpu": mc["minatar"] / mc["ours"],
               "x_minatar_cpu_rounds": [round(r, 1) for r in per_round],
               "x_minatar_wall": mw["minatar"] / mw["ours"],
               "gymnax_ns_per_env_step_wall": mw["gymnax"] * 1e9 if gx else None,
               "x_gymnax_wall": mw["gymnax"] / mw["ours"] if gx else None,
               "x_gymnax_cpu": mc["gymnax"] / mc["ours"] if gx else None,
               "numpy_x_minatar_cpu": mc["minatar"] / mc["numpy"] if numpy_layer else None,
               "x_numpy_cpu": mc["numpy"] / mc["ours"] if numpy_layer else None,
               "threads": args.threads if threaded else None,
               "threads_x_one_wall": mw["ours"] / mw["threads"] if threaded else None,
               "ref": args.ref if before else None,
               "ref_x_minatar_cpu": mc["minatar"] / mc["ref"] if before else None,
               "x_ref_cpu": mc["ref"] / mc["ours"] if before else None,
               "bytes_per_env_at": args.memory_envs, "bytes_per_env": mem,
               "state_record_bytes": record}
        rows.append(row)
        gx_text = (f"x gymnax {row['x_gymnax_wall']:5.2f} wall, {row['x_gymnax_cpu']:5.2f} "
                   f"CPU" if gx else "gymnax -")
        print(f"{game:<15} ours {row['ours_ns_per_env_step_cpu']:6.1f} ns  MinAtar "
              f"{row['minatar_ns_per_step_cpu']:7.0f} ns (CPU)  x MinAtar "
              f"{row['x_minatar_cpu']:5.1f} CPU (rounds {min(per_round):.0f}-"
              f"{max(per_round):.0f}), {row['x_minatar_wall']:5.1f} wall  {gx_text}  memory "
              f"{mem:5.0f} B/env at {args.memory_envs} (state record {record} B)",
              flush=True)
        if numpy_layer:
            print(f"{'':<15} (ours: kernels={layer!r}) kernels='numpy': "
                  f"{mc['numpy'] * 1e9:6.1f} ns (CPU), x MinAtar "
                  f"{row['numpy_x_minatar_cpu']:5.1f} CPU; ours is {row['x_numpy_cpu']:.2f}x "
                  f"faster", flush=True)
        if threaded:
            print(f"{'':<15} num_threads={args.threads}: {mw['threads'] * 1e9:6.1f} ns (wall); "
                  f"{row['threads_x_one_wall']:.2f}x one thread (wall)", flush=True)
        if before:
            print(f"{'':<15} {args.ref}: {mc['ref'] * 1e9:6.1f} ns (CPU), x MinAtar "
                  f"{row['ref_x_minatar_cpu']:5.1f} CPU; this checkout is "
                  f"{row['x_ref_cpu']:.2f}x faster", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return rows


if __name__ == "__main__":
    main()
