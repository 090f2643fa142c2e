"""``BatchEnv``: the Gymnasium ``VectorEnv`` base class of every batched environment.

An environment author declares the state schema and the spaces and writes three kernels;
everything episodic lives here, once:

* storage of N states (:mod:`batchenv.state`), preallocated output buffers;
* auto-reset in the three Gymnasium modes, ``reset(options={"reset_mask": m})``;
* time limits (``max_episode_steps``; ``truncated`` apart from ``terminated``);
* seeding: env i's stream is a function of ``(seed + i)`` alone (:mod:`batchenv.random`);
* call order (step before reset, closed env); the arguments are checked by
  :mod:`batchenv.validation`, the front end every vector env of the package shares;
* ``get_state``/``set_state`` snapshots, pickling, ``render`` plumbing.

See ``docs/writing_envs.md`` for the walkthrough and ``docs/autoreset.md`` for the
call-by-call semantics of each auto-reset mode.
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from copy import deepcopy
from typing import Any, ClassVar, Generic, TypeVar, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.error import ClosedEnvironmentError
from gymnasium.spaces.box import array_short_repr
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from batchenv import debug as debug_mode
from batchenv._envpool import EnvPoolAPI
from batchenv._loops import PerEnvForm
from batchenv.forms import KernelForm, NumpyForm, choose, default_kernel, resets_a_copy
from batchenv.random import BatchRandom, seed_keys
from batchenv.state import (
    Range,
    State,
    from_records,
    put_rows,
    ranges,
    schema,
    take_rows,
    to_records,
)
from batchenv.validation import (  # the argument front end, shared with the other vector envs
    StepBeforeResetError,
    action_checker,
    batch_of_one,
    check_autoreset_mode,
    check_max_episode_steps,
    check_num_envs,
    check_observation_space,
    check_reset,
    check_reward_dtype,
    check_set_state,
    check_state_values,
    one_attr_value,
    plain_action,
    read_only,
)

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
_USE_CLASS_DEFAULT: Any = object()
S = TypeVar("S", bound=State)  # an env's state type: State, or its typed subclass
class ClosedEnvError(ClosedEnvironmentError, ValueError):
    """A method was called on a closed env."""


class BatchEnv(EnvPoolAPI, VectorEnv, Generic[S]):
    """Base class of batched environments: N games in one state, stepped by numpy kernels
    (or by per-env kernels compiled into one loop over the batch).

    Subclasses set :attr:`state_type` (a typed :class:`~batchenv.state.State` subclass,
    which gives :attr:`state_dtype`) or :attr:`state_dtype`, :attr:`single_action_space` and
    :attr:`single_observation_space` (class attributes, or instance attributes set before
    calling ``super().__init__``) and implement the kernels :meth:`reset_envs`,
    :meth:`step_envs` and :meth:`observe` (optionally :meth:`render_envs`), or the per-env
    kernels ``reset_env``, ``step_env`` and ``observe_env`` (:mod:`batchenv.perenv`), or
    both.

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
        kernels: for an env with per-env kernels (``reset_env``, ``step_env``,
            ``observe_env``; :mod:`batchenv.perenv`): ``"numba"`` (compiled into one loop
            with the base class's per-step work), ``"python"`` (the same functions as a
            Python loop: slow, debuggable), ``"numpy"`` (the class's numpy kernels, if it
            also has them) or ``"auto"`` (default: numba when installed). ``env.kernels``
            tells which runs.
        num_threads: threads of the compiled loop (``kernels="numba"``); default 1.
            Results are identical for every thread count.
        reward_dtype: the dtype of the returned rewards: ``np.float32`` (default, as
            EnvPool, gymnax and PufferLib) or ``np.float64``. Kernels compute rewards in
            their own dtype; the base class converts them once, into its buffer.

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
    #: Valid ranges of state fields, for a schema given as :attr:`state_dtype`:
    #: ``{"x": (0, 9), "y": Range(0, "height - 1")}`` (a typed :attr:`state_type` declares
    #: them in its annotations, ``Annotated[Field[np.int8], Range(0, 9)]``; entries here
    #: win). See :class:`~batchenv.state.Range`.
    state_ranges: ClassVar[Mapping[str, Range | tuple[Any, Any]]] = {}
    #: State fields returned in ``info`` after every ``step`` and ``reset``: ``{info key:
    #: field name}`` (or a sequence of field names, each its own key). Each entry is a copy
    #: of the field over the batch, with Gymnasium's ``"_<key>"`` mask (every env). On the
    #: step that ends an episode the entry holds that episode's last values (NEXT_STEP and
    #: DISABLED: the state as it ended; SAME_STEP: ``info["final_info"][key]`` for the envs
    #: that ended, the new episode's values in ``info[key]``).
    info_fields: ClassVar[Mapping[str, str] | Sequence[str]] = ()
    #: Which kernels step this env (``"numpy"``, ``"numba"`` or ``"python"``) and on how
    #: many threads: set by the constructor's ``kernels`` and ``num_threads``.
    kernels: str = "numpy"
    num_threads: int = 1
    #: Instance attributes the per-env kernels read as ``p.<name>`` (:mod:`batchenv.perenv`);
    #: setting one (``env.x = v``, ``set_attr``) takes effect from the next kernel call.
    kernel_params: ClassVar[tuple[str, ...]] = ()
    #: For a class with both forms of its rules: the form ``kernels="auto"`` runs
    #: (:mod:`batchenv.forms`).
    default_kernels: ClassVar[str] = "numba"
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
        kernels: str = "auto",
        num_threads: int | None = None,
        reward_dtype: Any = np.float32,
    ) -> None:
        self.num_envs = check_num_envs(num_envs, n)
        self.reward_dtype = check_reward_dtype(reward_dtype)
        self.autoreset_mode = check_autoreset_mode(autoreset_mode)
        if max_episode_steps is _USE_CLASS_DEFAULT:
            max_episode_steps = self.default_max_episode_steps
        self.max_episode_steps = check_max_episode_steps(max_episode_steps)
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
        check_observation_space(self.single_observation_space)
        self.full_state_dtype = np.dtype(self.state_dtype.descr + BASE_FIELDS)
        #: The declared valid ranges of the state fields (:class:`~batchenv.state.Range`).
        self.state_field_ranges: dict[str, Range] = _checked_ranges(self)
        self._info_fields = _checked_info_fields(self)
        self.action_space = batched_space(self.single_action_space, self.num_envs)
        self.observation_space = batched_space(self.single_observation_space, self.num_envs)
        if self.box_action_bounds not in ("clip", "raise", "pass"):
            raise TypeError(f"{type(self).__name__}.box_action_bounds must be 'clip', 'raise' "
                            f"or 'pass', got {self.box_action_bounds!r}")
        self._action_check = action_checker(self.single_action_space, self.num_envs,
                                             self.box_action_bounds)

        n_envs = self.num_envs
        self.state: S = cast(S, self.state_type(self.full_state_dtype, n_envs))
        space = self.single_observation_space
        self._obs = np.zeros((n_envs, *(space.shape or ())), dtype=space.dtype)
        self._reward = np.zeros(n_envs, dtype=self.reward_dtype)
        self._flags = np.zeros((2, n_envs), dtype=np.bool_)  # one block: one scatter resets both
        self._terminated, self._truncated = self._flags
        self._episode_over = np.zeros(n_envs, dtype=np.bool_)
        self._rng = BatchRandom(self.state.rng_key, self.state.rng_counter)
        self._seeded = False
        self._needs_reset = True  # no state yet: step() before reset() is an error
        self._broken: str | None = None  # why step() is refused until reset (a kernel raised)
        # [what the kernels are changing, or None]: a list, so that the step sets it without
        # an attribute write (see _guard)
        self._phase: list[str | None] = [None]
        self._busy = threading.Lock()  # held by the call in progress (see _guard)
        self.closed = False
        if debug is None:
            debug = os.environ.get("BATCHENV_DEBUG", "") not in ("", "0")
        self.debug = bool(debug)
        self._choice = choose(type(self), kernels, num_threads)
        self._form = _make_form(self)
        self.kernels, self.num_threads = self._choice.kind, self._choice.num_threads

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name in type(self).kernel_params and "_form" in self.__dict__:
            self._form.params_changed()  # (every later reset and step reads the new value)

    @property
    def kernel_form(self) -> KernelForm:
        """The form of the rules that steps this env, chosen once at construction:
        ``.kind`` (``"numpy"``, ``"numba"`` or ``"python"``), ``.num_threads``,
        ``.checked`` (debug mode) and ``.why`` (:mod:`batchenv.forms`)."""
        return self._form

    # ------------------------------------------------------------------ kernels (override)
    @default_kernel
    def reset_envs(self, s: S, rng: BatchRandom) -> None:
        """Fill every row of ``s`` with a start state, drawing randomness from ``rng``.

        ``s`` holds only the rows being reset (all of them, or the masked / finished ones);
        its base columns (``elapsed_steps``, ...) are handled by the base class.
        """
        raise NotImplementedError(
            f"{type(self).__name__} must implement reset_envs(self, s, rng): write a start "
            f"state into every row of s (fields in place: s.x[:] = ...), drawing only from "
            f"rng; see docs/first_env.md")

    @default_kernel
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

    @default_kernel
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

    @resets_a_copy
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
        with self._guard("reset"):
            self._check_open()
            mask, values, given = check_reset(seed, options, self.num_envs,
                                              self._needs_reset)
            self._phase[0] = "reset"
            self._reseed(mask, values, given)
            form = self._form
            if mask is None and form.fused and not form.checked:
                form.reset_observe(self, self.state, self._obs)  # one pass, both
            else:
                if mask is None:
                    self._reset_rows(self.state, self._rng)
                else:
                    self._reset_subset(np.flatnonzero(mask))
                form.observe(self, self.state, self._obs)
            if mask is None:
                self._needs_reset = False
                self._broken = None
            self._phase[0] = None
            return self._out(self._obs), self._field_info({})

    def _reseed(self, mask: np.ndarray | None, values: np.ndarray, given: np.ndarray) -> None:
        """Give the envs of ``mask`` (all: None) that were given a seed their new streams."""
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

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        """Step every env with ``actions`` (one row per env); see ``docs/autoreset.md``."""
        if not self._busy.acquire(blocking=False):
            self._refuse_concurrent("step")
        try:
            if self._needs_reset:
                self._refuse_step()
            return self._step_batch(actions)
        except BaseException as e:
            self._fault(e)
            raise
        finally:
            self._phase[0] = None
            self._busy.release()

    def _step_one(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """:class:`~batchenv.single.SingleEnv`'s step: env 0 of a batch of one stepped with
        ``action``, one action of :attr:`single_action_space`; the observation row and
        Python scalars. What :meth:`step` returns for ``[action]``, with the same checks
        and errors; an action plainly valid (:func:`~batchenv.validation.plain_action`)
        on a batch of one in ``DISABLED`` mode takes a path that skips the batch's
        machinery (the form's ``step_one``, or :meth:`_step_kernels_one`). The guard of
        :meth:`step`, inlined: this is per step of a light env."""
        if not self._busy.acquire(blocking=False):
            self._refuse_concurrent("step")
        try:
            if self._needs_reset:
                self._refuse_step()
            return self._step_row(action)
        except BaseException as e:
            self._fault(e)
            raise
        finally:
            self._phase[0] = None
            self._busy.release()

    def _refuse_step(self) -> None:
        self._check_open()
        raise StepBeforeResetError(self._broken or "step() called before reset(): call "
                                   "reset() first")

    def _step_batch(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                 np.ndarray, dict[str, Any]]:
        if self._form.fused:  # the whole step in one pass, the actions' check included
            return cast(Any, self._form.step(self, actions))
        if not self._form.checked:
            return self._step_kernels(actions)
        # debug mode: a checked kernel restores its own pass; the passes before it in
        # this step (the step's, the base class's) are undone from this copy
        rows = np.arange(self.num_envs)
        before = take_rows(self.state, rows)
        try:
            return self._step_kernels(actions)
        except BaseException as e:
            if getattr(e, "batch_restored", False):
                put_rows(self.state, rows, before)
            raise

    def _step_row(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        plain = self.__dict__.get("_plain_action")
        if plain is None:
            plain = self._plain_action = plain_action(self.single_action_space)
        value = plain(action) if self.validate else None
        form = self._form
        if value is not None and self.num_envs == 1 \
                and self.autoreset_mode is AutoresetMode.DISABLED and not form.checked:
            if form.fused:  # (its loop keeps a finished env frozen, as the batch's step)
                return cast(Any, form.step_one(self, value))
            if not self.state.awaiting_reset[0]:
                return self._step_kernels_one(value)
        obs, reward, terminated, truncated, info = self._step_batch(
            batch_of_one(self.single_action_space, action))
        return obs[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]), info

    def _step_kernels_one(self, value: Any) -> tuple[np.ndarray, float, bool, bool,
                                                     dict[str, Any]]:
        """:meth:`_step_kernels` for one env not awaiting a reset, in ``DISABLED`` mode,
        with a valid action: the same kernels, the base class's part on scalars."""
        held = self.__dict__.get("_one_action")
        if held is None:  # (a buffer of the checker's dtype, and its read-only view)
            buffer = batch_of_one(self.single_action_space, value).copy()
            view = buffer.view()
            view.flags.writeable = False
            held = self._one_action = (buffer, view)
        held[0][0] = value
        s = self.state
        self._phase[0] = "step"
        reward = self._kernel_step(s, held[1])
        elapsed = int(s.elapsed_steps[0]) + 1
        s.elapsed_steps[0] = elapsed
        terminated = bool(self._terminated[0])
        limit = self.max_episode_steps
        truncated = limit is not None and elapsed >= limit
        if limit is not None:
            self._truncated[0] = truncated
        if terminated or truncated:
            s.awaiting_reset[0] = True
        info = self._field_info({})
        if self.copy and self.observe_fills_out:  # (as _step_outputs, the flags left out)
            obs = np.empty_like(self._obs)
            self._form.observe(self, s, obs)
        else:
            self._form.observe(self, s, self._obs)
            obs = self._out(self._obs)
        self._phase[0] = None
        return obs[0], float(reward[0]), terminated, truncated, info

    @contextmanager
    def _guard(self, method: str) -> Iterator[None]:
        """One call at a time, and no half-done change left silent: a second thread calling
        while this one runs gets ``RuntimeError``; a kernel that raises while the state
        changes (``_phase[0]`` set) leaves the env refusing ``step`` until ``reset`` (in
        debug mode the checked kernels restore the batch instead). ``step`` inlines it."""
        if not self._busy.acquire(blocking=False):
            self._refuse_concurrent(method)
        try:
            yield
        except BaseException as e:
            self._fault(e)
            raise
        finally:
            self._phase[0] = None
            self._busy.release()

    def _refuse_concurrent(self, method: str) -> None:
        raise RuntimeError(f"{type(self).__name__}.{method}() called while another thread's "
                           f"call on this env is running: a batched env is stepped by one "
                           f"thread at a time (use one env per thread, or num_threads=k for "
                           f"a compiled per-env env)")

    def _fault(self, error: BaseException) -> None:
        """``error`` escaped a call: if it came from a kernel changing the state, the env
        refuses ``step`` until ``reset``, saying why."""
        phase = self._phase[0]
        if phase is not None and not getattr(error, "batch_restored", False):
            self._broken = (f"step() refused: a kernel raised {type(error).__name__} during "
                            f"{phase}(), which left the batch half-changed; call reset() "
                            f"(debug=True checks every kernel and restores the batch "
                            f"instead)")
            self._needs_reset = True

    def _step_kernels(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                    np.ndarray, dict[str, Any]]:
        """The step of a form that runs its kernels one by one (numpy kernels, debug mode):
        the actions checked, the kernels, then the base class's part in numpy."""
        action = self._action_check(actions) if self.validate else read_only(actions)
        s = self.state
        waiting = s.awaiting_reset.nonzero()[0] if np.count_nonzero(s.awaiting_reset) else None
        held: Any = None
        if waiting is not None:  # DISABLED: frozen, their rows kept; NEXT_STEP: their step
            held = take_rows(s, waiting) if self.autoreset_mode is AutoresetMode.DISABLED \
                else s.rng_counter[waiting]  # is discarded, and so is whatever it draws
        self._phase[0] = "step"
        reward = self._kernel_step(s, action)
        s.elapsed_steps += 1
        if self.max_episode_steps is not None:
            np.greater_equal(s.elapsed_steps, self.max_episode_steps, out=self._truncated)
        if waiting is not None:
            self._restart(waiting, held, reward)
        info = self._episode_ends(s)
        self._phase[0] = None
        return self._step_outputs(s, reward, info)

    def _kernel_step(self, s: S, action: np.ndarray) -> np.ndarray:
        """``step_envs`` and its results in the env's buffers: the reward array returned."""
        try:
            result = self._form.step_envs(self, s, action, self._rng)
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
                reward = np.array(reward, dtype=self._reward.dtype)
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
        return cast(np.ndarray, reward)

    def _restart(self, waiting: np.ndarray, held: Any, reward: np.ndarray) -> None:
        """The envs ``waiting`` for a reset as the step began: DISABLED puts their rows
        back (``held``), NEXT_STEP resets them (their action ignored; the reset draws from
        where their streams stood before the discarded step, ``held``, as a
        ``reset(options={"reset_mask": ...})`` from the same state would)."""
        s = self.state
        if self.autoreset_mode is AutoresetMode.DISABLED:
            put_rows(s, waiting, held)
        else:
            s.rng_counter[waiting] = held
            self._reset_subset(waiting)
        reward[waiting] = 0.0
        self._flags[:, waiting] = False  # terminated and truncated

    def _episode_ends(self, s: S) -> dict[str, Any]:
        """The auto-reset mode's work on the envs whose episodes ended this step."""
        mode = self.autoreset_mode
        info: dict[str, Any] = {}
        if mode is AutoresetMode.NEXT_STEP:  # every env awaiting a reset was reset above
            np.logical_or(self._terminated, self._truncated, out=s.awaiting_reset)
        else:
            np.logical_or(self._terminated, self._truncated, out=self._episode_over)
            if mode is AutoresetMode.SAME_STEP:
                if np.count_nonzero(self._episode_over):
                    info = self._reset_same_step(self._episode_over.nonzero()[0])
            else:  # DISABLED: frozen envs stay frozen
                np.logical_or(s.awaiting_reset, self._episode_over, out=s.awaiting_reset)
        return self._field_info(info)

    def _step_outputs(self, s: S, reward: np.ndarray, info: dict[str, Any]
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                 dict[str, Any]]:
        """The observation, and the arrays ``step`` returns (copies with ``copy=True``)."""
        observe = self._form.observe
        if not self.copy:
            observe(self, s, self._obs)
            return self._obs, reward, self._terminated, self._truncated, info
        if self.observe_fills_out:
            obs = np.empty_like(self._obs)
            observe(self, s, obs)
        else:
            observe(self, s, self._obs)
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
        with self._guard("set_state"):
            self._check_open()
            states, idx = check_set_state(states, mask, self.num_envs, self.full_state_dtype,
                                          self._needs_reset and self._broken is None)
            self._check_state_values(states, np.arange(self.num_envs) if idx is None else idx)
            if idx is None:
                from_records(self.state, states)
                self._needs_reset = False
                self._broken = None
            else:
                from_records(self.state, states, idx)
            self._seeded = True
            self._phase[0] = "observe"
            self._form.observe(self, self.state, self._obs)
            self._phase[0] = None
            return self._obs.copy()

    def check_state(self, states: np.ndarray) -> dict[str, np.ndarray]:
        """The env's own invariants, checked by :meth:`set_state` before it writes anything.

        ``states``: the records being set (``full_state_dtype``). Return ``{problem: bad}``,
        ``bad`` a bool array over the records (True where the problem occurs), e.g.
        ``{"score outside [0, 21]": (states["score"] < 0) | (states["score"] > 21)}``;
        the base class raises ``ValueError`` naming the env indices. NaN/inf in float
        fields are always rejected, and so are values outside the schema's ranges
        (:class:`~batchenv.state.Range`): only records that pass both reach ``check_state``,
        which may therefore index with any ranged field. Default: no invariants."""
        return {}

    def _check_state_values(self, states: np.ndarray, env_idx: np.ndarray) -> None:
        check_state_values(self, states, env_idx)

    # ------------------------------------------------------------------ helpers
    def _out(self, array: np.ndarray) -> np.ndarray:
        return array.copy() if self.copy else array

    def _check_open(self) -> None:
        if self.closed:
            raise ClosedEnvError(f"{type(self).__name__} is closed: make a new env")

    def _reset_rows(self, s: S, rng: BatchRandom) -> None:
        self._form.reset_envs(self, s, rng)
        s.elapsed_steps[...] = 0
        s.awaiting_reset[...] = False

    def _reset_subset(self, idx: np.ndarray) -> None:
        s = self.state
        self._form.reset_rows(self, s, idx, self._rng.at(idx))
        s.elapsed_steps[idx] = 0
        s.awaiting_reset[idx] = False

    def _reset_same_step(self, done: np.ndarray) -> dict[str, Any]:
        final = take_rows(self.state, done)
        final_obs_rows = np.empty((len(done), *self._obs.shape[1:]), dtype=self._obs.dtype)
        self._form.observe(self, final, final_obs_rows)
        self._reset_subset(done)
        final_obs = np.full(self.num_envs, None, dtype=object)
        # each entry as the single env returns it: a Discrete observation is a Python int
        # (as SyncVectorEnv's entries), anything else an array
        entries = final_obs_rows.tolist() if isinstance(
            self.single_observation_space, spaces.Discrete) else list(final_obs_rows)
        final_obs[done] = entries
        return {"final_obs": final_obs, "_final_obs": self._episode_over.copy(),
                "final_info": self._final_field_info(done, final),
                "_final_info": self._episode_over.copy()}

    def _field_info(self, info: dict[str, Any]) -> dict[str, Any]:
        """``info`` with the :attr:`info_fields` of the current state (copies)."""
        if self._info_fields:
            every = np.ones(self.num_envs, dtype=np.bool_)
            for key, name in self._info_fields.items():
                info[key] = getattr(self.state, name).copy()
                info[f"_{key}"] = every
        return info

    def _final_field_info(self, done: np.ndarray, final: State | None = None
                          ) -> dict[str, Any]:
        """SAME_STEP's ``final_info``: the :attr:`info_fields` of the envs ``done`` as their
        episodes ended (from ``final``, their rows taken before the reset, or from the
        state, not reset yet), zeros elsewhere, with ``"_<key>"`` masks."""
        out: dict[str, Any] = {}
        if not self._info_fields:
            return out
        mask = np.zeros(self.num_envs, dtype=np.bool_)
        mask[done] = True
        for key, name in self._info_fields.items():
            column = getattr(self.state, name)
            values = np.zeros_like(column)
            values[done] = column[done] if final is None else getattr(final, name)
            out[key] = values
            out[f"_{key}"] = mask.copy()
        return out

    def _pending_seeds(self) -> np.ndarray:
        """Before the first reset: the fresh seeds (uint64, one per env) that envs reset
        without a seed will use, drawn once."""
        if self._seed_values is None:
            self._seed_values = np.uint64(secrets.randbits(62)) + np.arange(
                self.num_envs, dtype=np.uint64)
        return self._seed_values

    def __getstate__(self) -> dict[str, Any]:
        d = self.__dict__.copy()
        for rebuilt in ("_rng", "_action_check", "_terminated", "_truncated", "_form", "_busy",
                        "_plain_action", "_one_action"):
            d.pop(rebuilt, None)  # (made again below)
        return d

    def __setstate__(self, d: dict[str, Any]) -> None:
        self.__dict__.update(d)
        self._terminated, self._truncated = self._flags  # views again, not copies
        self._rng = BatchRandom(self.state.rng_key, self.state.rng_counter)
        self._action_check = action_checker(self.single_action_space, self.num_envs,
                                             self.box_action_bounds)
        self._busy = threading.Lock()
        self._form = _make_form(self)


def adopt_output_buffers(env: BatchEnv, obs: np.ndarray, reward: np.ndarray,
                         flags: np.ndarray, terminated: np.ndarray, truncated: np.ndarray
                         ) -> bool:
    """Make ``env`` write its observations, rewards and terminated/truncated flags into the
    caller's arrays from now on (its ``copy=False`` outputs are then those very arrays),
    their current contents copied over: how a sharded env's shard writes straight into its
    rows of shared memory. ``flags`` is one ``(2, num_envs)`` block, ``terminated`` and
    ``truncated`` its two rows as the caller holds them. False, and nothing changed, if the
    shapes or dtypes are not the env's own."""
    try:
        ok = (env._obs.shape == obs.shape and env._obs.dtype == obs.dtype
              and env._reward.shape == reward.shape and env._flags.shape == flags.shape)
    except AttributeError:  # an env whose buffers are not the base class's
        return False
    if not ok:
        return False
    obs[...] = env._obs
    obs.flags.writeable = env._obs.flags.writeable  # a read-only canvas stays read-only
    reward[...] = env._reward
    flags[...] = env._flags
    env._obs, env._reward, env._flags = obs, reward, flags
    env._terminated, env._truncated = terminated, truncated
    return True


def field_outside(states: np.ndarray, name: str, low: float, high: float
                  ) -> tuple[str, np.ndarray]:
    """``(problem, bad)`` for :meth:`BatchEnv.check_state`: records whose field ``name`` is
    outside ``[low, high]``, the bounds taken in the field's own dtype (float32 -1.2 is not
    below -1.2)."""
    col = states[name]
    lo, hi = np.asarray(low).astype(col.dtype), np.asarray(high).astype(col.dtype)
    return f"{name} outside [{low:g}, {high:g}]", (col < lo) | (col > hi)


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



def enable_debug(env: BatchEnv) -> None:
    """Turn debug mode on for ``env`` (made without it): its form runs checked from now on."""
    env.debug = True
    env._form = _make_form(env)


def _make_form(env: BatchEnv) -> KernelForm:
    """The form :func:`batchenv.forms.choose` chose for ``env`` (``env._choice``), made:
    debug mode runs it checked."""
    kind, threads, why = env._choice
    form: KernelForm
    if kind == "numpy":
        form = NumpyForm(why)
    else:
        form = PerEnvForm(env, kind, threads, why, checked=env.debug)
    return debug_mode.DebugForm(env, form) if env.debug else form


def _checked_ranges(env: BatchEnv) -> dict[str, Range]:
    """The env's declared field ranges, each naming a field of its schema and resolvable."""
    found = ranges(env)
    names = env.full_state_dtype.names or ()
    for name, declared in found.items():
        if name not in names:
            raise TypeError(f"{type(env).__name__}: a range is declared for {name!r}, which "
                            f"is not a state field ({list(env.state_dtype.names or ())})")
        try:
            declared.resolve(env)
        except AttributeError as e:
            raise TypeError(f"{type(env).__name__}: the range {declared} of field {name!r} "
                            f"names an attribute the env does not have ({e})") from None
    return found


def _checked_info_fields(env: BatchEnv) -> dict[str, str]:
    """``info_fields`` as ``{info key: field}``, every field in the schema."""
    declared = env.info_fields
    pairs = dict(declared) if isinstance(declared, Mapping) else {n: n for n in declared}
    names = env.full_state_dtype.names or ()
    missing = sorted(f for f in pairs.values() if f not in names)
    if missing:
        raise TypeError(f"{type(env).__name__}.info_fields names {missing}, which are not "
                        f"state fields")
    return pairs
