"""The bfloat16 autocast of docs/examples/ppo_minatar.py, A/B: one PPO minibatch step
(forward, backward, Adam) of its Agent on Breakout-shaped observations, float32 against
bfloat16 autocast, the two alternating in one process.

    PYTHONPATH=. python benchmarks/bench_ppo_minatar_bf16.py [--rounds 25] [--threads 2]

Prints the median time of a step per precision (and its 10th/90th percentiles) and the
float32/bfloat16 ratio of each round (median and range). Figures: docs/minatar.md
("Learning"). Needs torch.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as the example does

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "examples"))
from ppo_minatar import Agent  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=25)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--minibatch", type=int, default=2048)
    p.add_argument("--steps-per-round", type=int, default=4)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    obs = torch.rand(args.minibatch, 10, 10, 4) > 0.8  # Breakout: 4 channels, 3 actions
    times: dict[bool, list[float]] = {False: [], True: []}
    agents = {bf16: Agent(4, 3, 16, 128) for bf16 in times}
    optims = {bf16: torch.optim.Adam(agents[bf16].parameters(), lr=1e-4) for bf16 in times}
    for _ in range(args.rounds):
        for bf16 in (False, True):
            start = time.perf_counter()
            for _ in range(args.steps_per_round):
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                    logits, value = agents[bf16](obs)
                loss = logits.float().logsumexp(-1).mean() + value.float().pow(2).mean()
                optims[bf16].zero_grad(set_to_none=True)
                loss.backward()
                optims[bf16].step()
            times[bf16].append((time.perf_counter() - start) / args.steps_per_round)
    for bf16, ts in times.items():
        q = statistics.quantiles(ts, n=10)
        print(f"{'bfloat16' if bf16 else 'float32 '}: median {statistics.median(ts) * 1e3:.1f} ms"
              f" (p10 {q[0] * 1e3:.1f}, p90 {q[-1] * 1e3:.1f})")
    ratios = [a / b for a, b in zip(times[False], times[True])]
    print(f"float32 / bfloat16 per round: median {statistics.median(ratios):.2f}, "
          f"range {min(ratios):.2f}-{max(ratios):.2f} ({args.rounds} rounds, "
          f"{args.threads} threads, minibatch {args.minibatch})")


if __name__ == "__main__":
    main()
