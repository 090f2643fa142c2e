"""BatchMountainCarContinuous: Gymnasium's MountainCarContinuous-v0, batched, bit for bit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from batchenv.envs.classic import _render as draw
from batchenv.envs.classic._classic import (
    ClassicControlEnv,
    params_from,
    write_columns,
)
from batchenv.random import BatchRandom
from batchenv.state import Field, State, fields_view

__all__ = ["BatchMountainCarContinuous", "MountainCarContinuousState",
           "MountainCarContinuousParams"]

_FIELDS = ("position", "velocity")


@dataclass(frozen=True)
class MountainCarContinuousParams:
    """The constants of Gymnasium's ``Continuous_MountainCarEnv`` (same names, values)."""

    min_action: float = -1.0
    max_action: float = 1.0
    min_position: float = -1.2
    max_position: float = 0.6
    max_speed: float = 0.07
    goal_position: float = 0.45
    goal_velocity: float = 0  # Gymnasium's constructor option
    power: float = 0.0015
    reset_low: float = -0.6  # start position uniform in [low, high), velocity 0
    reset_high: float = -0.4  # (Gymnasium's reset(options={"low": .., "high": ..}))

    def __post_init__(self) -> None:
        if not self.reset_low <= self.reset_high:
            raise ValueError(f"MountainCarContinuousParams: need reset_low <= reset_high, "
                             f"got {self.reset_low} > {self.reset_high}")
        if not self.min_action < self.max_action:
            raise ValueError("MountainCarContinuousParams: need min_action < max_action")


class MountainCarContinuousState(State):
    """One env per row (``BatchMountainCarContinuous.state_dtype`` is made from these
    annotations)."""

    position: Field[np.float32]  # along the x-axis, [min_position, max_position]
    velocity: Field[np.float32]  # per step, [-max_speed, max_speed]


class BatchMountainCarContinuous(ClassicControlEnv[MountainCarContinuousState]):
    """## Description

    Gymnasium's ``MountainCarContinuous-v0`` for thousands of cars at once: the mountain
    car of ``MountainCar-v0`` with a continuous engine force, and a reward that charges for
    the energy spent (Moore, 1990; the continuous version of Arnaud de Broissia). Same
    dynamics, constants, spaces, rewards, start-state distribution and time limit as
    Gymnasium's ``Continuous_MountainCarEnv``.

    Gymnasium keeps this env's state in float32 and computes a step in a mix of float32
    and float64 (NumPy 2's rules for float32 scalars meeting Python floats). batchenv
    stores the state as float32 and reproduces each of those operations in the same
    precision, so that from the same state with the same actions every observation,
    reward and flag is the same bit for bit (tested step by step). Each step applies
    :func:`accelerate`, :func:`move`, :func:`reached_goal` and :func:`energy_reward`.

    ## Action Space

    ``Box(-1.0, 1.0, (1,), float32)``: the engine force. As in Gymnasium, the force is
    clipped to [-1, 1] but the energy penalty is computed from the action as given, so an
    action of 3 pushes like 1 and costs 0.9 (see Rewards).

    ## Observation Space

    ``Box(float32, (2,))``, the state:

    | index | observation | min | max |
    |---|---|---|---|
    | 0 | position of the car along the x-axis `position` | -1.2 | 0.6 |
    | 1 | velocity of the car `velocity` | -0.07 | 0.07 |

    Dynamics: ``velocity += force * power - 0.0025 * cos(3 * position)`` with power =
    0.0015, clipped to [-0.07, 0.07]; ``position += velocity``, clipped to [-1.2, 0.6]; a
    car stopped by the left wall loses its velocity.

    ## Rewards

    ``-0.1 * action**2`` every step, plus 100 on the step that reaches the goal.

    ## Starting State

    ``position`` uniform in [-0.6, -0.4) (``reset_low``, ``reset_high``), rounded to
    float32; ``velocity`` 0.

    ## Episode End

    Terminated when ``position >= 0.45`` and ``velocity >= goal_velocity`` (default 0).
    Truncated after ``max_episode_steps`` (default 999, as MountainCarContinuous-v0).

    ## Arguments

    ``BatchMountainCarContinuous(num_envs, *, params=MountainCarContinuousParams(...),
    **overrides, **BatchEnv options)``: any field of :class:`MountainCarContinuousParams`
    may be given as a keyword: ``goal_velocity`` (Gymnasium's constructor option), the
    constants (``min_action``, ``max_action``, ``min_position``, ``max_position``,
    ``max_speed``, ``goal_position``, ``power``: Gymnasium's attributes of the same names)
    and ``reset_low``/``reset_high``. ``autoreset_mode``, ``max_episode_steps``, ``copy``,
    ``validate``, ``render_mode`` (``"rgb_array"``: 600 x 400 frames drawn like
    Gymnasium's) as in :class:`~batchenv.BatchEnv`. Also
    ``gymnasium.make_vec("batchenv/MountainCarContinuous-v0", num_envs=N)``.

    ## Differences from Gymnasium

    * Random numbers come from batchenv's per-env streams, so a seed gives other start
      states than Gymnasium's with the same seed (same distribution).
    * The start position is rounded to float32 when drawn. Gymnasium keeps it in float64
      until the first step (its first step computes ``3 * position`` and
      ``position + velocity`` in float64, later steps in float32), so from the same drawn
      position the first step's results may differ in the last float32 bit; from the
      same float32 state, everything matches.
    * Actions are converted to float32 (the action space's dtype) before anything else;
      Gymnasium computes with whatever dtype it is given.
    * Gymnasium's ``reset(options={"low": ..., "high": ...})`` is the constructor's
      ``reset_low``/``reset_high`` here (``BatchEnv.reset`` accepts only ``reset_mask``).

    ## Version History

    * v0: as Gymnasium's MountainCarContinuous-v0.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}
    state_type = MountainCarContinuousState
    default_max_episode_steps = 999
    # the kernel clips the force itself: the energy penalty uses the action as given
    box_action_bounds = "pass"

    def __init__(self, num_envs: int | None = None, *,
                 params: MountainCarContinuousParams | None = None, **kwargs: Any) -> None:
        self.params = p = params_from(MountainCarContinuousParams, params, kwargs)
        self.single_action_space = spaces.Box(p.min_action, p.max_action, (1,), np.float32)
        self.single_observation_space = spaces.Box(
            np.array([p.min_position, -p.max_speed], dtype=np.float32),
            np.array([p.max_position, p.max_speed], dtype=np.float32), dtype=np.float32)
        super().__init__(num_envs, **kwargs)
        n = self.num_envs
        self._force = np.zeros(n, dtype=np.float32)  # clipped to the action bounds
        self._acc = np.zeros(n, dtype=np.float32)
        self._cos = np.zeros(n, dtype=np.float64)
        self._tmp = np.zeros(n, dtype=np.bool_)
        self._done = np.zeros(n, dtype=np.bool_)
        self._step_reward = np.zeros(n, dtype=np.float64)
        self._bonus = np.zeros(n, dtype=np.float64)

    # ---------------------------------------------------------------- kernels
    def state_bounds(self) -> dict[str, tuple[float, float]]:
        """Gymnasium clips these fields to these bounds: :meth:`set_state` rejects others."""
        p = self.params
        return {"position": (p.min_position, p.max_position),
                "velocity": (-p.max_speed, p.max_speed)}

    def reset_rows(self, s: MountainCarContinuousState, rows: np.ndarray | slice,
                   rng: BatchRandom) -> None:
        p = self.params
        s.position[rows] = rng.uniform(p.reset_low, p.reset_high)
        s.velocity[rows] = 0.0

    def step_envs(self, s: MountainCarContinuousState, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        p = self.params
        raw = action.reshape(-1)  # float32, as given (box_action_bounds = "pass")
        np.clip(raw, p.min_action, p.max_action, out=self._force)
        accelerate(s, raw, self._force, p, self._cos, self._acc)
        move(s, p, self._tmp)
        reached_goal(s, p, self._tmp, self._done)
        energy_reward(raw, self._done, self._bonus, self._step_reward)
        return self._step_reward, self._done

    def observe(self, s: MountainCarContinuousState, out: np.ndarray) -> None:
        write_columns(out, fields_view(s, _FIELDS))

    def render_envs(self, s: MountainCarContinuousState) -> list[np.ndarray]:
        return draw.mountain_car_frames(s.position, self.params)


# -------------------------------------------------------------------- the rules
def accelerate(s: MountainCarContinuousState, raw: np.ndarray, force: np.ndarray,
               p: MountainCarContinuousParams, cos: np.ndarray, acc: np.ndarray) -> None:
    """``velocity += force * power - 0.0025 * cos(3 * position)``, clipped to
    ``[-max_speed, max_speed]``, in Gymnasium's precisions: ``3 * position`` in float32,
    the cosine and its product in float64, the rest in float32, except where the action
    was clipped: there Gymnasium's force is a Python float, and the acceleration is
    computed in float64 before joining the float32 velocity."""
    np.multiply(s.position, np.float32(3), out=acc)  # float32, as 3 * np.float32
    np.cos(acc, out=cos, dtype=np.float64)  # math.cos: float64
    cos *= 0.0025
    np.multiply(force, np.float32(p.power), out=acc)  # np.float32 * Python float: float32
    np.subtract(acc, cos, out=acc, dtype=np.float32)  # np.float32 - Python float: float32
    clipped = np.flatnonzero(force != raw)
    if clipped.size:  # force is the Python float min_action/max_action: float64, then float32
        bound = np.where(raw[clipped] > force[clipped], p.max_action, p.min_action)
        acc[clipped] = bound * p.power - cos[clipped]
    s.velocity += acc
    # velocity > max_speed -> max_speed (a Python float, float32 once stored)
    np.clip(s.velocity, np.float32(-p.max_speed), np.float32(p.max_speed), out=s.velocity)


def move(s: MountainCarContinuousState, p: MountainCarContinuousParams,
         at_wall: np.ndarray) -> None:
    """``position += velocity`` (float32), clipped to ``[min_position, max_position]``; a
    car at the left wall moving left stops."""
    s.position += s.velocity
    low = np.float32(p.min_position)
    np.clip(s.position, low, np.float32(p.max_position), out=s.position)
    np.equal(s.position, low, out=at_wall)
    if at_wall.any():
        rows = np.flatnonzero(at_wall)
        v = s.velocity[rows]
        s.velocity[rows] = np.where(v < 0, np.float32(0), v)


def reached_goal(s: MountainCarContinuousState, p: MountainCarContinuousParams, tmp: np.ndarray,
                 out: np.ndarray) -> None:
    """Terminated: ``position >= goal_position`` and ``velocity >= goal_velocity``
    (float32 against Python floats: the bounds are rounded to float32, as in Gymnasium)."""
    np.greater_equal(s.position, p.goal_position, out=out)
    np.greater_equal(s.velocity, p.goal_velocity, out=tmp)
    out &= tmp


def energy_reward(raw: np.ndarray, done: np.ndarray, bonus: np.ndarray,
                  out: np.ndarray) -> None:
    """``100 * reached_goal - 0.1 * action**2``, the penalty from the unclipped action, in
    float64 (Gymnasium: ``math.pow(action[0], 2) * 0.1``)."""
    np.multiply(raw, raw, out=out, dtype=np.float64)
    out *= 0.1
    np.multiply(done, 100.0, out=bonus)
    np.subtract(bonus, out, out=out)
