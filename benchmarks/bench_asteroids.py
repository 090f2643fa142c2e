"""Asteroids (docs/examples) three ways, interleaved in one run: the per-env kernels compiled
by numba (one thread), the same rules as numpy kernels, and the plain-Python scalar
reference stepped env by env in a loop (observation included, finished games restarted);
also the per-env functions as a Python loop (``kernels="python"``). Then the lines of code
of each form's rules.

    python benchmarks/bench_asteroids.py [--num-envs 4096] [--rounds 5] [--steps 50]

Prints ns per env-step (CPU time, median of rounds) and the ratios. The slow loops step
``--slow-steps`` steps per round (their per-env-step cost does not depend on the count).
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"
sys.path.insert(0, str(EXAMPLES))
from asteroids_numpy import NumpyAsteroids  # noqa: E402
from asteroids_perenv import Asteroids  # noqa: E402
from asteroids_reference import AsteroidsGame  # noqa: E402


def batched(env, actions: np.ndarray) -> Callable[[], None]:
    def run() -> None:
        for a in actions:
            env.step(a)
    return run


def python_loop(games: list[AsteroidsGame], actions: np.ndarray) -> Callable[[], None]:
    def run() -> None:
        for a in actions:
            for game, action in zip(games, a.tolist()):
                _, done = game.step(action)
                if done:
                    game.reset()
                game.observation()
    return run


def ns_per_env_step(run: Callable[[], None], env_steps: int) -> float:
    start = time.process_time()
    run()
    return (time.process_time() - start) / env_steps * 1e9


def lines_of_code(path: Path, names: set[str]) -> int:
    """Lines of the functions and methods called ``names`` in ``path``, without blank lines,
    comments and docstrings."""
    source = path.read_text().splitlines()
    tree = ast.parse("\n".join(source))
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in names:
            start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            body = node.body
            if (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                skip = set(range(body[0].lineno, body[0].end_lineno + 1))
            else:
                skip = set()
            for n in range(start, node.end_lineno + 1):
                text = source[n - 1].strip()
                if n not in skip and text and not text.startswith("#"):
                    lines.add(n)
    return len(lines)


RULES = {
    "per-env kernels": (EXAMPLES / "asteroids_perenv.py",
                        {"wrap", "torus_delta", "distance2", "steer_ship", "move_bullets",
                         "fire", "move_rocks", "split_rock", "shoot_rocks", "ship_crashed",
                         "cleared", "reset_env", "step_env", "observe_env"}),
    "numpy kernels": (EXAMPLES / "asteroids_numpy.py",
                      {"wrap", "torus_delta", "distance2", "steer_ship", "move_bullets",
                       "fire", "move_rocks", "split_rocks", "shoot_rocks", "ship_crashed",
                       "reset_envs", "step_envs", "observe"}),
    "plain Python": (EXAMPLES / "asteroids_reference.py",
                     {"wrap", "delta", "distance2", "reset", "step", "_split", "observation"}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--slow-steps", type=int, default=2)
    args = parser.parse_args()
    n = args.num_envs
    rng = np.random.default_rng(0)
    fast = [rng.integers(0, 5, (args.steps, n)) for _ in range(args.rounds)]
    slow = [a[:args.slow_steps] for a in fast]

    per_env = Asteroids(n, kernels="numba", num_threads=1)
    numpy_form = NumpyAsteroids(n)
    python_kernels = Asteroids(n, kernels="python")
    for env in (per_env, numpy_form, python_kernels):
        env.reset(seed=0)
    per_env.step(fast[0][0])                      # compile outside the timed rounds
    starts = numpy_form.get_state()
    games = [AsteroidsGame(0, 0) for _ in range(n)]
    for game, record in zip(games, starts):
        game.load(record)

    cases = {
        "per-env, numba, 1 thread": lambda r: (batched(per_env, fast[r]), args.steps),
        "numpy kernels": lambda r: (batched(numpy_form, fast[r]), args.steps),
        "plain Python loop (reference)": lambda r: (python_loop(games, slow[r]),
                                                     args.slow_steps),
        "per-env, kernels='python'": lambda r: (batched(python_kernels, slow[r]),
                                                args.slow_steps),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for r in range(args.rounds):
        for name, case in cases.items():              # interleaved: every case each round
            run, steps = case(r)
            times[name].append(ns_per_env_step(run, steps * n))
    median = {name: statistics.median(t) for name, t in times.items()}

    print(f"Asteroids, {n} envs, one thread, ns per env-step (CPU time, median of "
          f"{args.rounds} rounds; {args.steps} steps per round, {args.slow_steps} for the "
          f"loops)")
    compiled = median["per-env, numba, 1 thread"]
    for name, ns in median.items():
        print(f"  {name:32s} {ns:12,.1f}   compiled per-env is {ns / compiled:8.1f}x faster")
    print("lines of the rules (functions only: no blank lines, comments, docstrings; the "
          "constants and the schema, shared, not counted)")
    for form, (path, names) in RULES.items():
        print(f"  {form:16s} {lines_of_code(path, names):4d}   {path.name}")


if __name__ == "__main__":
    main()
