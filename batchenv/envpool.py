"""EnvPool's Python API on batchenv's envs: a script written for EnvPool runs with
``import batchenv.envpool as envpool`` in place of ``import envpool``.

``make(task_id, env_type, num_envs=..., seed=..., ...)`` builds the batched env the task id
names and gives it EnvPool's interface: ``reset``, ``step``, ``async_reset``,
``send(action, env_id)``, ``recv``, the single-env ``observation_space`` and
``action_space``, and EnvPool's ``info`` keys. Task ids:

* ``"Pong-v5"``: :class:`~batchenv.BatchPong`'s 84 x 84 grayscale pixels (BatchPong's own
  Pong, not ALE's: 3 actions, its own court and physics), with EnvPool's Atari processing
  where it has a meaning here: frames stacked to ``(stack_num, img_height, img_width)``
  (4 x 84 x 84), ``reward_clip``, ``episodic_life``, and the Atari ``info`` keys
  (``lives``, ``reward``, ``terminated``). ALE's own knobs (``frame_skip``, ``noop_max``,
  ...) are accepted at EnvPool's default value and refused at any other (:data:`ATARI`).
* a Gymnasium id that batchenv has a batched env for (``"CartPole-v1"``, ``"Acrobot-v1"``,
  ``"MinAtar/Breakout-v1"``, ``"MiniGrid-Empty-8x8-v0"``, ...) or a native id
  (``"batchenv/MinAtar-Breakout-v1"``): that env, with EnvPool's common options.

``env_type="gymnasium"`` gives EnvPool's Gymnasium API: ``reset() -> (obs, info)``,
``step``/``recv`` ``-> (obs, reward, terminated, truncated, info)``. ``env_type="gym"`` gives
the API EnvPool's ``gym`` wrapper has with gym < 0.26 (what CleanRL pins): ``reset() -> obs``
(``(obs, info)`` with ``gym_reset_return_info=True``), ``step``/``recv`` ``-> (obs, reward,
done, info)`` with ``info["TimeLimit.truncated"]``, and ``gym.spaces`` when ``gym`` is
installed (Gymnasium's otherwise). With gym >= 0.26 installed EnvPool's ``gym`` wrapper
changes to the five-value API; this module refuses ``env_type="gym"`` then, and
``env_type="gymnasium"`` gives that API.

Every env resets the step after its episode ends, as EnvPool's do (the action is ignored,
reward 0, flags False), and env ``i`` is seeded ``seed + i`` (EnvPool's default seed 42).
``batch_size < num_envs`` (EnvPool's asynchronous mode) is honoured in the one way a
synchronous batch can honour it: the envs are in fixed groups of ``batch_size``
(``num_envs`` must be a multiple), ``send`` steps the groups whose ids it is given, and
``recv`` returns the group that has waited longest. EnvPool promises only that ``recv``
returns ``batch_size`` envs that are ready, so this is one of its possible orders; it
overlaps nothing (a group steps in ``send``, on the calling thread). Options that cannot be
honoured (``env_type="dm"``, rendering, XLA, ``max_num_players > 1``) raise, naming them.
See ``docs/integrations.md``.
"""

from __future__ import annotations

import importlib
import warnings
from collections import deque, namedtuple
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from batchenv.core import BatchEnv
from batchenv.registration import _native_entry, list_envs
from batchenv.validation import action_checker, is_int

__all__ = ["make", "make_gym", "make_gymnasium", "make_spec", "list_all_envs", "EnvPool",
           "EnvSpec", "ATARI", "COMMON"]

#: EnvPool's options common to every task (``envpool/core/env_spec.h``,
#: ``common_config``) with EnvPool's defaults. ``num_threads``, ``thread_affinity_offset``:
#: how EnvPool schedules its threads; accepted and without effect here (the batch steps in
#: one call on the calling thread; results do not depend on them in EnvPool either).
#: ``base_path``: where EnvPool finds its assets; accepted and unused.
COMMON: dict[str, Any] = {
    "num_envs": 1, "batch_size": 0, "num_threads": 0, "max_num_players": 1,
    "thread_affinity_offset": -1, "base_path": "envpool", "seed": 42,
    "gym_reset_return_info": False, "max_episode_steps": None, "reward_threshold": None,
}
#: EnvPool's Atari options (``envpool/atari/atari_env.h``, ``AtariEnvFns::DefaultConfig``,
#: EnvPool 0.6-0.8) and their defaults. ``stack_num``, ``img_height``, ``img_width``,
#: ``reward_clip``, ``repeat_action_probability`` are honoured; ``episodic_life`` and
#: ``zero_discount_on_life_loss`` are accepted with either value (BatchPong has no lives, as
#: ALE's Pong: EnvPool's wrapper changes nothing there either); ``gray_scale`` must be True;
#: the others describe ALE's emulation (frames per step, no-op starts, FIRE on reset, the
#: resize filter, the ROM and its action set), which BatchPong does not have: accepted at
#: these default values only.
ATARI: dict[str, Any] = {
    "stack_num": 4, "frame_skip": 4, "noop_max": 30, "zero_discount_on_life_loss": False,
    "episodic_life": False, "reward_clip": False, "use_fire_reset": True, "img_height": 84,
    "img_width": 84, "task": "pong", "full_action_space": False,
    "repeat_action_probability": 0.0, "use_inter_area_resize": True, "gray_scale": True,
    "mode": -1, "difficulty": -1,
}
_HONOURED_ATARI = {"stack_num", "img_height", "img_width", "reward_clip",
                   "repeat_action_probability", "episodic_life", "zero_discount_on_life_loss"}
#: EnvPool's ids mapped to a batchenv class with Atari processing: (class, its keywords,
#: EnvPool's max_episode_steps for the id: 27000 agent steps, ``atari/registration.py``).
_ATARI_TASKS: dict[str, tuple[str | type[BatchEnv], dict[str, Any], int]] = {
    "Pong-v5": ("batchenv.envs.pong:BatchPong",
                {"mode": "cpu", "obs_type": "pixels", "channel_axis": None}, 27000),
}
#: EnvPool options this module cannot honour, and why.
_REFUSED = {
    "render_mode": "rendering through EnvPool's render() is not provided",
    "render_env_id": "rendering through EnvPool's render() is not provided",
    "render_width": "rendering through EnvPool's render() is not provided",
    "render_height": "rendering through EnvPool's render() is not provided",
    "render_camera_id": "rendering through EnvPool's render() is not provided",
    "from_pixels": "a MuJoCo option; batchenv has no MuJoCo tasks",
}
ENV_TYPES = ("gym", "gymnasium")


class EnvSpec:
    """What ``make_spec`` returns and ``env.spec`` holds, as EnvPool's: the task id, the
    options (``config``, a namedtuple; ``env.config`` is the dict), the single-env
    ``observation_space`` and ``action_space`` and ``reward_threshold``."""

    def __init__(self, task_id: str, config: dict[str, Any], observation_space: Any,
                 action_space: Any) -> None:
        self.id = task_id
        self.config: Any = namedtuple("Config", list(config))(**config)
        self.observation_space = observation_space
        self.action_space = action_space
        self.reward_threshold = config.get("reward_threshold")
        self.max_episode_steps = config.get("max_episode_steps")

    def __repr__(self) -> str:
        return f"EnvSpec({self.id!r}, {self.config})"


class _Task:
    """A task id read once: the class, its keywords, whether Atari processing applies."""

    def __init__(self, task_id: str) -> None:
        if not isinstance(task_id, str):
            raise TypeError(f"task_id must be a str, got {type(task_id).__name__}")
        self.id = task_id
        if task_id in _ATARI_TASKS:
            path, kwargs, steps = _ATARI_TASKS[task_id]
            self.atari, self.kwargs = True, dict(kwargs)
            self.max_episode_steps: int | None = steps
            if isinstance(path, str):
                module, name = path.split(":")
                path = getattr(importlib.import_module(module), name)
            self.cls: type[BatchEnv] = path
            return
        entry = _native_entry(task_id)
        if entry is None:
            raise ValueError(f"{task_id!r} is not a task batchenv.envpool has; "
                             f"batchenv.envpool.list_all_envs() lists them")
        self.atari, self.kwargs = False, dict(entry.kwargs)
        self.max_episode_steps = entry.max_episode_steps
        self.cls = entry.load()

    def options(self, kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(EnvPool's config with the caller's values, the keywords left for the class)."""
        for name, why in _REFUSED.items():
            if name in kwargs:
                raise ValueError(f"batchenv.envpool.make: {name}: {why}")
        config = {**COMMON, "max_episode_steps": self.max_episode_steps}
        if self.atari:
            config.update(ATARI)
        else:
            atari = sorted(set(kwargs) & set(ATARI) - {"mode"})  # (a BatchPong keyword too)
            if atari:
                raise ValueError(f"{atari} are EnvPool's Atari options; {self.id!r} is not "
                                 f"an Atari task (the Atari tasks: {list(_ATARI_TASKS)})")
        rest = {k: v for k, v in kwargs.items() if k not in config}
        config.update({k: v for k, v in kwargs.items() if k in config})
        self._check_common(config)
        if self.atari:
            self._check_atari(config, rest)
        return config, rest

    def _check_common(self, config: dict[str, Any]) -> None:
        """Refuse EnvPool's common options this task cannot honour; ``num_envs`` and
        ``batch_size`` (0: ``num_envs``) become ints."""
        n = config["num_envs"]
        if not is_int(n) or n < 1:
            raise ValueError(f"num_envs must be an int >= 1, got {n!r}")
        b = config["batch_size"] or n
        if not is_int(b) or not 1 <= b <= n:
            raise ValueError(f"batch_size must be an int in [0, num_envs={n}] (0: num_envs), "
                             f"got {config['batch_size']!r}")
        if n % b:
            raise ValueError(f"batch_size={b} must divide num_envs={n}: the envs step in "
                             f"fixed groups of batch_size (EnvPool's asynchronous mode, as "
                             f"far as a synchronous batch can honour it; see "
                             f"batchenv.envpool's docstring)")
        config["num_envs"], config["batch_size"] = int(n), int(b)
        if config["max_num_players"] != 1:
            raise ValueError(f"max_num_players must be 1 ({self.id!r} has one player), got "
                             f"{config['max_num_players']!r}")
        if config["gym_reset_return_info"] not in (True, False):
            raise ValueError(f"gym_reset_return_info must be a bool, got "
                             f"{config['gym_reset_return_info']!r}")

    def _check_atari(self, config: dict[str, Any], rest: dict[str, Any]) -> None:
        """Refuse the Atari options BatchPong cannot honour, and class keywords the task id
        sets."""
        for name, default in ATARI.items():
            if name not in _HONOURED_ATARI and config[name] != default:
                raise ValueError(
                    f"{name}={config[name]!r} cannot be honoured: {self.id} is BatchPong, "
                    f"not ALE's Pong, and has no {name}; only EnvPool's default "
                    f"{name}={default!r} is accepted (batchenv.envpool.ATARI)")
        for name in ("stack_num", "img_height", "img_width"):
            v = config[name]
            if not is_int(v) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {v!r}")
        taken = sorted(set(rest) & {"mode", "obs_type", "channel_axis", "pixel_shape"})
        if taken:
            raise ValueError(f"{taken} are set by the task id {self.id!r} (BatchPong's "
                             f"pixels); use batchenv.BatchPong for other forms")

    def build(self, num_envs: int, config: dict[str, Any], rest: dict[str, Any]
              ) -> BatchEnv:
        kwargs = {**self.kwargs, **rest, "max_episode_steps": config["max_episode_steps"]}
        if self.atari:
            kwargs.update(pixel_shape=(config["img_height"], config["img_width"]),
                          repeat_action_probability=config["repeat_action_probability"])
        for name in ("autoreset_mode", "num_envs", "n"):
            if name in kwargs:
                raise ValueError(f"{name} is EnvPool's to set (every env resets the step "
                                 f"after its episode ends), not a keyword of make")
        return self.cls(num_envs, **kwargs)


def _gym_module(env_type: str) -> Any:
    """``gym`` for ``env_type="gym"`` when installed (its spaces), else None; refuses a gym
    whose EnvPool wrapper has the five-value API."""
    if env_type != "gym":
        return None
    try:
        import gym
    except ImportError:
        return None
    major, minor = (int(x) for x in gym.__version__.split(".")[:2])
    if (major, minor) >= (0, 26):
        raise ValueError(f"env_type='gym' gives EnvPool's gym < 0.26 API (reset -> obs, step "
                         f"-> 4 values); with gym {gym.__version__} installed EnvPool's gym "
                         f"wrapper has the five-value API, which env_type='gymnasium' gives")
    return gym


def _to_gym_space(gym: Any, space: spaces.Space) -> Any:
    if isinstance(space, spaces.Discrete):
        return gym.spaces.Discrete(int(space.n))
    if isinstance(space, spaces.MultiDiscrete):
        return gym.spaces.MultiDiscrete(space.nvec)
    if isinstance(space, spaces.Box):
        return gym.spaces.Box(space.low, space.high, space.shape, space.dtype)
    if isinstance(space, spaces.MultiBinary):
        return gym.spaces.MultiBinary(space.n)
    raise TypeError(f"no gym space for {space}")


class _Group:
    """``batch_size`` envs stepped together: one batched env, and (Atari tasks) their
    frame stacks."""

    def __init__(self, env: BatchEnv, ids: np.ndarray, stack_num: int) -> None:
        self.env, self.ids, self.stack_num = env, ids, stack_num
        n = len(ids)
        self.elapsed = np.zeros(n, dtype=np.int32)
        self.was_done = np.zeros(n, dtype=np.bool_)  # ended last step: resets this step
        frame = tuple(env.single_observation_space.shape or ())
        self.stack = np.zeros((n, stack_num, *frame), dtype=env.single_observation_space.dtype) \
            if stack_num else None

    def observe(self, obs: np.ndarray, fresh: np.ndarray | None) -> np.ndarray:
        """The observation returned: ``obs`` itself, or the frame stacks with ``obs`` pushed
        (every slot of the envs in ``fresh``, which start an episode)."""
        if self.stack is None:
            return obs
        self.stack[:, :-1] = self.stack[:, 1:]
        self.stack[:, -1] = obs
        if fresh is None:
            self.stack[:] = obs[:, None]
        elif fresh.any():
            self.stack[fresh] = obs[fresh][:, None]
        return self.stack.copy()


class EnvPool:
    """EnvPool's env object over batchenv's envs; made by :func:`make` (see the module's
    docstring for what is honoured)."""

    def __init__(self, task_id: str, env_type: str, **kwargs: Any) -> None:
        if env_type not in ENV_TYPES:
            raise ValueError(f"env_type must be one of {ENV_TYPES}, got {env_type!r}"
                             + (" (dm_env's API is not provided)" if env_type == "dm" else ""))
        gym = _gym_module(env_type)
        task = _Task(task_id)
        config, rest = task.options(kwargs)
        n, b = config["num_envs"], config["batch_size"]
        seed = config["seed"]
        if isinstance(seed, (Sequence, np.ndarray)) and not isinstance(seed, str):
            if len(seed) != n:
                raise ValueError(f"seed as a sequence must have num_envs={n} entries, got "
                                 f"{len(seed)}")
            seeds: list[Any] = [list(int(x) for x in seed[g:g + b]) for g in range(0, n, b)]
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            seeds = [int(seed) + g for g in range(0, n, b)]
        else:
            raise TypeError(f"seed must be an int or a sequence of num_envs ints, got {seed!r}")
        self._atari = task.atari
        stack_num = config["stack_num"] if task.atari else 0
        self._groups = [_Group(task.build(b, config, rest), np.arange(g, g + b, dtype=np.int32),
                               stack_num) for g in range(0, n, b)]
        self._seeds = seeds
        self._reward_clip = bool(task.atari and config["reward_clip"])
        self._old_api = env_type == "gym"
        self._return_info = bool(config["gym_reset_return_info"])
        first = self._groups[0].env
        self._check_action = action_checker(first.single_action_space, b,
                                            first.box_action_bounds)
        obs_space, act_space = _spaces(first, stack_num, gym)
        self.env_type = env_type
        self.num_envs = n
        #: EnvPool's spaces are one env's
        self.observation_space = self.single_observation_space = obs_space
        self.action_space = self.single_action_space = act_space
        self.spec = EnvSpec(task_id, config, obs_space, act_space)
        self.metadata: dict[str, Any] = {}
        self.reward_range = (-float("inf"), float("inf"))
        self._ready: deque[tuple[int, tuple[Any, ...]]] = deque()  # (group, result) to recv
        self._in_flight = [False] * len(self._groups)  # sent or ready, not yet received
        self._started = False
        self.closed = False

    # ------------------------------------------------------------------ EnvPool's calls
    @property
    def config(self) -> dict[str, Any]:
        """The options the env was made with (EnvPool's names), as a dict."""
        return self.spec.config._asdict()

    @property
    def all_env_ids(self) -> np.ndarray:
        """Every env id, int32, as EnvPool."""
        return np.arange(self.num_envs, dtype=np.int32)

    @property
    def is_async(self) -> bool:
        """True when ``batch_size < num_envs``."""
        return len(self._groups) > 1

    def __len__(self) -> int:
        return self.num_envs

    def reset(self, env_id: np.ndarray | None = None) -> Any:
        """Reset the envs ``env_id`` (default: all) and return their observations
        (``(obs, info)`` for ``env_type="gymnasium"`` or ``gym_reset_return_info=True``).
        Only in synchronous mode, as EnvPool (asynchronous: :meth:`async_reset`)."""
        self._check_open()
        if self.is_async:
            raise ValueError("reset() is not defined in asynchronous mode (batch_size < "
                             "num_envs), as in EnvPool: use async_reset() and recv()")
        group = self._groups[0]
        ids = group.ids if env_id is None else self._ids(env_id)
        self._ready.clear()
        self._in_flight[0] = False
        if not self._started or env_id is None:
            obs, info = self._reset_group(0)
            if env_id is not None:
                obs, info = obs[ids], _rows(info, ids)
        else:
            mask = np.zeros(self.num_envs, dtype=np.bool_)
            mask[ids] = True
            obs, _ = group.env.reset(options={"reset_mask": mask})
            group.elapsed[mask] = 0
            group.was_done[mask] = False
            if group.stack is not None:
                group.stack[mask] = obs[mask][:, None]
                obs = group.stack.copy()
            info = self._info(group, np.zeros(len(group.ids), np.bool_), None)
            obs = obs[ids]
            info = _rows(info, ids)
        if self._old_api and not self._return_info:
            return obs
        if self._old_api:
            info["TimeLimit.truncated"] = np.zeros(len(ids), dtype=np.bool_)
        return obs, info

    def async_reset(self) -> None:
        """Reset every env; the next :meth:`recv` calls return their first observations
        (reward 0, flags False), ``batch_size`` envs at a time."""
        self._check_open()
        self._ready.clear()
        for g in range(len(self._groups)):
            obs, info = self._reset_group(g)
            n = len(self._groups[g].ids)
            zeros = np.zeros(n, dtype=np.bool_)
            self._ready.append((g, self._result(obs, np.zeros(n, np.float32), zeros, zeros,
                                                info)))
            self._in_flight[g] = True

    def send(self, action: Any, env_id: np.ndarray | None = None) -> None:
        """Step the envs ``env_id`` (default: all) with ``action`` (one row per id, in the
        order of ``env_id``; or EnvPool's dict ``{"action": ..., "env_id": ...}``). The ids
        must be whole groups of ``batch_size`` envs that :meth:`recv` returned."""
        self._check_open()
        if isinstance(action, Mapping):
            action, env_id = action["action"], action.get("env_id", env_id)
        if not self._started:
            raise ValueError("send() before reset() or async_reset()")
        ids = self.all_env_ids if env_id is None else self._ids(env_id)
        action = np.asarray(action)
        if len(action) != len(ids):
            raise ValueError(f"send(): {len(action)} actions for {len(ids)} env ids")
        b = len(self._groups[0].ids)
        order = np.argsort(ids, kind="stable")
        ids, action = ids[order], action[order]
        groups = np.unique(ids // b)
        whole = len(ids) == len(groups) * b and np.array_equal(
            ids, (groups[:, None] * b + np.arange(b)).ravel())
        if not whole:
            raise ValueError(f"send(): env_id must be whole groups of batch_size={b} envs "
                             f"(the ids recv() returned); got {np.sort(ids).tolist()}")
        busy = [int(g) for g in groups if self._in_flight[g]]
        if busy:
            raise ValueError(f"send(): envs {self._groups[busy[0]].ids.tolist()} were sent "
                             f"already and not received yet: recv() them first")
        if len(groups) > 1:  # every group's actions checked before any group steps
            for k in range(len(groups)):
                self._check_action(action[k * b:(k + 1) * b])
        results = []
        for k, g in enumerate(groups.tolist()):
            results.append((g, self._step_group(g, action[k * b:(k + 1) * b])))
        for g, result in results:
            self._ready.append((g, result))
            self._in_flight[g] = True

    def recv(self, reset: bool = False, return_info: bool = True) -> Any:
        """The results of the group that has waited longest: ``(obs, reward, terminated,
        truncated, info)`` (``env_type="gym"``: ``(obs, reward, done, info)``), arrays over
        its ``batch_size`` envs, ``info["env_id"]`` their ids."""
        self._check_open()
        if not self._ready:
            raise ValueError("recv() with nothing sent: call async_reset() or send() first")
        g, result = self._ready.popleft()
        self._in_flight[g] = False
        return result

    def step(self, action: Any, env_id: np.ndarray | None = None) -> Any:
        """``send(action, env_id)``, then ``recv()``, as EnvPool."""
        self.send(action, env_id)
        return self.recv()

    def seed(self, seed: Any = None) -> None:
        """Abandoned in EnvPool too: seed with ``make(..., seed=...)``."""
        warnings.warn("The `seed` function in envpool is abandoned. You can set seed by "
                      "envpool.make(..., seed=seed) instead.", stacklevel=2)

    def xla(self) -> Any:
        """EnvPool's XLA interface (JAX): not provided."""
        raise NotImplementedError("batchenv.envpool does not provide EnvPool's xla() "
                                  "interface: step with send()/recv() or step()")

    def render(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("batchenv.envpool does not provide EnvPool's render(); "
                                  "the batched env (batchenv.make) renders")

    def close(self) -> None:
        for group in self._groups:
            group.env.close()
        self.closed = True

    def __repr__(self) -> str:
        config = ", ".join(f"{k}={v!r}" for k, v in self.config.items())
        return f"{type(self).__name__}({self.spec.id!r}, {config})"

    # ------------------------------------------------------------------ helpers
    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("the env is closed")

    def _ids(self, env_id: Any) -> np.ndarray:
        ids = np.asarray(env_id)
        if ids.ndim != 1 or ids.dtype.kind not in "iu":
            raise ValueError(f"env_id must be a 1-D integer array, got {env_id!r}")
        if len(ids) == 0 or ids.min() < 0 or ids.max() >= self.num_envs \
                or len(np.unique(ids)) != len(ids):
            raise ValueError(f"env_id must hold distinct ids in [0, {self.num_envs}), got "
                             f"{ids.tolist()}")
        return ids.astype(np.int32)

    def _reset_group(self, g: int) -> tuple[np.ndarray, dict[str, Any]]:
        group = self._groups[g]
        obs, _ = group.env.reset(seed=self._seeds[g] if not self._started else None)
        if g == len(self._groups) - 1:
            self._started = True
        group.elapsed[:] = 0
        group.was_done[:] = False
        obs = group.observe(obs, None)
        return obs, self._info(group, np.zeros(len(group.ids), np.bool_), None)

    def _step_group(self, g: int, action: np.ndarray) -> tuple[Any, ...]:
        group = self._groups[g]
        fresh = group.was_done
        obs, reward, terminated, truncated, _ = group.env.step(action)
        group.elapsed += 1
        group.elapsed[fresh] = 0  # these envs reset in this step (EnvPool's auto-reset)
        obs = group.observe(obs, fresh)
        truncated = truncated.copy()
        game_over = terminated.copy()
        terminated = terminated & ~truncated  # EnvPool: terminated = done & ~trunc
        group.was_done = terminated | truncated
        info = self._info(group, game_over, reward)
        if self._reward_clip:
            reward = np.sign(reward).astype(reward.dtype)
        return self._result(obs, reward, terminated, truncated, info)

    def _info(self, group: _Group, game_over: np.ndarray, reward: np.ndarray | None
              ) -> dict[str, Any]:
        ids = group.ids.copy()
        info: dict[str, Any] = {"env_id": ids, "players": {"env_id": ids.copy()},
                                "elapsed_step": group.elapsed.copy()}
        if self._atari:
            n = len(ids)
            info["lives"] = np.zeros(n, dtype=np.int32)  # BatchPong has no lives (as Pong)
            info["reward"] = (np.zeros(n, np.float32) if reward is None
                              else reward.astype(np.float32))
            info["terminated"] = game_over.astype(np.int32)
        return info

    def _result(self, obs: np.ndarray, reward: np.ndarray, terminated: np.ndarray,
                truncated: np.ndarray, info: dict[str, Any]) -> tuple[Any, ...]:
        if self._old_api:
            info["TimeLimit.truncated"] = truncated
            return obs, reward, terminated | truncated, info
        return obs, reward, terminated, truncated, info


def _spaces(env: BatchEnv, stack_num: int, gym: Any) -> tuple[Any, Any]:
    """The single-env observation and action spaces EnvPool's env has for ``env``'s task:
    frames stacked (Atari tasks), ``gym.spaces`` for ``env_type="gym"`` with gym."""
    obs_space: Any = env.single_observation_space
    if stack_num:
        obs_space = spaces.Box(0, 255, (stack_num, *obs_space.shape), np.uint8)
    act_space: Any = env.single_action_space
    if gym is not None:
        obs_space, act_space = _to_gym_space(gym, obs_space), _to_gym_space(gym, act_space)
    return obs_space, act_space


def _rows(info: dict[str, Any], ids: np.ndarray) -> dict[str, Any]:
    return {k: _rows(v, ids) if isinstance(v, dict) else v[ids] for k, v in info.items()}


def _env_class(env_type: str) -> type[EnvPool]:
    """EnvPool's envs are ``gym.Env`` / ``gymnasium.Env`` instances (wrappers check)."""
    base: Any = gymnasium.Env
    if env_type == "gym":
        gym = _gym_module("gym")
        if gym is None:
            return EnvPool
        base = gym.Env
    if env_type not in _CLASSES:
        name = {"gym": "GymEnvPool", "gymnasium": "GymnasiumEnvPool"}[env_type]
        _CLASSES[env_type] = type(name, (EnvPool, base), {"__module__": __name__})
    return _CLASSES[env_type]


_CLASSES: dict[str, type[EnvPool]] = {}


def make(task_id: str, env_type: str, **kwargs: Any) -> EnvPool:
    """EnvPool's ``envpool.make``: ``num_envs`` envs of ``task_id`` behind EnvPool's API
    (``env_type`` ``"gym"`` or ``"gymnasium"``). ``kwargs``: EnvPool's options for the task
    (see :data:`COMMON`, :data:`ATARI`); any other keyword goes to the batchenv class
    (``points_to_win=5`` for ``"Pong-v5"``), which refuses what it does not know."""
    if env_type not in ENV_TYPES:
        raise ValueError(f"env_type must be one of {ENV_TYPES}, got {env_type!r}"
                         + (" (dm_env's API is not provided)" if env_type == "dm" else ""))
    return _env_class(env_type)(task_id, env_type, **kwargs)


def make_gym(task_id: str, **kwargs: Any) -> EnvPool:
    """``make(task_id, "gym", **kwargs)``."""
    return make(task_id, "gym", **kwargs)


def make_gymnasium(task_id: str, **kwargs: Any) -> EnvPool:
    """``make(task_id, "gymnasium", **kwargs)``."""
    return make(task_id, "gymnasium", **kwargs)


def make_dm(task_id: str, **kwargs: Any) -> EnvPool:
    """EnvPool's dm_env API: not provided."""
    raise ValueError("batchenv.envpool does not provide EnvPool's dm_env API (make_dm, "
                     "env_type='dm'): use env_type='gymnasium' or 'gym'")


def make_spec(task_id: str, **kwargs: Any) -> EnvSpec:
    """EnvPool's ``make_spec``: the options and the single-env spaces (Gymnasium's) of
    ``make(task_id, ..., **kwargs)``, made from a batch of one env."""
    task = _Task(task_id)
    config, rest = task.options(kwargs)
    env = task.build(1, config, rest)
    env.close()
    return EnvSpec(task_id, config, *_spaces(env, config["stack_num"] if task.atari else 0,
                                             None))


def list_all_envs() -> list[str]:
    """The task ids :func:`make` accepts: EnvPool's ids mapped to a batchenv env, the
    Gymnasium ids batchenv has batched envs for, and batchenv's own ids."""
    from batchenv.registration import registry

    gym_ids = sorted({e.gymnasium_id for e in registry.values() if e.gymnasium_id})
    return [*_ATARI_TASKS, *gym_ids, *list_envs()]
