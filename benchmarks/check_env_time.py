"""Wall time of ``check_env`` at its defaults: docs/first_env.md's example envs (Walk, Trail,
Push) and every registered id.

    python benchmarks/check_env_time.py               # everything
    python benchmarks/check_env_time.py --only Walk,batchenv/Pong-v0

Each subject once, in this process (numba layers compile on first use: their first
construction is inside the timed call, as an author's first check_env would see it).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import types
from typing import Any

import batchenv
from batchenv.testing import check_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def doc_envs() -> dict[str, Any]:
    """The classes defined by docs/first_env.md's code blocks, run in order (in a module of
    their own, so that check_env's pickling check can find them)."""
    with open(os.path.join(ROOT, "docs", "first_env.md")) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), flags=re.S)
    module = sys.modules["first_env_docs"] = types.ModuleType("first_env_docs")  # picklable
    space = vars(module)
    for block in blocks:
        if "check_env(" in block or "contract_checks(" in block or "Forgetful" in block:
            continue  # the page's own check_env calls: timed here instead
        exec(block, space)  # noqa: S102 - the docs' own examples
    return {name: space[name] for name in ("Walk", "Trail", "Push")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated names or ids")
    args = parser.parse_args()
    subjects: dict[str, Any] = {**doc_envs(), **{i: i for i in batchenv.list_envs()}}
    if args.only:
        subjects = {k: v for k, v in subjects.items() if k in args.only.split(",")}
    print(f"{'env':40s} {'seconds':>8s}  result")
    for name, env in subjects.items():
        start = time.perf_counter()
        try:
            report = check_env(env)
            result = f"{len(report.passed)} checks passed"
        except AssertionError as e:
            result = str(e).splitlines()[0]
        print(f"{name:40s} {time.perf_counter() - start:8.1f}  {result}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
