"""PPO on BatchPong pixels through EnvPool's API, written the way EnvPool's asynchronous
loop is: ``envpool.make("Pong-v5", env_type="gymnasium", ...)``, ``async_reset`` / ``recv``
/ ``send`` with ``info["env_id"]``, ``envs.single_action_space``, a Nature CNN over the
(4, 84, 84) frame stacks, GAE and clipped PPO updates.

``import batchenv.envpool as envpool`` is the only batchenv line: the rest is EnvPool code
(``batchenv.envpool`` maps ``"Pong-v5"`` to BatchPong's pixels with EnvPool's Atari
processing; ``docs/integrations.md``). CleanRL's own ``ppo_atari_envpool.py`` runs with that
one line changed too (its ``env_type="gym"`` loop); the note in docs/integrations.md shows a
run.

    python docs/examples/ppo_envpool_style.py --total-steps 200000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Categorical

import batchenv.envpool as envpool


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--num-steps", type=int, default=128)
    p.add_argument("--total-steps", type=int, default=200_000)
    p.add_argument("--learning-rate", type=float, default=2.5e-4)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--clip-coef", type=float, default=0.1)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--points-to-win", type=int, default=21)
    p.add_argument("--max-episode-steps", type=int, default=None)
    return p.parse_args(argv)


def make_envs(args: argparse.Namespace) -> envpool.EnvPool:
    """EnvPool's lines. ``points_to_win`` (a BatchPong keyword, passed through) and a step
    limit shorten the games for a quick run."""
    limit = {} if args.max_episode_steps is None else {"max_episode_steps":
                                                        args.max_episode_steps}
    envs = envpool.make("Pong-v5", env_type="gymnasium", num_envs=args.num_envs,
                        seed=args.seed, episodic_life=True, reward_clip=True,
                        points_to_win=args.points_to_win, **limit)
    envs.single_action_space = envs.action_space
    envs.single_observation_space = envs.observation_space
    return envs


def layer_init(layer: nn.Module, std: float = np.sqrt(2), bias: float = 0.0) -> nn.Module:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


class Agent(nn.Module):
    """CleanRL's Nature CNN actor-critic."""

    def __init__(self, channels: int, num_actions: int) -> None:
        super().__init__()
        self.network = nn.Sequential(
            layer_init(nn.Conv2d(channels, 32, 8, stride=4)), nn.ReLU(),
            layer_init(nn.Conv2d(32, 64, 4, stride=2)), nn.ReLU(),
            layer_init(nn.Conv2d(64, 64, 3, stride=1)), nn.ReLU(), nn.Flatten(),
            layer_init(nn.Linear(64 * 7 * 7, 512)), nn.ReLU())
        self.actor = layer_init(nn.Linear(512, num_actions), std=0.01)
        self.critic = layer_init(nn.Linear(512, 1), std=1)

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(self.network(x / 255.0))

    def get_action_and_value(self, x: torch.Tensor, action: torch.Tensor | None = None):
        hidden = self.network(x / 255.0)
        probs = Categorical(logits=self.actor(hidden))
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(hidden)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    envs = make_envs(args)
    obs_shape = envs.single_observation_space.shape
    agent = Agent(obs_shape[0], int(envs.single_action_space.n))
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    n, T = args.num_envs, args.num_steps
    obs = torch.zeros((T, n, *obs_shape))
    actions = torch.zeros((T, n), dtype=torch.long)
    logprobs, rewards, dones, values = (torch.zeros((T, n)) for _ in range(4))
    returns_seen: list[float] = []
    episode_return = np.zeros(n)

    envs.async_reset()
    next_obs, _, _, _, info = envs.recv()
    env_id = info["env_id"]
    next_done = torch.zeros(n)
    global_step, start = 0, time.time()
    batch_size = n * T
    for _ in range(args.total_steps // batch_size):
        for step in range(T):
            global_step += n
            obs[step] = torch.as_tensor(next_obs, dtype=torch.float32)
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(obs[step])
            actions[step], logprobs[step], values[step] = action, logprob, value.flatten()
            envs.send(action.numpy(), env_id)
            next_obs, reward, terminated, truncated, info = envs.recv()
            env_id = info["env_id"]
            rewards[step] = torch.as_tensor(reward, dtype=torch.float32)
            done = np.logical_or(terminated, truncated)
            next_done = torch.as_tensor(done, dtype=torch.float32)
            episode_return += reward
            returns_seen += episode_return[done].tolist()
            episode_return[done] = 0

        with torch.no_grad():  # GAE, as CleanRL
            next_value = agent.get_value(torch.as_tensor(next_obs, dtype=torch.float32))
            advantages = torch.zeros_like(rewards)
            last = torch.zeros(n)
            for t in reversed(range(T)):
                not_done = 1.0 - (next_done if t == T - 1 else dones[t + 1])
                following = next_value.flatten() if t == T - 1 else values[t + 1]
                delta = rewards[t] + args.gamma * following * not_done - values[t]
                last = delta + args.gamma * args.gae_lambda * not_done * last
                advantages[t] = last
            returns = advantages + values

        b_obs, b_actions = obs.reshape(-1, *obs_shape), actions.reshape(-1)
        b_logprobs, b_adv = logprobs.reshape(-1), advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        mb = batch_size // args.num_minibatches
        for _ in range(args.update_epochs):
            order = torch.randperm(batch_size)
            for i in range(0, batch_size, mb):
                idx = order[i:i + mb]
                _, newlog, entropy, newvalue = agent.get_action_and_value(b_obs[idx],
                                                                          b_actions[idx])
                ratio = (newlog - b_logprobs[idx]).exp()
                adv = b_adv[idx]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(
                    1 - args.clip_coef, 1 + args.clip_coef)).mean()
                v_loss = 0.5 * ((newvalue.flatten() - b_returns[idx]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
        recent = np.mean(returns_seen[-20:]) if returns_seen else float("nan")
        print(f"step {global_step}: {len(returns_seen)} episodes, mean return of the last "
              f"20 {recent:.2f}, {global_step / (time.time() - start):.0f} steps/s")
    envs.close()
    return {"global_step": global_step, "episodes": len(returns_seen),
            "returns": returns_seen}


if __name__ == "__main__":
    main()
