"""PPO on BatchPong (thousands of Pong games against the CPU paddle), from the 6-float state
or from 84x84 pixels. One file, CleanRL style: read it top to bottom.

    python docs/examples/ppo_pong.py --obs-type state --time-limit 900 --plot   # +15 in ~4 min
    python docs/examples/ppo_pong.py --obs-type pixels --time-limit 1800 --plot  # Nature-CNN

The env runs with ``autoreset_mode=SAME_STEP``: an env whose episode ends is reset inside
the same ``step`` and the true last observation comes back in ``info["final_obs"]``. Every
transition in the rollout is then a real one (NEXT_STEP would put one no-op "reset step" per
episode into the batch, to be masked out of the loss), and a *truncated* episode is
bootstrapped right where its reward arrives: ``r += gamma * V(final_obs)``. A *terminated*
episode is not bootstrapped. See docs/training.md.

Scaling out (``--workers K``, state observations): the batch is a ``ShardedVectorEnv`` of
K worker processes (``--backend process``) or Ray actors (``--backend ray``), and the
rollout is gathered one of three ways (``--rollout``):

* ``collect`` (default with ``--workers``): each worker steps its shard ``num_steps`` times
  with a copy of the policy sent once per update and returns the trajectories (the
  IMPALA / RLlib env-runner pattern; one call per worker per rollout);
* ``step``: the loop below, unchanged, calling the sharded env's ``step`` (one round trip
  to the workers per step);
* ``double-buffer`` (also ``--double-buffer``): the two halves of the batch alternate, the
  policy runs here on one half while the workers step the other. The first action of each
  rollout was chosen by the previous update's policy (one step of policy lag per rollout,
  as in EnvPool's asynchronous PPO); its stored log-probability is that policy's.

    python docs/examples/ppo_pong.py --workers 2 --backend process --time-limit 300
    python docs/examples/ppo_pong.py --workers 2 --double-buffer --time-limit 300
    python docs/examples/ppo_pong.py --workers 2 --local-shard --rollout step --time-limit 300

Needs ``torch`` (the CPU build is enough), ``tqdm`` and, for ``--plot``, ``matplotlib``
(``--backend ray``: ``ray``).
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

# Hyper-parameters that differ between the two observation types; any flag overrides them.
DEFAULTS = {
    "state": dict(num_envs=4096, num_steps=32, num_minibatches=4, update_epochs=4,
                  learning_rate=1e-3, ent_coef=0.01, clip_coef=0.2,
                  total_steps=300_000_000, bf16=False, eval_envs=1024, frameskip=1,
                  frame_stack=1),
    "pixels": dict(num_envs=32, num_steps=128, num_minibatches=16, update_epochs=3,
                   learning_rate=2.5e-4, ent_coef=0.01, clip_coef=0.1,
                   total_steps=10_000_000, bf16=True, eval_envs=64, frameskip=2,
                   frame_stack=2),
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    epilog = "flags shown with default None take their default from --obs-type: " + "; ".join(
        f"{obs}: " + ", ".join(f"{k}={v}" for k, v in d.items()) for obs, d in DEFAULTS.items())
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=epilog,
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--obs-type", choices=["state", "pixels"], default="state")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--frameskip", type=int,
                   help="env option: physics steps per action (rewards summed)")
    p.add_argument("--points-to-win", type=int, default=21, help="env option")
    p.add_argument("--max-episode-steps", type=int, default=10_000, help="env option")
    p.add_argument("--total-steps", type=int, help="environment steps (all envs) to train for")
    p.add_argument("--num-envs", type=int, help="games played at once")
    p.add_argument("--num-steps", type=int, help="steps per env in each rollout")
    p.add_argument("--num-minibatches", type=int)
    p.add_argument("--update-epochs", type=int)
    p.add_argument("--learning-rate", type=float)
    p.add_argument("--anneal-lr", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--clip-coef", type=float)
    p.add_argument("--ent-coef", type=float)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--hidden", type=int, default=64, help="MLP width (state)")
    p.add_argument("--frame-stack", type=int, help="frames per observation (pixels)")
    p.add_argument("--bf16", action=argparse.BooleanOptionalAction,
                   help="bfloat16 autocast for the network (default: on for pixels)")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--time-limit", type=float, default=None,
                   help="stop after this many seconds of wall time")
    p.add_argument("--target-return", type=float, default=None,
                   help="record when the mean of the last 100 returns first reaches this")
    p.add_argument("--stop-at-target", action="store_true")
    p.add_argument("--csv", default="runs/ppo_pong_{obs_type}_s{seed}.csv",
                   help="episode returns, one row per finished episode")
    p.add_argument("--plot", nargs="?", const="", default=None, metavar="PNG",
                   help="draw the learning curve (default path: the CSV's, as .png)")
    p.add_argument("--eval-envs", type=int,
                   help="after training, play one game in each of this many fresh envs")
    p.add_argument("--save-model", default=None, help="save the trained network here")
    p.add_argument("--log-interval", type=float, default=30.0,
                   help="seconds between log lines")
    p.add_argument("--workers", type=int, default=0,
                   help="shard the batch over this many workers (0: one process, no shards)")
    p.add_argument("--backend", choices=["process", "ray"], default="process",
                   help="where the workers run (with --workers)")
    p.add_argument("--rollout", choices=["collect", "step", "double-buffer"], default=None,
                   help="how a sharded rollout is gathered (default: collect)")
    p.add_argument("--double-buffer", action="store_true",
                   help="same as --rollout double-buffer")
    p.add_argument("--local-shard", action="store_true",
                   help="step shard 0 in this process (one worker fewer; with --workers)")
    args = p.parse_args(argv)
    if args.double_buffer:
        args.rollout = "double-buffer"
    if args.workers < 0:
        p.error("--workers must be >= 0")
    if args.rollout is not None and not args.workers:
        p.error("--rollout / --double-buffer need --workers")
    if args.local_shard and not args.workers:
        p.error("--local-shard needs --workers")
    if args.workers:
        args.rollout = args.rollout or "collect"
        if args.obs_type == "pixels" and args.rollout != "step":
            p.error("--rollout collect / double-buffer support --obs-type state only "
                    "(frame stacking lives in this loop); use --rollout step for pixels")
        if args.rollout == "double-buffer" and args.workers < 2:
            p.error("--double-buffer needs --workers >= 2 (one half steps, the other thinks)")
    for key, value in DEFAULTS[args.obs_type].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.batch_size = args.num_envs * args.num_steps
    args.minibatch_size = args.batch_size // args.num_minibatches
    args.num_updates = max(1, args.total_steps // args.batch_size)
    args.csv = args.csv.format(obs_type=args.obs_type, seed=args.seed)
    return args


# ------------------------------------------------------------------------- the networks
def layer_init(layer: nn.Module, std: float = np.sqrt(2), bias: float = 0.0) -> nn.Module:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


class StateAgent(nn.Module):
    """Separate actor and critic MLPs over the 6 floats (ball x, y, vx, vy, paddles)."""

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


class PixelAgent(nn.Module):
    """The Nature-DQN CNN (Mnih et al. 2015) shared by an actor and a critic head, over a
    stack of uint8 84x84 frames."""

    def __init__(self, frame_stack: int, num_actions: int) -> None:
        super().__init__()
        self.trunk = nn.Sequential(
            layer_init(nn.Conv2d(frame_stack, 32, 8, stride=4)), nn.ReLU(),
            layer_init(nn.Conv2d(32, 64, 4, stride=2)), nn.ReLU(),
            layer_init(nn.Conv2d(64, 64, 3, stride=1)), nn.ReLU(),
            nn.Flatten(),
            layer_init(nn.Linear(64 * 7 * 7, 512)), nn.ReLU())
        self.actor = layer_init(nn.Linear(512, num_actions), std=0.01)
        self.critic = layer_init(nn.Linear(512, 1), std=1.0)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.trunk(obs.float() / 255.0)
        return self.actor(hidden).float(), self.critic(hidden).squeeze(-1).float()

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.forward(obs)[1]


class FrameStack:
    """The last ``k`` frames of every env, (num_envs, k, 84, 84) uint8. A new episode starts
    with its first frame repeated ``k`` times. (Gymnasium has no vector frame-stack wrapper,
    and stacking here in torch keeps the env's output one frame per env.)"""

    def __init__(self, first_frames: torch.Tensor, k: int) -> None:
        self.frames = first_frames.unsqueeze(1).repeat(1, k, 1, 1)

    def with_frame(self, rows: torch.Tensor, frames: torch.Tensor) -> torch.Tensor:
        """The stacks of ``rows`` if ``frames`` came next (used for final observations)."""
        return torch.cat([self.frames[rows, 1:], frames.unsqueeze(1)], dim=1)

    def push(self, frames: torch.Tensor, new_episode: torch.Tensor) -> torch.Tensor:
        self.frames[:, :-1] = self.frames[:, 1:].clone()
        self.frames[:, -1] = frames
        rows = new_episode.nonzero().squeeze(1)
        if len(rows):
            self.frames[rows] = frames[rows].unsqueeze(1)
        return self.frames


def as_frames(obs: np.ndarray) -> torch.Tensor:
    """A copy of the env's (num_envs, 84, 84) uint8 frames as a tensor (with copy=False the
    env returns its read-only canvas)."""
    return torch.from_numpy(np.array(obs, dtype=np.uint8))


def make_env(args: argparse.Namespace, num_envs: int, mode: AutoresetMode,
             workers: int = 0) -> batchenv.BatchPong | batchenv.ShardedVectorEnv:
    """N games of Pong as one Gymnasium VectorEnv. copy=False returns views of the env's
    buffers (no per-step allocation); the training loop copies what it keeps. With
    ``workers``, the same batch sharded over worker processes / Ray actors."""
    kwargs = dict(obs_type=args.obs_type, autoreset_mode=mode, copy=False,
                  frameskip=args.frameskip, points_to_win=args.points_to_win,
                  max_episode_steps=args.max_episode_steps)
    if workers:
        return batchenv.ShardedVectorEnv(batchenv.BatchPong, num_envs, num_workers=workers,
                                         backend=args.backend,
                                         local_shard=getattr(args, "local_shard", False),
                                         **kwargs)
    return batchenv.BatchPong(num_envs, **kwargs)


class WorkerPolicy:
    """The policy a worker holds for ``collect``: a copy of the agent's weights (sent once
    per update, pickled with this object), sampling actions from its shard's observations
    and returning their log-probabilities and values with them."""

    def __init__(self, agent: StateAgent) -> None:
        self.weights = {k: v.detach().clone() for k, v in agent.state_dict().items()}
        self.shape = (agent.actor[0].in_features, agent.actor[-1].out_features,
                      agent.actor[0].out_features)
        self.net: StateAgent | None = None

    def __getstate__(self) -> dict:
        return {"weights": self.weights, "shape": self.shape, "net": None}

    def __call__(self, obs: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        if self.net is None:
            torch.set_num_threads(1)  # the workers share the cores: one thread each
            self.net = StateAgent(*self.shape)
            self.net.load_state_dict(self.weights)
        with torch.inference_mode():
            logits, value = self.net(torch.from_numpy(obs))
            logp_all = torch.log_softmax(logits, dim=-1)
            action = torch.multinomial(logp_all.exp(), 1).squeeze(1)
            logp = logp_all.gather(1, action[:, None]).squeeze(1)
        return action.numpy(), {"logprob": logp.numpy(), "value": value.numpy()}


class EpisodeStats:
    """Running returns and lengths of every env, for the rollouts that bypass
    ``RecordEpisodeStatistics`` (collect, double-buffer); yields its ``info`` layout."""

    def __init__(self, num_envs: int) -> None:
        self.returns = np.zeros(num_envs)
        self.lengths = np.zeros(num_envs, dtype=np.int64)

    def update(self, rows: slice, reward: np.ndarray, done: np.ndarray) -> dict:
        returns, lengths = self.returns[rows], self.lengths[rows]  # views
        returns += reward
        lengths += 1
        if not done.any():
            return {}
        ended = np.zeros(len(self.returns), dtype=bool)
        ended[rows] = done
        info = {"_episode": ended, "episode": {"r": self.returns.copy(),
                                                "l": self.lengths.copy()}}
        returns[done] = 0.0
        lengths[done] = 0
        return info


def bootstrap_truncated(rewards_t: torch.Tensor, rows: np.ndarray, final: np.ndarray,
                        agent: nn.Module, gamma: float) -> None:
    """``r += gamma * V(final_obs)`` for truncated episodes (see the module docstring)."""
    with torch.inference_mode():
        final_value = agent.value(torch.from_numpy(np.ascontiguousarray(final))).float()
    rewards_t[torch.from_numpy(rows)] += gamma * final_value


class DoubleBuffered:
    """The double-buffered rollout: ``recv`` a half, record its step, choose its next
    actions, ``send`` them, and on to the other half, which stepped meanwhile."""

    def __init__(self, envs: batchenv.ShardedVectorEnv, seed: int) -> None:
        self.envs = envs
        self.stats = EpisodeStats(envs.num_envs)
        envs.async_reset(seed=seed)
        self.carry: dict[int, tuple] = {}  # half -> step-0 entries of the next rollout

    def choose(self, agent: nn.Module, obs: np.ndarray) -> tuple:
        x = torch.from_numpy(np.array(obs))
        with torch.inference_mode():
            logits, value = agent(x)
            logp_all = torch.log_softmax(logits.float(), dim=-1)
            action = torch.multinomial(logp_all.exp(), 1).squeeze(1)
        return x, action, logp_all.gather(1, action[:, None]).squeeze(1), value

    def run(self, agent: nn.Module, buf: dict, args: argparse.Namespace, clock, log,
            global_step: int) -> tuple[torch.Tensor, int, int]:
        T = buf["actions"].shape[0]
        truncations = 0
        next_obs = torch.zeros_like(buf["obs"][0])
        if not self.carry:  # first rollout: the reset observations of both halves
            for _ in range(2):
                obs, *_, info = self.envs.recv()
                rows = slice(int(info["env_id"][0]), int(info["env_id"][-1]) + 1)
                with clock("policy"):
                    self.carry[rows.start] = (rows, *self.choose(agent, obs))
                self.envs.send(self.carry[rows.start][2].numpy())
        for rows, x, action, logp, value in self.carry.values():
            buf["obs"][0, rows], buf["actions"][0, rows] = x, action
            buf["logprobs"][0, rows], buf["values"][0, rows] = logp, value
        for t in range(T):
            for _ in range(2):
                with clock("env"):
                    obs, reward, terminated, truncated, info = self.envs.recv()
                rows = slice(int(info["env_id"][0]), int(info["env_id"][-1]) + 1)
                done = terminated | truncated
                buf["rewards"][t, rows] = torch.from_numpy(reward)
                buf["dones"][t, rows] = torch.from_numpy(done)
                global_step += rows.stop - rows.start
                log.record(self.stats.update(rows, reward, done), global_step,
                           clock.elapsed())
                trunc_rows = np.flatnonzero(truncated)
                if len(trunc_rows):
                    truncations += len(trunc_rows)
                    final = np.stack(info["final_obs"][trunc_rows])
                    bootstrap_truncated(buf["rewards"][t, rows], trunc_rows, final, agent,
                                        args.gamma)
                with clock("policy"):
                    chosen = self.choose(agent, obs)
                if t + 1 < T:
                    x, action, logp, value = chosen
                    buf["obs"][t + 1, rows], buf["actions"][t + 1, rows] = x, action
                    buf["logprobs"][t + 1, rows], buf["values"][t + 1, rows] = logp, value
                else:  # the first step of the next rollout (chosen by this policy)
                    next_obs[rows] = chosen[0]
                    self.carry[rows.start] = (rows, *chosen)
                self.envs.send(chosen[1].numpy())
        return next_obs, global_step, truncations


def evaluate(agent: nn.Module, args: argparse.Namespace, autocast) -> np.ndarray:
    """The returns of one full game in each of ``args.eval_envs`` fresh envs (seeds unseen in
    training), with actions sampled from the trained policy. Unlike "the last 100 episodes"
    of training, this does not favour short games."""
    env = make_env(args, args.eval_envs, AutoresetMode.DISABLED)  # finished games freeze
    obs, _ = env.reset(seed=args.seed + 1_000_000)
    pixels = args.obs_type == "pixels"
    stack = FrameStack(as_frames(obs), args.frame_stack) if pixels else None
    x = stack.frames if pixels else torch.from_numpy(obs)
    returns = np.zeros(args.eval_envs)
    playing = np.ones(args.eval_envs, dtype=bool)
    while playing.any():
        with torch.inference_mode(), autocast:
            logits, _ = agent(x)
            action = torch.multinomial(torch.softmax(logits.float(), dim=-1), 1).squeeze(1)
        obs, reward, terminated, truncated, _ = env.step(action.numpy())
        returns += reward  # frozen (finished) games return reward 0
        playing &= ~(terminated | truncated)
        x = stack.push(as_frames(obs), torch.zeros(len(obs), dtype=torch.bool)) if pixels \
            else torch.from_numpy(obs)
    env.close()
    return returns


# ------------------------------------------------------------------------- training
def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    pixels = args.obs_type == "pixels"

    raw_envs = make_env(args, args.num_envs, AutoresetMode.SAME_STEP, args.workers)
    stepping = args.rollout in (None, "step")  # this loop calls envs.step itself
    envs = RecordEpisodeStatistics(raw_envs) if stepping else raw_envs
    num_actions = int(envs.single_action_space.n)

    if pixels:
        agent = PixelAgent(args.frame_stack, num_actions)
        obs_shape: tuple[int, ...] = (args.frame_stack, 84, 84)
        obs_dtype = torch.uint8
    else:
        obs_shape = envs.single_observation_space.shape
        agent = StateAgent(obs_shape[0], num_actions, args.hidden)
        obs_dtype = torch.float32
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16)

    # Rollout storage: num_steps x num_envs transitions.
    T, N = args.num_steps, args.num_envs
    obs_buf = torch.zeros((T, N, *obs_shape), dtype=obs_dtype)
    actions = torch.zeros((T, N), dtype=torch.int64)
    logprobs = torch.zeros((T, N))
    rewards = torch.zeros((T, N))
    dones = torch.zeros((T, N))  # 1 where the episode ended (terminated or truncated) at t
    values = torch.zeros((T, N))

    log = EpisodeLog(args.csv)
    clock = Stopwatch()
    global_step, truncations, time_to_target, stats = 0, 0, None, {}
    if args.rollout == "double-buffer":
        double = DoubleBuffered(raw_envs, args.seed)  # resets the envs itself
        obs_np = np.zeros((N, *obs_shape), dtype=np.float32)
    else:
        obs_np, _ = envs.reset(seed=args.seed)
    episode_stats = EpisodeStats(N)
    if pixels:
        stack = FrameStack(as_frames(obs_np), args.frame_stack)
        next_obs = stack.frames
    else:
        next_obs = torch.from_numpy(obs_np)
    bar = tqdm(total=args.num_updates * args.batch_size, unit="step", unit_scale=True,
               mininterval=1.0, smoothing=0.05, dynamic_ncols=True)
    last_log = 0.0

    for update in range(1, args.num_updates + 1):
        if args.anneal_lr:
            frac = 1.0 - (update - 1.0) / args.num_updates
            optimizer.param_groups[0]["lr"] = frac * args.learning_rate

        # 1. Collect a rollout with the current policy.
        if args.rollout == "collect":
            with clock("env"):
                traj = raw_envs.collect(WorkerPolicy(agent), T)
            obs_buf.copy_(torch.from_numpy(traj.obs))
            actions.copy_(torch.from_numpy(traj.actions))
            logprobs.copy_(torch.from_numpy(traj.extras["logprob"]))
            values.copy_(torch.from_numpy(traj.extras["value"]))
            rewards.copy_(torch.from_numpy(traj.rewards))
            done_np = traj.terminated | traj.truncated
            dones.copy_(torch.from_numpy(done_np))
            for t in range(T):
                global_step += N
                log.record(episode_stats.update(slice(None), traj.rewards[t], done_np[t]),
                           global_step, clock.elapsed())
            picked = traj.truncated[traj.final_index[:, 0], traj.final_index[:, 1]]
            for t in np.unique(traj.final_index[picked, 0]):
                at_t = picked & (traj.final_index[:, 0] == t)
                truncations += int(at_t.sum())
                bootstrap_truncated(rewards[t], traj.final_index[at_t, 1],
                                    traj.final_obs[at_t], agent, args.gamma)
            next_obs = torch.from_numpy(traj.next_obs)
        elif args.rollout == "double-buffer":
            buffers = {"obs": obs_buf, "actions": actions, "logprobs": logprobs,
                       "values": values, "rewards": rewards, "dones": dones}
            next_obs, global_step, more = double.run(agent, buffers, args, clock, log,
                                                     global_step)
            truncations += more
        else:
            for t in range(T):
                obs_buf[t] = next_obs
                with clock("policy"), torch.inference_mode(), autocast:
                    logits, value = agent(next_obs)
                    logp_all = torch.log_softmax(logits.float(), dim=-1)
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
                if pixels:
                    frames = as_frames(obs_np)
                    if len(trunc_rows):
                        final = as_frames(np.stack(info["final_obs"][trunc_rows]))
                        final = stack.with_frame(torch.from_numpy(trunc_rows), final)
                    next_obs = stack.push(frames, torch.from_numpy(done))
                else:
                    next_obs = torch.from_numpy(obs_np)
                    if len(trunc_rows):
                        final = torch.from_numpy(np.stack(info["final_obs"][trunc_rows]))
                if len(trunc_rows):
                    truncations += len(trunc_rows)
                    with torch.inference_mode(), autocast:
                        final_value = agent.value(final).float()
                    rewards[t, trunc_rows] += args.gamma * final_value
                log.record(info, global_step, clock.elapsed())

        # 2. Advantages by GAE(lambda), cut at episode ends.
        with torch.inference_mode(), autocast:
            next_value = agent.value(next_obs).float()
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
                    with autocast:
                        logits, new_value = agent(b_obs[mb])
                    logp_all = torch.log_softmax(logits.float(), dim=-1)
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
    eval_returns = evaluate(agent, args, autocast) if args.eval_envs else np.array([np.nan])
    summary = {
        "obs_type": args.obs_type, "seed": args.seed, "num_envs": N,
        "workers": args.workers, "backend": args.backend if args.workers else None,
        "rollout": args.rollout, "local_shard": args.local_shard,
        "global_step": global_step, "wall_time_s": round(elapsed, 1),
        "steps_per_s": round(global_step / elapsed),
        "env_time_s": round(clock.totals.get("env", 0.0), 1),
        "env_share": round(clock.share("env"), 4),
        "policy_share": round(clock.share("policy"), 4),
        "update_share": round(clock.share("update"), 4),
        "episodes": log.count, "truncations": truncations,
        "mean_return_last100": log.mean(),
        "eval_mean_return": float(eval_returns.mean()),
        "eval_win_rate": float((eval_returns > 0).mean()),
        "time_to_target_s": None if time_to_target is None else round(time_to_target, 1),
        "csv": args.csv, **stats,
    }
    print("summary " + json.dumps(summary), flush=True)
    if args.save_model:
        torch.save(agent.state_dict(), args.save_model)
    if args.plot is not None:
        png = args.plot or str(Path(args.csv).with_suffix(".png"))
        title = (f"PPO on BatchPong ({args.obs_type}), {N} envs, seed {args.seed}: "
                 f"{global_step / 1e6:.3g}M steps in {elapsed / 60:.1f} min")
        plot_learning_curve(args.csv, png, title, target=args.target_return)
        summary["png"] = png
        summary["args"] = {k: v for k, v in vars(args).items()}
        summary["summary_json"] = write_summary(summary, png)
    return summary


if __name__ == "__main__":
    main()
