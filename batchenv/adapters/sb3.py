"""A Gymnasium ``VectorEnv`` as a Stable-Baselines3 ``VecEnv``.

Stable-Baselines3 (SB3) has its own vector-env API, older than Gymnasium's:

==========================  =====================================  ==============================
                            Gymnasium ``VectorEnv``                SB3 ``VecEnv``
==========================  =====================================  ==============================
``reset()``                 ``(obs, info)``; ``reset(seed=...)``   ``obs``; seeds via ``seed(s)``
                                                                   before it
``step(a)``                 ``obs, reward, terminated,             ``obs, reward (float32), done,
                            truncated, info``                      infos`` (a list of dicts)
episode end                 auto-reset per ``autoreset_mode``      always in the same step:
                                                                   ``infos[i]["terminal_
                                                                   observation"]`` holds the
                                                                   true last observation and
                                                                   ``infos[i]["TimeLimit.
                                                                   truncated"]`` tells a time
                                                                   limit from a real end
info                        one dict of arrays + ``_key`` masks    one dict per env
==========================  =====================================  ==============================

:class:`SB3VecEnv` translates, with numpy over the whole batch; its only Python loops build
the list of per-env info dicts that SB3 requires (and touch only the envs that have info).

Auto-reset: with ``AutoresetMode.SAME_STEP`` the env already resets finished envs in the
same step and returns ``info["final_obs"]``, which becomes ``terminal_observation``. With
``NEXT_STEP`` (Gymnasium's default) or ``DISABLED``, the adapter copies the final
observations out of the step's result and then resets exactly the finished envs at once with
``reset(options={"reset_mask": done})``, so the env never takes its no-op reset step. Both
give SB3 the same transitions; SAME_STEP is slightly cheaper (no second call).

Images: SB3 takes an observation for an image (``is_image_space``: the normalisation by 255,
``CnnPolicy``, ``VecFrameStack``'s channel stacking, ``VecTransposeImage``) only when it is
a uint8 ``Box`` in [0, 255] with three axes. A grayscale image without a channel axis,
``(H, W)`` (ALE's ``obs_type="grayscale"``, ``BatchPong(obs_type="pixels")``), is therefore
given to SB3 as ``(H, W, 1)`` (a view, no copy), as SB3's own ``AtariWrapper`` gives its
frames; ``add_channel_axis=False`` keeps ``(H, W)``.

The batched env is one object, not ``num_envs`` objects: :meth:`get_attr` and
:meth:`env_method` act on it once and return the result once per requested index;
:meth:`set_attr` sets the attribute of the whole batch and refuses a subset of indices.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

try:
    from stable_baselines3.common.vec_env.base_vec_env import (
        VecEnv,
        VecEnvIndices,
        VecEnvObs,
        VecEnvStepReturn,
    )
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("batchenv.adapters.sb3 needs stable-baselines3: "
                      "pip install 'batchenv[sb3]' (or pip install stable-baselines3)") from exc

__all__ = ["SB3VecEnv"]

_FINAL_KEYS = {"final_obs", "_final_obs", "final_info", "_final_info"}


class SB3VecEnv(VecEnv):
    """A Gymnasium ``VectorEnv`` behind Stable-Baselines3's ``VecEnv`` API.

    Args:
        vector_env: a Gymnasium vector env (batchenv env or any ``VectorEnv``, wrapped or
            not). Its ``metadata["autoreset_mode"]`` decides how episode ends are handled
            (missing: ``NEXT_STEP``, Gymnasium's default). NEXT_STEP and DISABLED envs must
            support ``reset(options={"reset_mask": mask})``, as batchenv's envs and
            Gymnasium's ``SyncVectorEnv``/``AsyncVectorEnv`` do.

    ``infos[i]`` of an env whose episode ended holds ``"terminal_observation"``,
    ``"TimeLimit.truncated"`` (truncated and not terminated, as SB3's ``DummyVecEnv``) and the
    env's per-env info of that step (``final_info`` under SAME_STEP, and keys added by vector
    wrappers such as ``RecordEpisodeStatistics``'s ``"episode"``, which SB3 logs like its
    ``Monitor``'s). The reset info of the next episode goes to ``reset_infos[i]``.

    ``add_channel_axis`` (default True): a grayscale image observation without a channel
    axis (uint8 ``Box`` in [0, 255] of shape ``(H, W)``) is given to SB3 as ``(H, W, 1)``,
    the channel-last layout SB3's image pipeline (``VecFrameStack``, ``VecTransposeImage``,
    ``CnnPolicy``) needs; every observation, ``terminal_observation`` included, is a view
    of the env's with that axis added.
    """

    def __init__(self, vector_env: VectorEnv, *, add_channel_axis: bool = True) -> None:
        if not isinstance(vector_env, VectorEnv):
            raise TypeError(f"to_sb3 needs a gymnasium.vector.VectorEnv, got "
                            f"{type(vector_env).__name__}")
        self.venv = vector_env
        mode = vector_env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        self.autoreset_mode = AutoresetMode(mode)
        # Envs that return fresh arrays (batchenv's default copy=True, SyncVectorEnv's
        # copy=True) need no second copy; views of internal buffers (copy=False) do, because
        # SB3 keeps the observations it is given.
        self._env_copies = getattr(vector_env.unwrapped, "copy", False) is True
        self._actions: np.ndarray | None = None
        observation_space = vector_env.single_observation_space
        self._add_channel = bool(add_channel_axis) and _is_grayscale_image(observation_space)
        if self._add_channel:
            shape = (*observation_space.shape, 1)  # type: ignore[misc]  # a Box's: a tuple
            observation_space = spaces.Box(0, 255, shape, np.uint8)
        super().__init__(vector_env.num_envs, observation_space,
                         vector_env.single_action_space)
        self.metadata = vector_env.metadata

    # ------------------------------------------------------------------ stepping
    def reset(self) -> VecEnvObs:
        """Reset every env (with the seeds of the last :meth:`seed` call and the options of
        the last :meth:`set_options` call, both used once) and return the observations."""
        obs, info = self.venv.reset(seed=self._seed_argument(),  # type: ignore[arg-type]
                                    options=self._options_argument())  # (a seed list is ok)
        self.reset_infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for i, env_info in _split_info(info).items():
            self.reset_infos[i] = env_info
        self._reset_seeds()
        self._reset_options()
        return self._own(obs)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions).reshape(self.venv.action_space.shape)

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise RuntimeError("step_wait() called without step_async()")
        actions, self._actions = self._actions, None
        obs, reward, terminated, truncated, info = self.venv.step(actions)
        done = np.logical_or(terminated, truncated)
        rows = np.flatnonzero(done)

        if self.autoreset_mode is AutoresetMode.SAME_STEP:
            # The env has reset the finished envs already; their last observations are in
            # info["final_obs"], the info of their last step in info["final_info"], and the
            # other entries of info (for those envs) are their new episode's reset info.
            per_env = _split_info({k: v for k, v in info.items() if k not in _FINAL_KEYS})
            final_info = _split_info(info.get("final_info", {}))
            final_obs = info["final_obs"][rows] if len(rows) else ()
            reset_info = per_env
        else:
            # NEXT_STEP / DISABLED: obs holds the final observations of the finished envs.
            # Keep them, then reset exactly those envs now: SB3 expects the next episode's
            # first observation in this same step.
            per_env = _split_info(info)
            final_info = {}
            final_obs = obs[rows]  # a copy (fancy indexing)
            reset_info = {}
            if len(rows):
                obs, info_after_reset = self.venv.reset(options={"reset_mask": done.copy()})
                reset_info = _split_info(info_after_reset)

        # SB3 wants one dict per env, a new one each step (its wrappers edit them in place).
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for i, env_info in per_env.items():
            infos[i].update(env_info)
        time_limit = truncated & ~terminated
        for j, i in enumerate(rows.tolist()):
            infos[i].update(final_info.get(i, {}))
            infos[i]["terminal_observation"] = self._shaped(final_obs[j])
            infos[i]["TimeLimit.truncated"] = bool(time_limit[i])
            self.reset_infos[i] = dict(reset_info.get(i, {}))
        return self._own(obs), np.array(reward, dtype=np.float32), done, infos

    def close(self) -> None:
        self.venv.close()

    # ------------------------------------------------------------------ rendering
    def get_images(self) -> Sequence[np.ndarray | None]:
        """One RGB frame per env (``render_mode="rgb_array"``), for SB3's tiled ``render``."""
        if self.render_mode != "rgb_array":
            return [None] * self.num_envs
        return [np.asarray(frame) for frame in self.venv.render() or ()]

    # ------------------------------------------------------------------ attributes
    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The batched env's attribute (searched through its wrappers), once per index."""
        value = getattr(self._owner(attr_name), attr_name)
        return [value] * len(self._index_list(indices))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set the attribute of the whole batch (on the wrapper or env that defines it)."""
        self._require_all(indices, "set_attr")
        setattr(self._owner(attr_name, missing_ok=True), attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        """Call the batched env's method once; its result is returned once per index.
        The method acts on the whole batch, whatever ``indices`` says."""
        method = getattr(self._owner(method_name), method_name)
        result = method(*method_args, **method_kwargs)
        return [result] * len(self._index_list(indices))

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        """Whether ``wrapper_class`` is among the vector env's wrappers (the same answer for
        every env: the batch is wrapped as a whole)."""
        wrapped = any(isinstance(env, wrapper_class) for env in _wrapper_chain(self.venv))
        return [wrapped] * len(self._index_list(indices))

    # ------------------------------------------------------------------ helpers
    def _own(self, array: np.ndarray) -> np.ndarray:
        return self._shaped(array if self._env_copies else np.array(array))

    def _shaped(self, array: np.ndarray) -> np.ndarray:
        """Observations as SB3 sees them: with a trailing channel axis for 2-D images."""
        return array[..., None] if self._add_channel else array

    def _seed_argument(self) -> int | list[int | None] | None:
        seeds = self._seeds
        if all(s is None for s in seeds):
            return None
        first = seeds[0]
        if first is not None and seeds == list(range(first, first + len(seeds))):
            return int(first)  # env i gets seed s + i: Gymnasium's and batchenv's int seed
        return list(seeds)

    def _options_argument(self) -> dict[str, Any] | None:
        options = self._options
        if all(not o for o in options):
            return None
        if any(o != options[0] for o in options):
            raise ValueError("a batched env takes one options dict for all envs; "
                             "set_options() was given different options per env")
        return dict(options[0])

    def _index_list(self, indices: VecEnvIndices) -> list[int]:
        index_list = list(self._get_indices(indices))
        bad = [i for i in index_list if not 0 <= int(i) < self.num_envs]
        if bad:
            raise IndexError(f"env indices {bad} out of range for {self.num_envs} envs")
        return index_list

    def _require_all(self, indices: VecEnvIndices, what: str) -> None:
        if sorted(set(self._index_list(indices))) != list(range(self.num_envs)):
            raise ValueError(f"{what}: a batched env's attributes are shared by all its envs; "
                             "pass indices=None (all envs)")

    def _owner(self, name: str, missing_ok: bool = False) -> Any:
        """The first wrapper or env, from the outside in, that has attribute ``name``."""
        for env in _wrapper_chain(self.venv):
            if hasattr(env, name):
                return env
        if missing_ok:
            return self.venv
        raise AttributeError(f"{type(self.venv).__name__} (and its wrapped envs) has no "
                             f"attribute {name!r}")


def _is_grayscale_image(space: Any) -> bool:
    """A uint8 ``Box`` of shape ``(H, W)`` with bounds [0, 255]: an image to SB3 once it
    has a channel axis (``stable_baselines3.common.preprocessing.is_image_space``)."""
    return (isinstance(space, spaces.Box) and space.dtype == np.uint8
            and len(space.shape) == 2 and bool(np.all(space.low == 0))
            and bool(np.all(space.high == 255)))


def _wrapper_chain(env: Any) -> Iterable[Any]:
    """``env``, the env it wraps, and so on down to the unwrapped env."""
    while True:
        yield env
        inner = getattr(env, "env", None)
        if inner is None or inner is env:
            return
        env = inner


def _split_info(info: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """A Gymnasium vector info dict as one dict per env, for the envs that have entries.

    Each key ``k`` comes with a mask ``_k`` of the envs it holds a value for; nested dicts
    (``RecordEpisodeStatistics``'s ``"episode"``, ``final_info``) are split the same way.
    Keys without a mask are not per-env data and are left out."""
    out: dict[int, dict[str, Any]] = {}
    for key, value in info.items():
        mask = info.get(f"_{key}")
        if key.startswith("_") or mask is None:
            continue
        for i in np.flatnonzero(mask).tolist():
            out.setdefault(i, {})[key] = _entry(value, i)
    return out


def _entry(value: Any, i: int) -> Any:
    if isinstance(value, dict):
        return {k: _entry(v, i) for k, v in value.items()
                if not k.startswith("_") and (f"_{k}" not in value or value[f"_{k}"][i])}
    return value[i]
