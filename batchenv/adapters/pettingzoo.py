"""PettingZoo's parallel API for batchenv's multi-agent envs, and a batched route for
training many multi-agent games at once.

A batchenv env is **multi-agent** when it names its agents in ``possible_agents`` (a
non-empty tuple; :class:`~batchenv.BatchPong` in ``mode="two_player"`` or ``"rally"``:
``("left", "right")``) and gives:

* one action column per agent: a 1-D ``MultiDiscrete`` (agent k: ``Discrete(nvec[k])``) or
  a ``Box`` whose first axis is the agents;
* ``agent_observations(obs)``: each agent's view of a batch of observations, in the env's
  observation space (BatchPong's right player sees the court mirrored);
* ``agent_rewards(reward)``: each agent's rewards (BatchPong: zero-sum in ``two_player``);
* optionally ``multi_agent_kwargs``, the constructor keywords that make the env
  multi-agent when an adapter is given its id (BatchPong: ``{"mode": "two_player"}``).

Episodes end for every agent at once (the batch's ``terminated`` / ``truncated``).

:func:`parallel_env` gives one game as a PettingZoo ``ParallelEnv`` (a batch of one, no
auto-reset), which passes ``pettingzoo.test.parallel_api_test`` and ``parallel_seed_test``.
:func:`agents_as_envs` gives the batched route: N games of k agents as one Gymnasium
``VectorEnv`` of N*k single-agent envs (row ``i * k + a`` is agent ``a`` of game ``i``), so
that any single-agent learner trains one policy on every side at once (self-play) without a
Python loop over games, as SuperSuit's ``pettingzoo_env_to_vec_env_v1`` does for one game.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv
from pettingzoo import ParallelEnv

from batchenv.core import BatchEnv, batched_space

__all__ = ["parallel_env", "BatchParallelEnv", "agents_as_envs", "AgentsAsEnvs",
           "is_multi_agent"]


def is_multi_agent(env: Any) -> bool:
    """Whether ``env`` (a batchenv env) follows the multi-agent protocol above."""
    return bool(getattr(env, "possible_agents", ())) and callable(
        getattr(env, "agent_observations", None)) and callable(
        getattr(env, "agent_rewards", None))


def agent_action_spaces(env: Any) -> list[gym.Space]:
    """Agent k's action space: column k of the env's single action space."""
    space, k = env.single_action_space, len(env.possible_agents)
    if isinstance(space, spaces.MultiDiscrete) and space.shape == (k,):
        return [spaces.Discrete(int(n), start=int(s)) for n, s in zip(space.nvec, space.start)]
    if isinstance(space, spaces.Box) and space.shape[:1] == (k,):
        return [spaces.Box(space.low[a], space.high[a], dtype=space.dtype) for a in range(k)]
    raise TypeError(f"{type(env).__name__}: a multi-agent env's single action space must be "
                    f"a MultiDiscrete of shape ({k},) or a Box whose first axis has one row "
                    f"per agent ({k}); got {space}")


def _make(env: type[BatchEnv] | str, num_envs: int, kwargs: dict[str, Any]) -> Any:
    """``env`` (an id or a BatchEnv class) with ``kwargs`` after the class's
    ``multi_agent_kwargs``; ``TypeError`` if it is not multi-agent."""
    from batchenv.registration import resolve

    if isinstance(env, str):
        resolved = resolve(env)
        if resolved is None:
            raise ValueError(f"{env!r} is not a batchenv env id (batchenv.list_envs())")
        cls, id_kwargs = resolved.cls, dict(resolved.kwargs)
    elif isinstance(env, type) and issubclass(env, BatchEnv):
        cls, id_kwargs = env, {}
    else:
        raise TypeError(f"env must be a batchenv env id or a BatchEnv subclass, got {env!r}")
    kwargs = {**id_kwargs, **getattr(cls, "multi_agent_kwargs", {}), **kwargs}
    made = cls(num_envs, **kwargs)
    if not is_multi_agent(made):
        made.close()
        raise TypeError(f"{cls.__name__} with {kwargs} is not multi-agent: it has no "
                        f"possible_agents (see batchenv.adapters.pettingzoo's docstring)")
    return made


class BatchParallelEnv(ParallelEnv):
    """One game of a multi-agent batchenv env as a PettingZoo ``ParallelEnv``: a batch of one
    in DISABLED mode (no auto-reset: call ``reset`` when ``agents`` is empty). ``reset(seed=s)``
    starts where row 0 of a batch reset with ``s`` starts; rewards are Python floats of the
    float64 reward. Made by :func:`parallel_env`."""

    def __init__(self, env: type[BatchEnv] | str, *, render_mode: str | None = None,
                 **kwargs: Any) -> None:
        for taken in ("num_envs", "n", "autoreset_mode"):
            if taken in kwargs:
                raise TypeError(f"parallel_env runs one game without auto-reset: {taken!r} "
                                f"cannot be given")
        kwargs.setdefault("reward_dtype", np.float64)
        self.batch: Any = _make(env, 1, {"autoreset_mode": "Disabled", "render_mode": render_mode,
                                    **kwargs})
        self.possible_agents = list(self.batch.possible_agents)
        self.agents: list[str] = []
        self.render_mode = render_mode
        name = env if isinstance(env, str) else env.__name__
        self.metadata = {"name": name, "is_parallelizable": True,
                         "render_modes": list(self.batch.metadata.get("render_modes", []))}
        self.observation_spaces = {a: self.batch.single_observation_space
                                   for a in self.possible_agents}
        self.action_spaces = dict(zip(self.possible_agents, agent_action_spaces(self.batch)))

    def observation_space(self, agent: str) -> gym.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gym.Space:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Start a game; every agent is live. ``options`` is accepted (PettingZoo's
        signature) and unused."""
        obs, _ = self.batch.reset(seed=seed)
        self._obs = obs
        self.agents = self.possible_agents[:]
        views = self.batch.agent_observations(obs)
        return ({a: v[0] for a, v in zip(self.possible_agents, views)},
                {a: {} for a in self.possible_agents})

    def step(self, actions: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
        """Every live agent's action (all of them: the game steps its agents together)."""
        if not self.agents:
            raise ValueError("step() with no live agent: call reset() first")
        missing = [a for a in self.agents if a not in actions]
        extra = [a for a in actions if a not in self.agents]
        if missing or extra:
            raise ValueError(f"step() needs one action per live agent {self.agents}; "
                             f"missing {missing}, not live {extra}")
        column = np.stack([np.asarray(actions[a]) for a in self.possible_agents])
        obs, reward, terminated, truncated, _ = self.batch.step(column[None])
        self._obs = obs
        views = self.batch.agent_observations(obs)
        rewards = self.batch.agent_rewards(reward)
        done = bool(terminated[0]), bool(truncated[0])
        agents = self.possible_agents
        out: tuple[dict[str, Any], ...] = ({a: v[0] for a, v in zip(agents, views)},
               {a: float(r[0]) for a, r in zip(agents, rewards)},
               {a: done[0] for a in agents}, {a: done[1] for a in agents},
               {a: {} for a in agents})
        if any(done):
            self.agents = []
        return out

    def state(self) -> np.ndarray:
        """The global view: the first agent's observation (BatchPong: the court as the left
        player sees it, all of it)."""
        return self.batch.agent_observations(self._obs)[0][0].copy()

    def render(self) -> Any:
        frames = self.batch.render()
        return None if frames is None else frames[0]

    def close(self) -> None:
        self.batch.close()


def parallel_env(env: type[BatchEnv] | str, **kwargs: Any) -> BatchParallelEnv:
    """One game of the multi-agent env ``env`` (an id such as ``"batchenv/Pong-v0"``, or a
    BatchEnv class) as a PettingZoo ``ParallelEnv``; ``kwargs`` go to the class (after its
    ``multi_agent_kwargs``: ``"batchenv/Pong-v0"`` is ``mode="two_player"`` unless
    ``mode="rally"`` is given). Needs ``pettingzoo`` (``pip install batchenv[pettingzoo]``)."""
    return BatchParallelEnv(env, **kwargs)


class AgentsAsEnvs(VectorEnv):
    """N games of k agents as a Gymnasium ``VectorEnv`` of N*k single-agent envs: row
    ``i * k + a`` is agent ``a`` of game ``i`` (its observation view, its action column, its
    reward; the game's flags). Auto-reset is the game's (every mode; SAME_STEP's
    ``final_obs`` holds each agent's view). Made by :func:`agents_as_envs`."""

    def __init__(self, env: Any) -> None:
        if not is_multi_agent(env):
            raise TypeError(f"{type(env).__name__} is not multi-agent (no possible_agents; see "
                            f"batchenv.adapters.pettingzoo's docstring)")
        self.env: Any = env
        self.agents = tuple(env.possible_agents)
        k = self.k = len(self.agents)
        self.num_games = env.num_envs
        self.num_envs = env.num_envs * k
        self.autoreset_mode = env.autoreset_mode
        self.metadata = {**env.metadata, "autoreset_mode": env.autoreset_mode}
        self.render_mode = env.render_mode
        self.single_observation_space = env.single_observation_space
        action_spaces = agent_action_spaces(env)
        if any(s != action_spaces[0] for s in action_spaces):
            raise TypeError(f"the agents' action spaces differ ({action_spaces}): one batch "
                            f"of single-agent envs needs one action space")
        self.single_action_space = action_spaces[0]
        self.observation_space = batched_space(self.single_observation_space, self.num_envs)
        self.action_space = batched_space(self.single_action_space, self.num_envs)

    def _rows(self, per_agent: tuple[np.ndarray, ...]) -> np.ndarray:
        """Interleave each agent's arrays over the games into rows ``i * k + a``."""
        return np.stack(per_agent, axis=1).reshape(self.num_envs, *per_agent[0].shape[1:])

    def _games(self, rows: np.ndarray) -> np.ndarray:
        """Rows of a per-agent mask (all equal within a game) back to one per game."""
        return rows.reshape(self.num_games, self.k)[:, 0]

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: Mapping[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset the games (``seed``: per game, as the batch takes it; a ``reset_mask`` per
        row must be equal within each game)."""
        if options and "reset_mask" in options:
            mask = np.asarray(options["reset_mask"])
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise ValueError(f"options['reset_mask'] must be a bool array of shape "
                                 f"({self.num_envs},), one entry per agent row")
            games = mask.reshape(self.num_games, self.k)
            if (games != games[:, :1]).any():
                raise ValueError("options['reset_mask'] must reset every agent of a game "
                                 "together (rows i * k to i * k + k - 1)")
            options = {**options, "reset_mask": games[:, 0].copy()}
        obs, info = self.env.reset(seed=seed, options=options)
        return self._rows(self.env.agent_observations(obs)), info

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        """Step every game with its agents' actions (rows ``i * k + a``)."""
        actions = np.asarray(actions)
        if actions.shape[:1] != (self.num_envs,):
            raise ValueError(f"actions must have one row per agent of every game "
                             f"({self.num_envs} = {self.num_games} games x {self.k}), got "
                             f"shape {actions.shape}")
        per_game = actions.reshape(self.num_games, self.k, *actions.shape[1:])
        obs, reward, terminated, truncated, info = self.env.step(per_game)
        out_info = self._expand(info)
        if "final_obs" in info:  # SAME_STEP: each agent's view of its game's last obs
            ended = info["_final_obs"]
            final = np.full(self.num_envs, None, dtype=object)
            if ended.any():
                last = np.stack(list(info["final_obs"][ended]))
                views = self.env.agent_observations(last)
                for j, game in enumerate(np.flatnonzero(ended)):
                    for a in range(self.k):
                        final[game * self.k + a] = views[a][j]
            out_info["final_obs"] = final
        return (self._rows(self.env.agent_observations(obs)),
                self._rows(self.env.agent_rewards(reward)),
                np.repeat(terminated, self.k), np.repeat(truncated, self.k), out_info)

    def _expand(self, info: dict[str, Any]) -> dict[str, Any]:
        """The game's info for every agent row: arrays over the games repeated k times."""
        out: dict[str, Any] = {}
        for key, value in info.items():
            if isinstance(value, dict):
                out[key] = self._expand(value)
            elif isinstance(value, np.ndarray) and value.shape[:1] == (self.num_games,):
                out[key] = np.repeat(value, self.k, axis=0)
            else:
                out[key] = value
        return out

    def render(self) -> tuple[Any, ...] | None:
        return self.env.render()

    def close_extras(self, **kwargs: Any) -> None:
        # (also from Gymnasium's VectorEnv.__del__ after a constructor that raised)
        if "env" in self.__dict__:
            self.env.close()


def agents_as_envs(env: BatchEnv) -> AgentsAsEnvs:
    """The batched route: the N games of the multi-agent ``env`` as a ``VectorEnv`` of N*k
    single-agent envs (see :class:`AgentsAsEnvs`)."""
    return AgentsAsEnvs(env)
