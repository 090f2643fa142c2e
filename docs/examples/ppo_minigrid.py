"""PPO on MiniGrid (batchenv's batched MiniGrid: thousands of gridworlds at once), with an
embedding of the (object, colour, state) cells of the 7x7 egocentric view and a small CNN.
One file, CleanRL style: read it top to bottom.

    python docs/examples/ppo_minigrid.py --env DoorKey-5x5 --target-return 0.9 --stop-at-target \
        --save-model runs/doorkey-5x5.pt --plot
    python docs/examples/ppo_minigrid.py --env DoorKey-8x8 --load-model runs/doorkey-5x5.pt \
        --target-return 0.9 --time-limit 600 --plot

DoorKey-8x8 is learned by that curriculum (5x5 to a mean return of 0.9, then the same
network on 8x8: about two minutes in all here), or from scratch with ``--ent-coef 0.05``
(about 8 minutes); from scratch with the default entropy bonus (0.01) it did not learn in
30 minutes (docs/minigrid.md, "Learning").

The observation is ``minigrid``'s 7x7x3 image (as ``ImgObsWrapper`` gives it): each cell an
(object, colour, state) triple of small integers. The network one-hot encodes each of the
three (11 + 6 + 3 = 20 channels a cell: the first convolution then learns one vector per
value, an embedding), then two 2x2 convolutions, as rl-starter-files' CNN.

The env runs with ``autoreset_mode=SAME_STEP`` (see ppo_pong.py and docs/training.md): every
transition in the rollout is a real one, and an episode *truncated* at ``max_steps``
is bootstrapped from ``info["final_obs"]``.

Writes the episode returns as CSV (``--csv``), a run summary as JSON next to it, and with
``--plot`` the learning curve as PNG (``docs/img/ppo_minigrid_<env>_s<seed>.*`` for the
runs in docs/minigrid.md). Needs ``torch`` (the CPU build is enough), ``tqdm`` and, for
``--plot``, ``matplotlib``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

# Idle OpenMP threads sleep instead of spinning: on a machine shared with other jobs, spinning
# threads of a 2-thread torch ran 4-10x slower than one thread (set before torch starts).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from gymnasium.vector import AutoresetMode  # noqa: E402
from gymnasium.wrappers.vector import RecordEpisodeStatistics  # noqa: E402
from torch import nn  # noqa: E402
from tqdm import tqdm  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ppo_common import EpisodeLog, Stopwatch, plot_learning_curve  # noqa: E402

import batchenv  # noqa: E402

# minigrid's encoding (minigrid.core.constants): 11 object types, 6 colours, 3 door states.
NUM_OBJECTS, NUM_COLOURS, NUM_STATES = 11, 6, 3
ONE_HOT = NUM_OBJECTS + NUM_COLOURS + NUM_STATES


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--env", default="DoorKey-5x5",
                   help="a MiniGrid id without its prefix and version: MiniGrid-<env>-v0")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-episode-steps", type=int, default=None,
                   help="env option (default: the family's max_steps, 10 x size^2 for DoorKey)")
    p.add_argument("--total-steps", type=int, default=20_000_000,
                   help="environment steps (all envs) to train for")
    p.add_argument("--num-envs", type=int, default=128, help="gridworlds played at once")
    p.add_argument("--num-steps", type=int, default=32, help="steps per env per rollout")
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--anneal-lr", action=argparse.BooleanOptionalAction, default=False)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--channels", type=int, default=32, help="first convolution's filters")
    p.add_argument("--hidden", type=int, default=128, help="fully connected width")
    p.add_argument("--threads", type=int, default=2, help="torch threads")
    p.add_argument("--kernels", choices=["numba", "python"], default="numba",
                   help="env option: 'python' runs the env's rules uncompiled (no compile "
                        "time, slow steps: for smoke tests)")
    p.add_argument("--time-limit", type=float, default=None,
                   help="stop after this many seconds of wall time")
    p.add_argument("--target-return", type=float, default=None,
                   help="record when the mean of the last 100 returns first reaches this")
    p.add_argument("--stop-at-target", action="store_true")
    p.add_argument("--csv", default="runs/ppo_minigrid_{env}_s{seed}.csv",
                   help="episode returns, one row per finished episode; the summary JSON "
                        "goes next to it")
    p.add_argument("--plot", nargs="?", const="", default=None, metavar="PNG",
                   help="draw the learning curve (default path: the CSV's, as .png)")
    p.add_argument("--eval-envs", type=int, default=256,
                   help="after training, play one episode in each of this many fresh envs")
    p.add_argument("--save-model", default=None, help="save the trained network here")
    p.add_argument("--load-model", default=None,
                   help="start from this saved network (a curriculum: DoorKey-5x5's "
                        "network has the same 7x7 view and actions as DoorKey-8x8's)")
    p.add_argument("--log-interval", type=float, default=30.0,
                   help="seconds between log lines")
    args = p.parse_args(argv)
    args.env_id = f"MiniGrid-{args.env}-v0"
    args.batch_size = args.num_envs * args.num_steps
    args.minibatch_size = args.batch_size // args.num_minibatches
    args.num_updates = max(1, args.total_steps // args.batch_size)
    args.csv = args.csv.format(env=args.env.lower(), seed=args.seed)
    return args


# ------------------------------------------------------------------------- the network
def layer_init(layer: nn.Module, std: float = np.sqrt(2), bias: float = 0.0) -> nn.Module:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


class Agent(nn.Module):
    """The one-hot object type, colour and door state of each cell of the 7x7 view;
    rl-starter-files' two 2x2 convolutions (with a 2x2 max-pool between) and a fully
    connected layer shared by an actor and a critic head."""

    def __init__(self, num_actions: int, channels: int, hidden: int) -> None:
        super().__init__()
        # Where each field's one-hot block starts among the 20 channels of a cell.
        self.register_buffer("offsets", torch.tensor([0, NUM_OBJECTS,
                                                      NUM_OBJECTS + NUM_COLOURS]))
        self.trunk = nn.Sequential(
            layer_init(nn.Conv2d(ONE_HOT, channels, 2)), nn.ReLU(), nn.MaxPool2d(2),  # 7, 6, 3
            layer_init(nn.Conv2d(channels, 64, 2)), nn.ReLU(),                        # 2
            nn.Flatten(),
            layer_init(nn.Linear(64 * 2 * 2, hidden)), nn.ReLU())
        self.actor = layer_init(nn.Linear(hidden, num_actions), std=0.01)
        self.critic = layer_init(nn.Linear(hidden, 1), std=1.0)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Action logits and values for uint8 observations (batch, 7, 7, 3)."""
        # One-hot by scatter, not nn.Embedding: the same function class (the convolution
        # learns a vector per value), and no scatter-add over every cell in the backward.
        cells = torch.zeros((*obs.shape[:-1], ONE_HOT))
        cells.scatter_(-1, obs.long() + self.offsets, 1.0)  # (batch, 7, 7, 20)
        hidden = self.trunk(cells.permute(0, 3, 1, 2))
        return self.actor(hidden), self.critic(hidden).squeeze(-1)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.forward(obs)[1]


def make_env(args: argparse.Namespace, num_envs: int, mode: AutoresetMode):
    """N gridworlds as one Gymnasium VectorEnv (copy=False: views of the env's buffers;
    the training loop copies what it keeps)."""
    limit = {} if args.max_episode_steps is None else {"max_episode_steps": args.max_episode_steps}
    return batchenv.make(args.env_id, num_envs, autoreset_mode=mode, copy=False,
                         kernels=args.kernels, **limit)


def evaluate(agent: nn.Module, args: argparse.Namespace) -> np.ndarray:
    """The returns of one episode in each of ``args.eval_envs`` fresh envs (seeds unseen in
    training), actions sampled from the policy; every episode ends by ``max_steps``."""
    env = make_env(args, args.eval_envs, AutoresetMode.DISABLED)  # finished envs freeze
    obs, _ = env.reset(seed=args.seed + 1_000_000)
    returns = np.zeros(args.eval_envs)
    playing = np.ones(args.eval_envs, dtype=bool)
    while playing.any():
        with torch.inference_mode():
            logits, _ = agent(torch.from_numpy(obs))
        action = torch.multinomial(torch.softmax(logits, dim=-1), 1).squeeze(1)
        obs, reward, terminated, truncated, _ = env.step(action.numpy())
        returns += np.where(playing, reward, 0.0)
        playing &= ~(terminated | truncated)
    env.close()
    return returns


# ------------------------------------------------------------------------- training
def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    load_at_start = os.getloadavg()  # the machine is shared: the summary says how busy
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    envs = RecordEpisodeStatistics(make_env(args, args.num_envs, AutoresetMode.SAME_STEP))
    num_actions = int(envs.single_action_space.n)
    obs_shape = envs.single_observation_space.shape  # (7, 7, 3) uint8
    agent = Agent(num_actions, args.channels, args.hidden)
    if args.load_model:
        agent.load_state_dict(torch.load(args.load_model))
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    # Rollout storage: num_steps x num_envs transitions.
    T, N = args.num_steps, args.num_envs
    obs_buf = torch.zeros((T, N, *obs_shape), dtype=torch.uint8)
    actions = torch.zeros((T, N), dtype=torch.int64)
    logprobs = torch.zeros((T, N))
    rewards = torch.zeros((T, N))
    dones = torch.zeros((T, N))  # 1 where the episode ended (terminated or truncated) at t
    values = torch.zeros((T, N))

    log = EpisodeLog(args.csv)
    clock = Stopwatch()
    global_step, truncations, time_to_target, stats = 0, 0, None, {}
    obs_np, _ = envs.reset(seed=args.seed)
    next_obs = torch.from_numpy(obs_np.copy())
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
            rewards[t] = torch.from_numpy(reward)
            done = np.logical_or(terminated, truncated)
            dones[t] = torch.from_numpy(done)

            # Truncated episodes did not end: bootstrap from the value of their true final
            # observation, which SAME_STEP returns in info["final_obs"] (obs_np already holds
            # the first observation of the next episode for those envs).
            trunc_rows = np.flatnonzero(truncated)
            next_obs = torch.from_numpy(obs_np.copy())  # copy=False: the env's buffer
            if len(trunc_rows):
                final = torch.from_numpy(np.stack(info["final_obs"][trunc_rows]))
                truncations += len(trunc_rows)
                with torch.inference_mode():
                    final_value = agent.value(final)
                rewards[t, trunc_rows] += args.gamma * final_value
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
        b_obs = obs_buf.reshape(-1, *obs_shape)
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
            tqdm.write(f"target {args.target_return} reached at {elapsed:.0f}s, "
                       f"step {global_step:,}")
        bar.update(args.batch_size)
        bar.set_postfix(ret100=f"{mean_return:.2f}", env=f"{clock.share('env'):.0%}",
                        refresh=False)
        if elapsed - last_log >= args.log_interval:
            last_log = elapsed
            tqdm.write(f"[{elapsed:7.0f}s] step {global_step:>12,}  episodes {log.count:>7,}  "
                       f"ret100 {mean_return:7.2f}  sps {global_step / elapsed:9.0f}  "
                       f"env {clock.share('env'):.1%}  loss {stats['loss']:.4f}  "
                       f"ent {stats['entropy']:.3f}  kl {stats['approx_kl']:.4f}")
        if args.time_limit is not None and elapsed >= args.time_limit:
            break
        if args.stop_at_target and time_to_target is not None:
            break

    bar.close()
    envs.close()
    log.close()
    elapsed = clock.elapsed()
    eval_returns = evaluate(agent, args) if args.eval_envs else np.array([np.nan])
    summary = {
        "env_id": args.env_id, "seed": args.seed, "num_envs": N, "num_steps": T,
        "num_minibatches": args.num_minibatches, "update_epochs": args.update_epochs,
        "learning_rate": args.learning_rate, "anneal_lr": args.anneal_lr,
        "ent_coef": args.ent_coef, "channels": args.channels, "hidden": args.hidden,
        "threads": args.threads, "load_model": args.load_model,
        "load_average_start": [round(x, 2) for x in load_at_start],
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "global_step": global_step, "wall_time_s": round(elapsed, 1),
        "steps_per_s": round(global_step / elapsed),
        "env_time_s": round(clock.totals.get("env", 0.0), 1),
        "env_share": round(clock.share("env"), 4),
        "policy_share": round(clock.share("policy"), 4),
        "update_share": round(clock.share("update"), 4),
        "episodes": log.count, "truncations": truncations,
        "mean_return_last100": log.mean(),
        "eval_mean_return": float(eval_returns.mean()),
        "time_to_target_s": None if time_to_target is None else round(time_to_target, 1),
        "csv": args.csv, **stats,
    }
    print("summary " + json.dumps(summary), flush=True)
    Path(args.csv).with_suffix(".json").write_text(json.dumps(summary, indent=2) + "\n")
    if args.save_model:
        torch.save(agent.state_dict(), args.save_model)
    if args.plot is not None:
        png = args.plot or str(Path(args.csv).with_suffix(".png"))
        title = (f"PPO on {args.env_id}, {N} envs, seed {args.seed}: "
                 f"{global_step / 1e6:.3g}M steps in {elapsed / 60:.1f} min")
        plot_learning_curve(args.csv, png, title, target=args.target_return)
        summary["png"] = png
    return summary


if __name__ == "__main__":
    main()
