"""PPO on Crafter (batchenv's BatchCrafter) from its symbolic observation, with Hafner's
Crafter score. One file, CleanRL style: read it top to bottom.

    nice -n 10 python docs/examples/ppo_crafter.py --time-limit 1500 --plot

The observation is ``obs_type="symbolic"`` (docs/crafter.md, "The symbolic observation"):
1156 floats, the 9 x 7 cells around the player one-hot (material and creature), the
inventory / 9, the facing, the daylight and whether asleep. The network is a two-layer MLP
shared by an actor and a critic, as Craftax's PPO baseline on its symbolic Classic.

The reward is crafter's (+1 for each achievement's first unlock in an episode, +-0.1 per
point of health). What the run reports is the **Crafter score** (Hafner, "Benchmarking the
Spectrum of Agent Capabilities", 2022): each of the 22 achievements' success rate ``s_i``
in percent (the share of episodes that unlocked it at least once), and their geometric
mean ``exp(mean(ln(1 + s_i))) - 1``, over the last ``--score-window`` finished episodes.
The achievements come from ``info["final_info"]["achievements"]`` (SAME_STEP mode: the
finished episodes' unlock counts, in ``sorted(crafter.constants.achievements)`` order).
A random policy scores about 1.6%, the Crafter paper's PPO at 1M steps 4.6%.

Writes the episode returns as CSV (``--csv``), the score after every update as
``<csv>_score.csv``, a summary as JSON next to it, and with ``--plot`` the score curve as
PNG. Needs ``torch`` (the CPU build is enough), ``tqdm`` and, for ``--plot``,
``matplotlib``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from collections import deque
from pathlib import Path

# Idle OpenMP threads sleep instead of spinning (a machine shared with other jobs).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from gymnasium.vector import AutoresetMode  # noqa: E402
from gymnasium.wrappers.vector import RecordEpisodeStatistics  # noqa: E402
from torch import nn  # noqa: E402
from tqdm import tqdm  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ppo_common import EpisodeLog, Stopwatch  # noqa: E402

import batchenv  # noqa: E402
from batchenv.envs.crafter import ACHIEVEMENTS  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--total-steps", type=int, default=50_000_000,
                   help="environment steps (all envs) to train for")
    p.add_argument("--num-envs", type=int, default=256, help="worlds played at once")
    p.add_argument("--max-episode-steps", type=int, default=None,
                   help="env option (default: crafter's length, 10,000)")
    p.add_argument("--num-steps", type=int, default=64, help="steps per env per rollout")
    p.add_argument("--num-minibatches", type=int, default=8)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--learning-rate", type=float, default=3e-4)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.8)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=1.0)
    p.add_argument("--hidden", type=int, default=256, help="the MLP's width")
    p.add_argument("--threads", type=int, default=2, help="torch threads")
    p.add_argument("--score-window", type=int, default=1000,
                   help="finished episodes the Crafter score is computed over")
    p.add_argument("--time-limit", type=float, default=None,
                   help="stop after this many seconds of wall time")
    p.add_argument("--csv", default="runs/ppo_crafter_s{seed}.csv",
                   help="episode returns, one row per finished episode; the score per "
                        "update and the summary JSON go next to it")
    p.add_argument("--plot", nargs="?", const="", default=None, metavar="PNG",
                   help="draw the score curve (default path: the CSV's, as .png)")
    p.add_argument("--log-interval", type=float, default=30.0,
                   help="seconds between log lines")
    args = p.parse_args(argv)
    args.batch_size = args.num_envs * args.num_steps
    args.minibatch_size = args.batch_size // args.num_minibatches
    args.num_updates = max(1, args.total_steps // args.batch_size)
    args.csv = args.csv.format(seed=args.seed)
    return args


# ------------------------------------------------------------------------- the score
def crafter_score(unlocked: np.ndarray) -> tuple[float, np.ndarray]:
    """Hafner's score (percent) and the success rates (percent) of ``unlocked``, a
    (episodes, 22) bool array: which achievements each episode unlocked."""
    rates = 100.0 * unlocked.mean(axis=0)
    return float(np.exp(np.log1p(rates).mean()) - 1.0), rates


# ------------------------------------------------------------------------- the network
def layer_init(layer: nn.Module, std: float = np.sqrt(2), bias: float = 0.0) -> nn.Module:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


class Agent(nn.Module):
    """A two-layer MLP (tanh) shared by the actor and the critic heads."""

    def __init__(self, obs_size: int, num_actions: int, hidden: int) -> None:
        super().__init__()
        self.trunk = nn.Sequential(
            layer_init(nn.Linear(obs_size, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh())
        self.actor = layer_init(nn.Linear(hidden, num_actions), std=0.01)
        self.critic = layer_init(nn.Linear(hidden, 1), std=1.0)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.trunk(obs)
        return self.actor(hidden), self.critic(hidden).squeeze(-1)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.forward(obs)[1]


# ------------------------------------------------------------------------- training
def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    load_at_start = os.getloadavg()  # the machine is shared: the summary says how busy
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    limit = {} if args.max_episode_steps is None else {"max_episode_steps": args.max_episode_steps}
    envs = RecordEpisodeStatistics(batchenv.make(
        "batchenv/Crafter-v1", args.num_envs, obs_type="symbolic",
        autoreset_mode=AutoresetMode.SAME_STEP, copy=False, **limit))
    num_actions = int(envs.single_action_space.n)
    obs_size = envs.single_observation_space.shape[0]
    agent = Agent(obs_size, num_actions, args.hidden)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    T, N = args.num_steps, args.num_envs
    obs_buf = torch.zeros((T, N, obs_size))
    actions = torch.zeros((T, N), dtype=torch.int64)
    logprobs = torch.zeros((T, N))
    rewards = torch.zeros((T, N))
    dones = torch.zeros((T, N))  # 1 where the episode ended (terminated or truncated) at t
    values = torch.zeros((T, N))

    log = EpisodeLog(args.csv)
    unlocked: deque[np.ndarray] = deque(maxlen=args.score_window)  # finished episodes
    score_path = Path(args.csv).with_name(Path(args.csv).stem + "_score.csv")
    score_file = open(score_path, "w", newline="")  # noqa: SIM115 (closed below)
    score_csv = csv.writer(score_file)
    score_csv.writerow(["global_step", "wall_time_s", "episodes", "crafter_score"])
    clock = Stopwatch()
    global_step, score, best_score, stats = 0, float("nan"), float("nan"), {}
    obs_np, _ = envs.reset(seed=args.seed)
    next_obs = torch.from_numpy(obs_np.copy())
    bar = tqdm(total=args.num_updates * args.batch_size, unit="step", unit_scale=True,
               mininterval=1.0, smoothing=0.05, dynamic_ncols=True)
    last_log = 0.0

    for _update in range(1, args.num_updates + 1):
        # 1. Collect a rollout with the current policy.
        for t in range(T):
            obs_buf[t] = next_obs
            with clock("policy"), torch.inference_mode():
                logits, value = agent(next_obs)
                logp_all = torch.log_softmax(logits, dim=-1)
                action = torch.multinomial(logp_all.exp(), 1).squeeze(1)
            actions[t] = action
            logprobs[t] = logp_all.gather(1, action[:, None]).squeeze(1)
            values[t] = value

            with clock("env"):
                obs_np, reward, terminated, truncated, info = envs.step(action.numpy())
            global_step += N
            rewards[t] = torch.from_numpy(reward.astype(np.float32))
            dones[t] = torch.from_numpy(np.logical_or(terminated, truncated))
            next_obs = torch.from_numpy(obs_np.copy())  # copy=False: the env's buffer
            # (10,000-step truncations are not bootstrapped: a learning player rarely
            # lives that long, and a finished episode's value is then close to 0)
            if "final_info" in info:
                ended = info["final_info"]["_achievements"]
                unlocked.extend(info["final_info"]["achievements"][ended] > 0)
            log.record(info, global_step, clock.elapsed())

        # 2. Advantages by GAE(lambda), cut at episode ends.
        with torch.inference_mode():
            next_value = agent.value(next_obs)
        advantages = torch.zeros((T, N))
        last_gae = torch.zeros(N)
        for t in reversed(range(T)):
            following = next_value if t == T - 1 else values[t + 1]
            not_done = 1.0 - dones[t]
            delta = rewards[t] + args.gamma * following * not_done - values[t]
            last_gae = delta + args.gamma * args.gae_lambda * not_done * last_gae
            advantages[t] = last_gae
        returns = advantages + values

        # 3. Several epochs of clipped-surrogate updates over shuffled minibatches.
        b_obs = obs_buf.reshape(-1, obs_size)
        b_actions, b_logprobs = actions.reshape(-1), logprobs.reshape(-1)
        b_adv, b_returns = advantages.reshape(-1), returns.reshape(-1)
        with clock("update"):
            for _epoch in range(args.update_epochs):
                order = torch.randperm(args.batch_size)
                for start in range(0, args.batch_size, args.minibatch_size):
                    mb = order[start:start + args.minibatch_size]
                    logits, new_value = agent(b_obs[mb])
                    logp_all = torch.log_softmax(logits, dim=-1)
                    new_logprob = logp_all.gather(1, b_actions[mb, None]).squeeze(1)
                    entropy = -(logp_all.exp() * logp_all).sum(-1).mean()
                    log_ratio = new_logprob - b_logprobs[mb]
                    ratio = log_ratio.exp()
                    adv = b_adv[mb]
                    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                    pg_loss = torch.max(
                        -adv * ratio,
                        -adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                    v_loss = 0.5 * ((new_value - b_returns[mb]) ** 2).mean()
                    loss = pg_loss - args.ent_coef * entropy + args.vf_coef * v_loss
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                    optimizer.step()
        with torch.no_grad():
            stats = {"loss": loss.item(), "entropy": entropy.item(),
                     "approx_kl": ((ratio - 1) - log_ratio).mean().item()}

        # 4. The score, and progress.
        elapsed = clock.elapsed()
        if len(unlocked) == unlocked.maxlen:
            score = crafter_score(np.array(unlocked))[0]
            best_score = score if not best_score >= score else best_score
            score_csv.writerow([global_step, round(elapsed, 1), log.count, round(score, 3)])
            score_file.flush()
        bar.update(args.batch_size)
        bar.set_postfix(score=f"{score:.2f}%", ret100=f"{log.mean():.2f}", refresh=False)
        if elapsed - last_log >= args.log_interval:
            last_log = elapsed
            tqdm.write(f"[{elapsed:7.0f}s] step {global_step:>11,}  episodes {log.count:>7,}  "
                       f"score {score:6.2f}%  ret100 {log.mean():6.2f}  "
                       f"sps {global_step / elapsed:7.0f}  env {clock.share('env'):.0%}  "
                       f"ent {stats['entropy']:.3f}  kl {stats['approx_kl']:.4f}")
        if args.time_limit is not None and elapsed >= args.time_limit:
            break

    bar.close()
    envs.close()
    log.close()
    score_file.close()
    elapsed = clock.elapsed()
    rates = crafter_score(np.array(unlocked))[1] if unlocked else np.full(len(ACHIEVEMENTS),
                                                                         np.nan)
    summary = {
        "seed": args.seed, "num_envs": N, "num_steps": T, "hidden": args.hidden,
        "learning_rate": args.learning_rate, "ent_coef": args.ent_coef,
        "threads": args.threads,
        "load_average_start": [round(x, 2) for x in load_at_start],
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "global_step": global_step, "wall_time_s": round(elapsed, 1),
        "steps_per_s": round(global_step / elapsed),
        "env_share": round(clock.share("env"), 4),
        "episodes": log.count, "mean_return_last100": log.mean(),
        "crafter_score_last": score, "crafter_score_best": best_score,
        "score_window": args.score_window,
        "success_rates": {name: round(float(r), 2) for name, r in zip(ACHIEVEMENTS, rates)},
        "csv": args.csv, **stats,
    }
    print("summary " + json.dumps(summary), flush=True)
    Path(args.csv).with_suffix(".json").write_text(json.dumps(summary, indent=2) + "\n")
    if args.plot is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        png = args.plot or str(Path(args.csv).with_suffix(".png"))
        data = np.loadtxt(score_path, delimiter=",", skiprows=1, ndmin=2)
        fig, ax = plt.subplots(figsize=(7, 4))
        if len(data):
            ax.plot(data[:, 0] / 1e6, data[:, 3], label="PPO, symbolic")
        ax.axhline(1.6, color="grey", ls=":", label="random policy (1.6%)")
        ax.axhline(4.6, color="grey", ls="--", label="Crafter paper's PPO at 1M (4.6%)")
        ax.set_xlabel("environment steps (millions)")
        ax.set_ylabel(f"Crafter score, last {args.score_window} episodes (%)")
        ax.set_title(f"PPO on batchenv/Crafter-v1, {N} envs: {global_step / 1e6:.3g}M steps "
                     f"in {elapsed / 60:.1f} min", fontsize=9)
        ax.legend()
        fig.tight_layout()
        fig.savefig(png, dpi=100)
        summary["png"] = png
    return summary


if __name__ == "__main__":
    main()
