"""PPO on BatchCartPole (Gymnasium's CartPole-v1, batched): the quick sanity run. One file,
CleanRL style: read it top to bottom. ``ppo_pong.py`` is the same algorithm with pixels.

    python docs/examples/ppo_cartpole.py --plot        # mean return 475 in ~10 s, 1M steps

The env runs with ``autoreset_mode=SAME_STEP``: an env whose episode ends is reset inside
the same ``step`` and the true last observation comes back in ``info["final_obs"]``. Every
transition in the rollout is a real one, and an episode *truncated* at CartPole's 500-step
limit is bootstrapped where its reward arrives: ``r += gamma * V(final_obs)``. Without that,
PPO learns that step 500 is a cliff and the return sags just below 500. A *terminated*
episode (the pole fell) is not bootstrapped. See docs/training.md.

Needs ``torch`` (the CPU build is enough), ``tqdm`` and, for ``--plot``, ``matplotlib``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers.vector import RecordEpisodeStatistics
from torch import nn
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ppo_common import (  # noqa: E402
    EpisodeLog,
    Stopwatch,
    plot_learning_curve,
    write_summary,
)

import batchenv  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--total-steps", type=int, default=1_000_000,
                   help="environment steps (all envs) to train for")
    p.add_argument("--num-envs", type=int, default=64, help="carts simulated at once")
    p.add_argument("--vectorization", default=None,
                   help="batchenv.make's vectorization: None (native BatchCartPole), or "
                        "'sync' for Gymnasium's SyncVectorEnv, to compare")
    p.add_argument("--max-episode-steps", type=int, default=None,
                   help="env option: time limit (default: CartPole-v1's 500)")
    p.add_argument("--num-steps", type=int, default=64, help="steps per env in each rollout")
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--learning-rate", type=float, default=2.5e-3)
    p.add_argument("--anneal-lr", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.0)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--hidden", type=int, default=64, help="MLP width")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--time-limit", type=float, default=None,
                   help="stop after this many seconds of wall time")
    p.add_argument("--target-return", type=float, default=475.0,
                   help="record when the mean of the last 100 returns first reaches this")
    p.add_argument("--stop-at-target", action="store_true")
    p.add_argument("--csv", default="runs/ppo_cartpole_s{seed}.csv",
                   help="episode returns, one row per finished episode")
    p.add_argument("--plot", nargs="?", const="", default=None, metavar="PNG",
                   help="draw the learning curve (default path: the CSV's, as .png)")
    p.add_argument("--log-interval", type=float, default=10.0,
                   help="seconds between log lines")
    args = p.parse_args(argv)
    args.batch_size = args.num_envs * args.num_steps
    args.minibatch_size = args.batch_size // args.num_minibatches
    args.num_updates = max(1, args.total_steps // args.batch_size)
    args.csv = args.csv.format(seed=args.seed)
    return args


def layer_init(layer: nn.Linear, std: float = np.sqrt(2), bias: float = 0.0) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


class Agent(nn.Module):
    """Separate actor and critic MLPs over the 4 floats (x, x_dot, theta, theta_dot)."""

    def __init__(self, obs_dim: int, num_actions: int, hidden: int) -> None:
        super().__init__()

        def mlp(out: int, std: float) -> nn.Sequential:
            return nn.Sequential(layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
                                 layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
                                 layer_init(nn.Linear(hidden, out), std=std))

        self.actor = mlp(num_actions, 0.01)
        self.critic = mlp(1, 1.0)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Action logits (batch, num_actions) and state values (batch,)."""
        return self.actor(obs), self.critic(obs).squeeze(-1)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs).squeeze(-1)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    # The env: N carts as one Gymnasium VectorEnv (BatchCartPole). copy=False returns views
    # of the env's buffers (no per-step allocation); we copy what we keep.
    env_options = {} if args.max_episode_steps is None else {
        "max_episode_steps": args.max_episode_steps}
    envs = batchenv.make("CartPole-v1", args.num_envs, vectorization=args.vectorization,
                         autoreset_mode=AutoresetMode.SAME_STEP, copy=False, **env_options)
    envs = RecordEpisodeStatistics(envs, buffer_length=100)
    obs_dim = envs.single_observation_space.shape[0]
    agent = Agent(obs_dim, int(envs.single_action_space.n), args.hidden)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    # Rollout storage: num_steps x num_envs transitions.
    T, N = args.num_steps, args.num_envs
    obs_buf = torch.zeros((T, N, obs_dim))
    actions = torch.zeros((T, N), dtype=torch.int64)
    logprobs = torch.zeros((T, N))
    rewards = torch.zeros((T, N))
    dones = torch.zeros((T, N))  # 1 where the episode ended (terminated or truncated) at t
    values = torch.zeros((T, N))

    log = EpisodeLog(args.csv)
    clock = Stopwatch()
    global_step, truncations, time_to_target, stats = 0, 0, None, {}
    obs_np, _ = envs.reset(seed=args.seed)
    next_obs = torch.from_numpy(obs_np)
    bar = tqdm(total=args.num_updates * args.batch_size, unit="step", unit_scale=True,
               mininterval=1.0, smoothing=0.05, dynamic_ncols=True)
    last_log = 0.0

    for update in range(1, args.num_updates + 1):
        if args.anneal_lr:
            frac = 1.0 - (update - 1.0) / args.num_updates
            optimizer.param_groups[0]["lr"] = frac * args.learning_rate

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
            next_obs = torch.from_numpy(obs_np)
            rewards[t] = torch.from_numpy(reward)
            dones[t] = torch.from_numpy(np.logical_or(terminated, truncated))

            # Truncated episodes did not end: bootstrap from the value of their true final
            # observation, which SAME_STEP returns in info["final_obs"] (obs_np already holds
            # the first observation of the next episode for those envs).
            trunc_rows = np.flatnonzero(truncated)
            if len(trunc_rows):
                truncations += len(trunc_rows)
                final = torch.from_numpy(np.stack(info["final_obs"][trunc_rows]))
                with torch.inference_mode():
                    rewards[t, trunc_rows] += args.gamma * agent.value(final)
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
        b_obs = obs_buf.reshape(-1, obs_dim)
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
            stats = {"loss": loss.item(), "pg_loss": pg_loss.item(), "v_loss": v_loss.item(),
                     "entropy": entropy.item(),
                     "approx_kl": ((ratio - 1) - log_ratio).mean().item(),
                     "clipfrac": ((ratio - 1).abs() > args.clip_coef).float().mean().item()}

        # 4. Progress.
        mean_return, elapsed = log.mean(), clock.elapsed()
        if (time_to_target is None and args.target_return is not None
                and len(log.returns) == log.returns.maxlen
                and mean_return >= args.target_return):
            time_to_target = elapsed
            tqdm.write(f"target {args.target_return} reached at {elapsed:.1f}s, "
                       f"step {global_step:,}")
        bar.update(args.batch_size)
        bar.set_postfix(ret100=f"{mean_return:.1f}", env=f"{clock.share('env'):.0%}",
                        refresh=False)
        if elapsed - last_log >= args.log_interval:
            last_log = elapsed
            tqdm.write(f"[{elapsed:6.1f}s] step {global_step:>10,}  episodes {log.count:>7,}  "
                       f"ret100 {mean_return:6.1f}  sps {global_step / elapsed:8.0f}  "
                       f"env {clock.share('env'):.1%}  loss {stats['loss']:.4f}")
        if args.time_limit is not None and elapsed >= args.time_limit:
            break
        if args.stop_at_target and time_to_target is not None:
            break

    bar.close()
    envs.close()
    log.close()
    elapsed = clock.elapsed()
    summary = {
        "env": "CartPole-v1", "seed": args.seed, "num_envs": N,
        "global_step": global_step, "wall_time_s": round(elapsed, 1),
        "steps_per_s": round(global_step / elapsed),
        "env_time_s": round(clock.totals.get("env", 0.0), 1),
        "env_share": round(clock.share("env"), 4),
        "policy_share": round(clock.share("policy"), 4),
        "update_share": round(clock.share("update"), 4),
        "episodes": log.count, "truncations": truncations,
        "mean_return_last100": log.mean(),
        "time_to_target_s": None if time_to_target is None else round(time_to_target, 1),
        "csv": args.csv, **stats,
    }
    print("summary " + json.dumps(summary), flush=True)
    if args.plot is not None:
        png = args.plot or str(Path(args.csv).with_suffix(".png"))
        title = (f"PPO on BatchCartPole, {N} envs, seed {args.seed}: "
                 f"{global_step / 1e3:.0f}k steps in {elapsed:.0f} s")
        plot_learning_curve(args.csv, png, title, target=args.target_return)
        summary["png"] = png
        summary["args"] = {k: v for k, v in vars(args).items()}
        summary["summary_json"] = write_summary(summary, png)
    return summary


if __name__ == "__main__":
    main()
