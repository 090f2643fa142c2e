"""``BatchEnv``: the Gymnasium ``VectorEnv`` base class of every batched environment.

An environment author declares the state schema and the spaces and writes three kernels;
everything episodic lives here, once:

* storage of N states (:mod:`batchenv.state`), preallocated output buffers;
* auto-reset in the three Gymnasium modes, ``reset(options={"reset_mask": m})``;
* time limits (``max_episode_steps``; ``truncated`` apart from ``terminated``);
* seeding: env i's stream is a function of ``(seed + i)`` alone (:mod:`batchenv.random`);
* validation of actions, seeds, masks and call order, with errors naming the bad envs;
* ``get_state``/``set_state`` snapshots, pickling, ``render`` plumbing.

See ``docs/writing_envs.md`` for the walkthrough and ``docs/autoreset.md`` for the
call-by-call semantics of each auto-reset mode.
"""

from __future__ import annotations

import difflib
import os
import secrets
from collections.abc import Callable, Mapping, Sequence
from copy import deepcopy
from typing import Any, ClassVar, Generic, TypeVar, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.error import ClosedEnvironmentError, ResetNeeded
from gymnasium.spaces.box import array_short_repr
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from batchenv._envpool import EnvPoolAPI
from batchenv.random import MAX_SEED, BatchRandom, seed_keys
from batchenv.state import State, from_records, put_rows, schema, take_rows, to_records

__all__ = ["BatchEnv", "AutoresetMode", "StepBeforeResetError", "ClosedEnvError"]

#: Columns the base class adds to every env's state schema (reserved field names).
BASE_FIELDS: list[tuple[str, Any]] = [
    ("elapsed_steps", np.int64),  # steps taken in the current episode
    ("rng_key", np.uint64),  # the row's random stream: hash of its seed
    ("rng_counter", np.uint64),  # position in that stream
    ("awaiting_reset", np.bool_),  # episode over; NEXT_STEP: resets on the next step;
    #                                DISABLED: frozen until reset(options={"reset_mask": ...})
]
_BASE_NAMES = {name for name, _ in BASE_FIELDS}
_MAX_LISTED = 10  # env indices listed in an error message
_USE_CLASS_DEFAULT: Any = object()
S = TypeVar("S", bound=State)  # an env's state type: State, or its typed subclass
#: The keys ``BatchEnv.reset(options=...)`` accepts.
RESET_OPTIONS = ("reset_mask",)


class StepBeforeResetError(ResetNeeded, ValueError):
    """``step`` (or ``render``) was called before the first ``reset``."""


class ClosedEnvError(ClosedEnvironmentError, ValueError):
    """A method was called on a closed env."""


def _listed(idx: np.ndarray) -> str:
    """Env indices for an error message: the first few, and how many in all."""
    shown = ", ".join(str(int(i)) for i in idx[:_MAX_LISTED])
    more = f", ... ({len(idx)} envs in all)" if len(idx) > _MAX_LISTED else ""
    return f"[{shown}{more}]"


class BatchEnv(EnvPoolAPI, VectorEnv, Generic[S]):
    """Base class of batched environments: N games in one state, stepped by numpy kernels.

    Subclasses set :attr:`state_type` (a typed :class:`~batchenv.state.State` subclass,
    which gives :attr:`state_dtype`) or :attr:`state_dtype`, :attr:`single_action_space` and
    :attr:`single_observation_space` (class attributes, or instance attributes set before
    calling ``super().__init__``) and implement the kernels :meth:`reset_envs`,
    :meth:`step_envs` and :meth:`observe` (optionally :meth:`render_envs`).

    Args:
        num_envs: number of envs in the batch (also accepted as ``n=``; default 1).
        autoreset_mode: ``AutoresetMode.NEXT_STEP`` (default), ``SAME_STEP`` or ``DISABLED``
            (or their string values); see ``docs/autoreset.md``.
        max_episode_steps: truncate episodes after this many steps (``None``: never);
            defaults to the class's :attr:`default_max_episode_steps`.
        copy: return copies of the observation/reward/flag arrays (default). With
            ``copy=False`` they are views of internal buffers, overwritten by the next call.
        validate: check every action (shape, dtype, range, NaN/inf). ``False`` skips the
            checks for speed; invalid actions then have undefined results.
        render_mode: one of ``metadata["render_modes"]`` or ``None``.
        debug: check what every kernel produces and raise naming the method and the field
            (:mod:`batchenv.debug`); ``None`` (default): on when the environment variable
            ``BATCHENV_DEBUG`` is set to anything but ``""``/``"0"``. Off costs nothing.

    ``SyncVectorEnv``'s API, for one batched object: :attr:`np_random_seed` is one seed
    per env; :meth:`call` and :meth:`get_attr` run or read once on the batch and return the
    result once per env (``render`` and ``np_random_seed``: their per-env entries);
    :meth:`set_attr` sets the batch's attribute (per-env values must be equal).
    """

    metadata: dict[str, Any] = {"render_modes": []}
    #: The class of :attr:`state`: :class:`~batchenv.state.State`, or a subclass whose
    #: annotations declare the fields (``ball_x: Field[np.float32]``); then
    #: :attr:`state_dtype` is made from them and type checkers know the kernels' fields.
    state_type: ClassVar[type[State]] = State
    #: The schema of one env's state (the base class appends :data:`BASE_FIELDS`); made
    #: from :attr:`state_type` when that declares fields and this is not given.
    state_dtype: ClassVar[np.dtype]
    #: Time limit used when the constructor is not given ``max_episode_steps``.
    default_max_episode_steps: ClassVar[int | None] = None
    #: Box actions outside the space's bounds: ``"clip"`` them to the bounds before the
    #: kernel sees them (as Gymnasium's classic-control envs do), ``"raise"`` ``ValueError``
    #: naming the envs, or ``"pass"`` them unchanged (the env's kernel applies its own rule).
    #: NaN and inf always raise.
    box_action_bounds: ClassVar[str] = "clip"
    #: Names whose value on the batch already holds one entry per env (a sequence of
    #: ``num_envs``): :meth:`call` and :meth:`get_attr` return them as a tuple as they are,
    #: where any other attribute is one value shared by every env (see :meth:`call`).
    per_env_attributes: ClassVar[frozenset[str]] = frozenset({"render", "np_random_seed"})
    #: Per-env seed values of the current streams (see :attr:`np_random_seed`); None until
    #: drawn or given.
    _seed_values: np.ndarray | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.state_type is not State and "state_dtype" not in vars(cls) \
                and "state_type" in vars(cls):
            cls.state_dtype = schema(cls.state_type)

    def __init__(
        self,
        num_envs: int | None = None,
        *,
        n: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        max_episode_steps: int | None = _USE_CLASS_DEFAULT,
        copy: bool = True,
        validate: bool = True,
        render_mode: str | None = None,
        debug: bool | None = None,
    ) -> None:
        self.num_envs = _check_num_envs(num_envs, n)
        self.autoreset_mode = _check_autoreset_mode(autoreset_mode)
        if max_episode_steps is _USE_CLASS_DEFAULT:
            max_episode_steps = self.default_max_episode_steps
        self.max_episode_steps = _check_max_episode_steps(max_episode_steps)
        self.copy = bool(copy)
        self.validate = bool(validate)
        modes = type(self).metadata.get("render_modes", [])
        if render_mode is not None and render_mode not in modes:
            raise ValueError(f"render_mode must be one of {modes} or None, got {render_mode!r}")
        self.render_mode = render_mode
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}

        for attr in ("state_dtype", "single_action_space", "single_observation_space"):
            if getattr(self, attr, None) is None:
                raise TypeError(f"{type(self).__name__} must define {attr}")
        clash = _BASE_NAMES.intersection(self.state_dtype.names or ())
        if clash:
            raise TypeError(f"state_dtype uses field names reserved by BatchEnv: {clash}")
        _check_observation_space(self.single_observation_space)
        self.full_state_dtype = np.dtype(self.state_dtype.descr + BASE_FIELDS)
        self.action_space = batched_space(self.single_action_space, self.num_envs)
        self.observation_space = batched_space(self.single_observation_space, self.num_envs)
        if self.box_action_bounds not in ("clip", "raise", "pass"):
            raise TypeError(f"{type(self).__name__}.box_action_bounds must be 'clip', 'raise' "
                            f"or 'pass', got {self.box_action_bounds!r}")
        self._action_check = _action_checker(self.single_action_space, self.num_envs,
                                             self.box_action_bounds)

        n_envs = self.num_envs
        self.state: S = cast(S, self.state_type(self.full_state_dtype, n_envs))
        space = self.single_observation_space
        self._obs = np.zeros((n_envs, *(space.shape or ())), dtype=space.dtype)
        self._reward = np.zeros(n_envs, dtype=np.float64)
        self._flags = np.zeros((2, n_envs), dtype=np.bool_)  # one block: one scatter resets both
        self._terminated, self._truncated = self._flags
        self._episode_over = np.zeros(n_envs, dtype=np.bool_)
        self._rng = BatchRandom(self.state.rng_key, self.state.rng_counter)
        self._seeded = False
        self._needs_reset = True  # no state yet: step() before reset() is an error
        self.closed = False
        if debug is None:
            debug = os.environ.get("BATCHENV_DEBUG", "") not in ("", "0")
        self.debug = bool(debug)
        if self.debug:
            from batchenv.debug import install

            install(self)

    # ------------------------------------------------------------------ kernels (override)
    def reset_envs(self, s: S, rng: BatchRandom) -> None:
        """Fill every row of ``s`` with a start state, drawing randomness from ``rng``.

        ``s`` holds only the rows being reset (all of them, or the masked / finished ones);
        its base columns (``elapsed_steps``, ...) are handled by the base class.
        """
        raise NotImplementedError(
            f"{type(self).__name__} must implement reset_envs(self, s, rng): write a start "
            f"state into every row of s (fields in place: s.x[:] = ...), drawing only from "
            f"rng; see docs/first_env.md")

    def step_envs(self, s: S, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Advance every row of ``s`` in place by one step with ``action`` (validated, one row
        per env). Return ``(reward, terminated)``, arrays of shape ``(num_envs,)`` (the base
        class copies them: they may be buffers the env reuses). Time limits and auto-reset
        are the base class's job."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement step_envs(self, s, action, rng): advance "
            f"every row of s in place and return (reward, terminated), two arrays of shape "
            f"(num_envs,); see docs/first_env.md")

    def observe(self, s: S, out: np.ndarray) -> None:
        """Write the observation of every row of ``s`` into ``out`` (``len(s)`` rows)."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement observe(self, s, out): write the "
            f"observation of every row of s into every entry of out (out[:] = ...; do not "
            f"return it); see docs/first_env.md")

    def render_envs(self, s: S) -> Sequence[Any] | np.ndarray:
        """Frames (``rgb_array``: uint8 (H, W, 3) arrays; ``ansi``: strings), one per row."""
        raise NotImplementedError(f"{type(self).__name__} does not render")

    # ------------------------------------------------------------------ making it fast
    # Optional: a correct env needs none of this. docs/performance.md says what each saves
    # on the shipped envs and how it was measured.

    #: An instance attribute (set it after ``super().__init__``; default False): True when
    #: :meth:`observe` writes every entry of ``out`` from the state alone. With ``copy=True``
    #: the base class then lets ``observe`` fill a fresh array and returns it, instead of
    #: filling its buffer and copying that. Leave it False when ``observe`` updates ``out``
    #: incrementally (BatchPong's tiles and pixels).
    observe_fills_out: bool = False

    def reset_rows(self, s: S, rows: np.ndarray, rng: BatchRandom) -> None:
        """Fill rows ``rows`` (sorted indices) of the full state ``s`` with start states;
        ``rng`` draws for those rows only. The base class calls this for masked resets and
        auto-resets.

        The default copies the rows out, calls :meth:`reset_envs` on the copy and writes it
        back. Override it when a start state is a few fields, to write them at ``rows``
        directly; it must draw exactly what ``reset_envs`` would (the contract tests check
        that resets of a subset and of the whole batch agree)."""
        sub = take_rows(s, rows)
        self.reset_envs(sub, BatchRandom(sub.rng_key, sub.rng_counter))
        put_rows(s, rows, sub)

    # ------------------------------------------------------------------ Gymnasium API
    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset all envs, or the envs of ``options["reset_mask"]`` (a bool array of shape
        ``(num_envs,)``; the others are untouched and keep their observation).

        ``seed``: ``None`` (keep each stream; fresh entropy on the very first reset), an int
        ``s`` (env i gets seed ``s + i``, as ``SyncVectorEnv``) or a list of ``num_envs``
        ints / ``None``. With a mask, only masked envs are reseeded. Before the first full
        reset, an all-True mask is a full reset and any other mask raises
        :class:`StepBeforeResetError`.
        """
        self._check_open()
        mask = _check_options(options, self.num_envs)
        values, given = self._check_seed(seed)
        if mask is not None and self._needs_reset:
            if not mask.all():
                raise StepBeforeResetError(
                    "reset(options={'reset_mask': ...}) needs a previous full reset(): the "
                    "unmasked envs have no state yet")
            mask = None  # an all-True mask is a full reset, as SyncVectorEnv takes it
        if not self._seeded:  # first reset: envs without a seed get fresh entropy (drawn
            fresh = self._pending_seeds()  # already if np_random_seed was asked for)
            values[~given] = fresh[~given]
            given[:] = True
        reseed = given if mask is None else given & mask
        if reseed.any():
            rows = np.flatnonzero(reseed)
            self.state.rng_key[rows] = seed_keys(values[rows])
            self.state.rng_counter[rows] = 0
            if self._seed_values is None:
                self._seed_values = np.zeros(self.num_envs, dtype=np.uint64)
            self._seed_values[rows] = values[rows]
        self._seeded = True
        if mask is None:
            self._reset_rows(self.state, self._rng)
            self._needs_reset = False
        else:
            self._reset_subset(np.flatnonzero(mask))
        self.observe(self.state, self._obs)
        return self._out(self._obs), {}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        """Step every env with ``actions`` (one row per env); see ``docs/autoreset.md``."""
        if self._needs_reset:
            self._check_open()
            raise StepBeforeResetError("step() called before reset(): call reset() first")
        action = self._action_check(actions) if self.validate else _read_only(actions)
        s = self.state
        over = s.awaiting_reset
        # count_nonzero and .nonzero() skip the reduction machinery of any()/flatnonzero()
        waiting = over.nonzero()[0] if np.count_nonzero(over) else None
        frozen = counters = None
        if waiting is not None:
            if self.autoreset_mode is AutoresetMode.DISABLED:
                frozen = take_rows(s, waiting)
            else:  # NEXT_STEP: their step is discarded, and so is whatever it draws
                counters = s.rng_counter[waiting]

        try:
            result = self.step_envs(s, action, self._rng)
        except ValueError as e:
            if "read-only" in str(e):
                raise ValueError(f"step_envs wrote into a read-only array ({e}): the action "
                                 f"is read-only, so that the caller's array never changes; "
                                 f"compute into a new array (a = action.astype(...), "
                                 f"action + 1, ...)") from e
            raise
        try:
            reward, terminated = result
            if self.copy:  # the caller's copy, made straight from the kernel's array
                reward = np.array(reward, dtype=np.float64)
                if reward.shape != self._reward.shape:
                    raise ValueError(f"reward has shape {reward.shape}")
            else:  # copy=False: the caller sees the buffer
                if np.shape(reward) != self._reward.shape:  # no silent broadcast of a scalar
                    raise ValueError(f"reward has shape {np.shape(reward)}")
                np.copyto(self._reward, reward)
                reward = self._reward
            np.copyto(self._terminated, terminated)
        except (TypeError, ValueError) as e:
            raise TypeError(_bad_step_return(result, self.num_envs, e)) from None
        s.elapsed_steps += 1
        if self.max_episode_steps is not None:
            np.greater_equal(s.elapsed_steps, self.max_episode_steps, out=self._truncated)

        info: dict[str, Any] = {}
        if waiting is not None:
            if frozen is not None:  # DISABLED: finished envs stand still
                put_rows(s, waiting, frozen)
            else:  # NEXT_STEP: this step resets them, ignoring their action; their reset
                # draws from where their streams stood before the discarded step, as a
                # reset(options={"reset_mask": ...}) from the same state would
                s.rng_counter[waiting] = counters
                self._reset_subset(waiting)
            reward[waiting] = 0.0
            self._flags[:, waiting] = False  # terminated and truncated

        mode = self.autoreset_mode
        if mode is AutoresetMode.NEXT_STEP:  # every env awaiting a reset was reset above
            np.logical_or(self._terminated, self._truncated, out=s.awaiting_reset)
        else:
            np.logical_or(self._terminated, self._truncated, out=self._episode_over)
            if mode is AutoresetMode.SAME_STEP:
                if np.count_nonzero(self._episode_over):
                    info = self._reset_same_step(self._episode_over.nonzero()[0])
            else:  # DISABLED: frozen envs stay frozen
                np.logical_or(s.awaiting_reset, self._episode_over, out=s.awaiting_reset)
        if not self.copy:
            self.observe(s, self._obs)
            return self._obs, reward, self._terminated, self._truncated, info
        if self.observe_fills_out:
            obs = np.empty_like(self._obs)
            self.observe(s, obs)
        else:
            self.observe(s, self._obs)
            obs = self._obs.copy()
        terminated, truncated = self._flags.copy()  # one copy of their block
        return obs, reward, terminated, truncated, info

    @property
    def np_random_seed(self) -> tuple[int, ...]:  # type: ignore[override]  # as Sync's
        """The seed of each env's random stream, a tuple of ``num_envs`` ints, as
        ``SyncVectorEnv.np_random_seed``: ``(s, s+1, ..., s+n-1)`` after ``reset(seed=s)``;
        the list's entries after ``reset(seed=[...])`` (envs given ``None`` keep theirs);
        unchanged by ``reset()`` without a seed. Before the first reset, the fresh seeds
        that the first unseeded reset will use (as a Gymnasium env draws its seed when
        asked). ``-1`` (Gymnasium's "unknown") for an env whose stream was restored by
        :meth:`set_state` from another seed's snapshot."""
        if not self._seeded:
            return tuple(self._pending_seeds().tolist())
        seeds = self._seed_values
        if seeds is None:  # set_state before any reset
            return (-1,) * self.num_envs
        known = seed_keys(seeds) == self.state.rng_key
        return tuple(np.where(known, seeds.astype(np.int64), -1).tolist())

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call the batched env's method ``name`` with ``args``/``kwargs`` (or read the
        attribute, if it is not callable), as ``SyncVectorEnv.call``, and return a tuple of
        ``num_envs`` results.

        The batch is one object, so the method runs **once**, on all envs together.
        Attributes in :attr:`per_env_attributes` (``render``, ``np_random_seed``) already
        give one entry per env: their entries are returned (``call("render")`` is the
        frames of every env, ``(None,) * num_envs`` without a ``render_mode``). Any other
        result is the batch's, shared by every env, and is returned once per env:
        ``(result,) * num_envs`` (``get_attr("params")`` is ``(params,) * num_envs``, the
        same object)."""
        attr = getattr(self, name)
        value = attr(*args, **kwargs) if callable(attr) else attr
        if name not in self.per_env_attributes:
            return (value,) * self.num_envs
        if value is None:
            return (None,) * self.num_envs
        value = tuple(value)
        if len(value) != self.num_envs:
            raise RuntimeError(f"{type(self).__name__}.{name} is listed in "
                               f"per_env_attributes but gave {len(value)} entries for "
                               f"{self.num_envs} envs")
        return value

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """The attribute ``name``, one entry per env: :meth:`call` (as
        ``SyncVectorEnv.get_attr``)."""
        return self.call(name)

    def set_attr(self, name: str, values: list[Any] | tuple[Any, ...] | Any) -> None:
        """Set the batch's attribute ``name``, as ``SyncVectorEnv.set_attr``: ``values`` is
        one value for every env, or a list/tuple of ``num_envs`` values. The batch has one
        attribute for all its envs, so a list's values must all be equal (else
        ``ValueError`` names the envs that differ from env 0's). It sets the attribute
        only: what the constructor derived from it (spaces, buffers) is not rebuilt."""
        setattr(self, name, one_attr_value(name, values, self.num_envs))

    def render(self) -> tuple[Any, ...] | None:
        """One frame per env, in env order (``None`` when ``render_mode`` is ``None``)."""
        self._check_open()
        if self.render_mode is None:
            gym.logger.warn(
                f"{type(self).__name__}.render() called without a render_mode; pass "
                f"render_mode=... (one of {self.metadata.get('render_modes')}) to the "
                "constructor")
            return None
        if self._needs_reset:
            raise StepBeforeResetError("render() called before reset(): call reset() first")
        return tuple(self.render_envs(self.state))

    def close(self, **kwargs: Any) -> None:
        """Release resources (:meth:`close_extras`); later calls raise ``ClosedEnvError``."""
        self._needs_reset = True
        super().close(**kwargs)

    def close_extras(self, **kwargs: Any) -> None:
        """Release what subclasses hold (windows, files); the base class holds nothing."""

    # ------------------------------------------------------------------ state access
    def get_state(self) -> np.ndarray:
        """The whole batch as a structured array of ``full_state_dtype`` (one record per env):
        the env's fields plus step counters, RNG keys/counters and pending auto-resets."""
        self._check_open()
        return to_records(self.state)

    def set_state(self, states: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Restore envs from records made by :meth:`get_state` and return the observations of
        all envs (a copy).

        ``states`` has ``num_envs`` records, or (with ``mask``) one per True entry of
        ``mask``; with ``mask`` only those envs change. A full ``set_state`` also counts as a
        reset (``step`` may follow)."""
        self._check_open()
        if not isinstance(states, np.ndarray) or states.dtype != self.full_state_dtype:
            got = states.dtype if isinstance(states, np.ndarray) else type(states).__name__
            raise TypeError(f"set_state: states must be a structured array of dtype "
                            f"env.full_state_dtype={self.full_state_dtype}, got {got}")
        if mask is None:
            if states.shape != (self.num_envs,):
                raise ValueError(f"set_state: states must have shape ({self.num_envs},), "
                                 f"got {states.shape}")
            self._check_state_values(states, np.arange(self.num_envs))
            from_records(self.state, states)
            self._needs_reset = False
        else:
            mask = _check_mask(mask, self.num_envs, "set_state: mask")
            idx = np.flatnonzero(mask)
            if states.shape == (self.num_envs,):
                states = states[idx]
            elif states.shape != (len(idx),):
                raise ValueError(f"set_state: with a mask, states must have shape "
                                 f"({self.num_envs},) or ({len(idx)},) (one per True entry), "
                                 f"got {states.shape}")
            if self._needs_reset:
                raise StepBeforeResetError("set_state with a mask needs a full reset() or "
                                           "set_state() first")
            self._check_state_values(states, idx)
            from_records(self.state, states, idx)
        self._seeded = True
        self.observe(self.state, self._obs)
        return self._obs.copy()

    def check_state(self, states: np.ndarray) -> dict[str, np.ndarray]:
        """The env's own invariants, checked by :meth:`set_state` before it writes anything.

        ``states``: the records being set (``full_state_dtype``). Return ``{problem: bad}``,
        ``bad`` a bool array over the records (True where the problem occurs), e.g.
        ``{"score outside [0, 21]": (states["score"] < 0) | (states["score"] > 21)}``;
        the base class raises ``ValueError`` naming the env indices. NaN/inf in float
        fields are always rejected. Default: no invariants."""
        return {}

    def _check_state_values(self, states: np.ndarray, env_idx: np.ndarray) -> None:
        problems: dict[str, Any] = {}
        for name in self.state_dtype.names or ():
            col = states[name]
            if col.dtype.kind in "fc":
                problems[f"field {name!r} is NaN or inf"] = ~np.isfinite(col)
        problems.update(self.check_state(states))
        found = []
        for what, bad in problems.items():
            bad = np.asarray(bad, dtype=bool).reshape(len(states), -1).any(axis=1)
            if bad.any():
                found.append(f"{what} at env indices {_listed(env_idx[bad])}")
        if found:
            raise ValueError("set_state: states rejected (nothing was changed): "
                             + "; ".join(found))

    # ------------------------------------------------------------------ helpers
    def _out(self, array: np.ndarray) -> np.ndarray:
        return array.copy() if self.copy else array

    def _check_open(self) -> None:
        if self.closed:
            raise ClosedEnvError(f"{type(self).__name__} is closed: make a new env")

    def _reset_rows(self, s: S, rng: BatchRandom) -> None:
        self.reset_envs(s, rng)
        s.elapsed_steps[...] = 0
        s.awaiting_reset[...] = False

    def _reset_subset(self, idx: np.ndarray) -> None:
        s = self.state
        self.reset_rows(s, idx, self._rng.at(idx))
        s.elapsed_steps[idx] = 0
        s.awaiting_reset[idx] = False

    def _reset_same_step(self, done: np.ndarray) -> dict[str, Any]:
        final = take_rows(self.state, done)
        final_obs_rows = np.empty((len(done), *self._obs.shape[1:]), dtype=self._obs.dtype)
        self.observe(final, final_obs_rows)
        self._reset_subset(done)
        final_obs = np.full(self.num_envs, None, dtype=object)
        # each entry as the single env returns it: a Discrete observation is a Python int
        # (as SyncVectorEnv's entries), anything else an array
        entries = final_obs_rows.tolist() if isinstance(
            self.single_observation_space, spaces.Discrete) else list(final_obs_rows)
        final_obs[done] = entries
        return {"final_obs": final_obs, "_final_obs": self._episode_over.copy(),
                "final_info": {}, "_final_info": self._episode_over.copy()}

    def _pending_seeds(self) -> np.ndarray:
        """Before the first reset: the fresh seeds (uint64, one per env) that envs reset
        without a seed will use, drawn once."""
        if self._seed_values is None:
            self._seed_values = np.uint64(secrets.randbits(62)) + np.arange(
                self.num_envs, dtype=np.uint64)
        return self._seed_values

    def _check_seed(self, seed: Any) -> tuple[np.ndarray, np.ndarray]:
        """Per-env seed values (uint64) and which envs were given one."""
        return check_seed(seed, self.num_envs)

    def __getstate__(self) -> dict[str, Any]:
        d = self.__dict__.copy()
        for rebuilt in ("_rng", "_action_check", "_terminated", "_truncated"):  # rebuilt below
            d.pop(rebuilt, None)
        if d.get("debug"):  # the checking wrappers are closures: installed again below
            from batchenv.debug import KERNELS

            for name in KERNELS:
                d.pop(name, None)
        return d

    def __setstate__(self, d: dict[str, Any]) -> None:
        self.__dict__.update(d)
        self._terminated, self._truncated = self._flags  # views again, not copies
        self._rng = BatchRandom(self.state.rng_key, self.state.rng_counter)
        self._action_check = _action_checker(self.single_action_space, self.num_envs,
                                             self.box_action_bounds)
        if d.get("debug"):
            from batchenv.debug import install

            install(self)


def field_outside(states: np.ndarray, name: str, low: float, high: float
                  ) -> tuple[str, np.ndarray]:
    """``(problem, bad)`` for :meth:`BatchEnv.check_state`: records whose field ``name`` is
    outside ``[low, high]``, the bounds taken in the field's own dtype (float32 -1.2 is not
    below -1.2)."""
    col = states[name]
    lo, hi = np.asarray(low).astype(col.dtype), np.asarray(high).astype(col.dtype)
    return f"{name} outside [{low:g}, {high:g}]", (col < lo) | (col > hi)


def one_attr_value(name: str, values: Any, num_envs: int) -> Any:
    """The one value ``set_attr(name, values)`` gives a batch: ``values`` itself, or the
    entry of a list/tuple of ``num_envs`` equal values (``ValueError`` naming the envs whose
    value differs from env 0's)."""
    if not isinstance(values, (list, tuple)):
        return values
    if len(values) != num_envs:
        raise ValueError(f"set_attr: values must be one value or a list/tuple of "
                         f"num_envs={num_envs} values, got {len(values)} values")
    first = values[0]
    differ = [i for i, v in enumerate(values)
              if v is not first and not data_equivalence(v, first, exact=True)]
    if differ:
        raise ValueError(f"set_attr({name!r}): a batched env has one {name!r} shared by "
                         f"all its envs, so per-env values must be equal; values differ "
                         f"from env 0's at env indices {_listed(np.array(differ))}")
    return first


def _bad_step_return(result: Any, num_envs: int, error: Exception) -> str:
    if isinstance(result, tuple) and len(result) == 2:
        got = ", ".join(f"{type(x).__name__} of dtype {np.asarray(x).dtype} and shape "
                        f"{np.shape(x)}" for x in result)
        problem = f"got ({got}): {error}"
    else:
        size = f" of length {len(result)}" if isinstance(result, (tuple, list)) else ""
        problem = f"got {type(result).__name__}{size}"
    return (f"step_envs must return (reward, terminated): two arrays of shape ({num_envs},), "
            f"numbers and bools; {problem}")


#: Observation spaces BatchEnv stores in one array per batch.
_OBS_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def _check_observation_space(space: Any) -> None:
    if not isinstance(space, _OBS_SPACES):
        raise TypeError(
            f"single_observation_space of type {type(space).__name__} is not supported (yet): "
            f"use a Box (put the parts side by side in one array; "
            f"gymnasium.spaces.flatten_space shows the layout), Discrete, MultiDiscrete or "
            f"MultiBinary; got {space}")


def batched_space(space: gym.Space, n: int) -> gym.Space:
    """``gymnasium.vector.utils.batch_space(space, n)``, except that a ``Box`` keeps its
    bounds as zero-stride views of one copy of the single space's (no memory per env):
    writable, so that clients converting them (``torch.as_tensor``) do not warn, and a
    write to an element sets it for every env.

    Gymnasium's batched ``Box`` holds four arrays the size of the whole observation (low,
    high and their boundedness masks): 1.8 GB for 65,536 84x84 pixel observations, 60 bytes
    per env for BatchPong's 6 floats. The views compare, sample and pickle as usual."""
    if type(space) is not spaces.Box:
        return batch_space(space, n)
    shape = (n, *space.shape)
    box = spaces.Box.__new__(spaces.Box)
    box.__dict__.update(space.__dict__)  # dtype, the repr caches, and what Box may add later
    box._shape = shape
    for name in ("low", "high", "bounded_below", "bounded_above"):
        # writable (torch.as_tensor, as TorchRL's GymWrapper calls it, warns on read-only
        # arrays), over a private copy of the single space's array: a write reaches every
        # env's entry of that element (one bound for the batch), never the single space
        single = np.array(getattr(space, name))
        setattr(box, name, np.lib.stride_tricks.as_strided(
            single, shape, (0, *single.strides), writeable=True))
    for name in ("low", "high"):  # the repr strings: Gymnasium >= 1.3 makes them when
        single = getattr(space, name)  # printed (None), older ones print what is there
        uniform = single.size == 0 or bool(np.all(single == single.flat[0]))
        lazy = uniform or spaces.Box(0, 1, (1,)).low_repr is None  # this Gymnasium's way
        setattr(box, f"{name}_repr", array_short_repr(single) if uniform
                else None if lazy else array_short_repr(getattr(box, name)))
    box._np_random = deepcopy(space.np_random)  # as batch_space seeds it
    return box


def _read_only(actions: Any) -> np.ndarray:
    a = np.asarray(actions).view()
    a.flags.writeable = False
    return a


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def check_seed(seed: Any, num_envs: int) -> tuple[np.ndarray, np.ndarray]:
    """The per-env seeds of ``reset(seed=...)``: values (uint64) and which envs got one.

    ``None``: no env; an int ``s``: env i gets ``s + i`` (as ``SyncVectorEnv``); a list of
    ``num_envs`` ints / ``None``. Shared by ``BatchEnv`` and ``ConcurrentVectorEnv``.
    """
    n = num_envs
    if seed is None:
        return np.zeros(n, dtype=np.uint64), np.zeros(n, dtype=bool)
    if _is_int(seed):
        seed = int(seed)
        if not 0 <= seed <= MAX_SEED - n:
            raise ValueError(f"seed must be an int in [0, {MAX_SEED - n}], got {seed}")
        return np.arange(n, dtype=np.uint64) + np.uint64(seed), np.ones(n, dtype=bool)
    if isinstance(seed, (list, tuple, np.ndarray)):
        if len(seed) != n:
            raise ValueError(f"seed as a list must have num_envs={n} entries, got "
                             f"{len(seed)}")
        bad = [i for i, x in enumerate(seed)
               if not (x is None or (_is_int(x) and 0 <= int(x) <= MAX_SEED))]
        if bad:
            raise ValueError(f"seed list entries must be None or ints in [0, {MAX_SEED}]; "
                             f"bad entries at env indices {_listed(np.array(bad))}")
        given = np.array([x is not None for x in seed], dtype=bool)
        values = np.array([0 if x is None else int(x) for x in seed], dtype=np.uint64)
        return values, given
    raise TypeError(f"seed must be None, an int or a list of num_envs ints/None, got "
                    f"{type(seed).__name__}")


def _check_num_envs(num_envs: Any, n: Any) -> int:
    if num_envs is not None and n is not None and num_envs != n:
        raise ValueError(f"num_envs={num_envs} and n={n} disagree: pass one of them")
    value = num_envs if num_envs is not None else (n if n is not None else 1)
    if not _is_int(value):
        raise TypeError(f"num_envs must be a positive int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"num_envs must be a positive int, got {value}")
    return int(value)


def _check_autoreset_mode(mode: Any) -> AutoresetMode:
    if isinstance(mode, AutoresetMode):
        return mode
    try:
        return AutoresetMode(mode)
    except ValueError:
        raise ValueError(f"autoreset_mode must be an AutoresetMode or one of "
                         f"{[m.value for m in AutoresetMode]}, got {mode!r}") from None


def _check_max_episode_steps(value: Any) -> int | None:
    if value is None:
        return None
    if not _is_int(value) or value < 1:
        raise ValueError(f"max_episode_steps must be a positive int or None, got {value!r}")
    return int(value)


def _check_mask(mask: Any, num_envs: int, what: str) -> np.ndarray:
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"{what} must be a numpy array of dtype bool and shape ({num_envs},), "
                        f"got {type(mask).__name__}")
    if mask.dtype != np.bool_:
        raise TypeError(f"{what} must have dtype bool, got {mask.dtype}")
    if mask.shape != (num_envs,):
        raise ValueError(f"{what} must have shape ({num_envs},), got {mask.shape}")
    return mask


def _check_options(options: Any, num_envs: int) -> np.ndarray | None:
    """The reset mask of ``options`` (None: reset all), validated like SyncVectorEnv."""
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
    unknown_keys = [key for key in options if key not in RESET_OPTIONS]
    if unknown_keys:  # refused, not ignored: a misspelt key would silently reset every env
        unknown = sorted(map(repr, unknown_keys))
        close = [m for key in unknown_keys if isinstance(key, str)
                 for m in difflib.get_close_matches(key, RESET_OPTIONS, n=1)]
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"options has unknown keys [{', '.join(unknown)}]{hint}; "
                         f"BatchEnv.reset accepts only the keys {list(RESET_OPTIONS)}")
    if "reset_mask" not in options:
        return None
    mask = _check_mask(options["reset_mask"], num_envs, "options['reset_mask']")
    if not mask.any():
        raise ValueError("options['reset_mask'] must contain at least one True value")
    return mask


def _action_checker(space: gym.Space, num_envs: int, bounds: str
                    ) -> Callable[[Any], np.ndarray]:
    """A function validating a batch of actions for ``space``; returns the action array."""
    if isinstance(space, spaces.Discrete):
        return _discrete_checker(np.asarray(space.start), np.asarray(space.start + space.n),
                                 (num_envs,), "Discrete", space)
    if isinstance(space, spaces.MultiDiscrete):
        return _discrete_checker(space.start, space.start + space.nvec,
                                 (num_envs, *space.shape), "MultiDiscrete", space)
    if isinstance(space, spaces.Box):
        return _box_checker(space, num_envs, bounds)
    raise TypeError(f"BatchEnv supports Discrete, MultiDiscrete and Box action spaces, "
                    f"got {space}")


def _bad_rows(bad: np.ndarray) -> np.ndarray:
    return np.flatnonzero(bad.reshape(len(bad), -1).any(axis=1))


def _discrete_checker(low: np.ndarray, high: np.ndarray, shape: tuple[int, ...], kind: str,
                      space: gym.Space) -> Callable[[Any], np.ndarray]:
    lo_min, hi_max = int(np.min(low)), int(np.max(high))
    uniform_bounds = low.size == 1 or (np.all(low == low.flat[0]) and np.all(high == hi_max))

    def check(actions: Any) -> np.ndarray:
        a = np.asarray(actions)
        if a.dtype.kind not in "iu":
            raise TypeError(f"actions must be integers for the {kind} action space {space} "
                            f"(shape {shape}), got dtype {a.dtype}")
        if a.shape != shape:
            raise ValueError(f"actions must have shape {shape} (num_envs, ...) for the "
                             f"{kind} action space {space}, got shape {a.shape}")
        if lo_min == 0:  # negative ints view as huge unsigned ints; argmax: no reduction
            u = a.view(a.dtype.str.replace("i", "u"))  # machinery (docs/performance.md)
            out_of_range = a.size and u.flat[u.argmax()] >= hi_max
        else:
            out_of_range = a.min() < lo_min or a.max() >= hi_max
        if out_of_range or not uniform_bounds:
            bad = (a < low) | (a >= high)
            if bad.any():
                rows = _bad_rows(bad)
                raise ValueError(f"actions out of range for {space} (valid: {low} <= a < "
                                 f"{high}) at env indices {_listed(rows)}: "
                                 f"{a[rows[:_MAX_LISTED]].tolist()}")
        a = a.view()  # the kernel's view cannot change the caller's array
        a.flags.writeable = False
        return a

    return check


def _box_checker(space: spaces.Box, num_envs: int, bounds: str
                 ) -> Callable[[Any], np.ndarray]:
    shape = (num_envs, *space.shape)
    low = space.low.astype(space.dtype)
    high = space.high.astype(space.dtype)
    buffer = np.zeros(shape, dtype=space.dtype)
    read_only = buffer.view()  # what the kernel gets: it cannot change the actions
    read_only.flags.writeable = False
    integer_box = space.dtype.kind in "iu"
    dtype_range = np.iinfo(space.dtype.name) if integer_box else None
    lowest, highest = (int(dtype_range.min), int(dtype_range.max)) if dtype_range else (0, 0)

    def check(actions: Any) -> np.ndarray:
        a = np.asarray(actions)
        if a.dtype.kind not in "fiu":
            raise TypeError(f"actions must be numbers for the Box action space {space}, "
                            f"got dtype {a.dtype}")
        if a.shape != shape:
            raise ValueError(f"actions must have shape {shape} (num_envs, ...) for the Box "
                             f"action space {space}, got shape {a.shape}")
        if integer_box:
            if a.dtype.kind == "f" and not np.isfinite(a).all():
                rows = _bad_rows(~np.isfinite(a))
                raise ValueError(f"actions contain NaN or inf at env indices "
                                 f"{_listed(rows)}")
            outside = (a < lowest) | (a > highest)
            if outside.any():
                rows = _bad_rows(outside)
                raise ValueError(f"actions do not fit the action dtype {space.dtype} of "
                                 f"{space} at env indices {_listed(rows)}")
        else:
            # checked after the cast: a finite float64 too large for float32 becomes inf
            if a.dtype.kind == "f" and a.dtype.itemsize > buffer.itemsize:
                with np.errstate(over="ignore", invalid="ignore"):  # reported below
                    np.copyto(buffer, a, casting="unsafe")
            else:
                np.copyto(buffer, a, casting="unsafe")
            if not np.isfinite(buffer).all():
                bad = ~np.isfinite(buffer)
                given = np.count_nonzero(~np.isfinite(a[bad])) if a.dtype.kind == "f" else 0
                overflow = f"values that overflow the action dtype {space.dtype} (to inf)"
                what = ("NaN or inf" if given == np.count_nonzero(bad) else
                        overflow if given == 0 else f"NaN or inf, or {overflow}")
                raise ValueError(f"actions contain {what} at env indices "
                                 f"{_listed(_bad_rows(bad))}")
        if bounds == "raise":
            bad = (a < low) | (a > high)
            if bad.any():
                rows = _bad_rows(bad)
                raise ValueError(f"actions outside the bounds of {space} at env indices "
                                 f"{_listed(rows)}")
        if integer_box:
            np.copyto(buffer, a, casting="unsafe")
        if bounds == "clip":
            np.clip(buffer, low, high, out=buffer)
        return read_only

    return check
