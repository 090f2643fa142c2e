"""BatchMountainCar: Gymnasium's MountainCar-v0, batched, bit for bit."""

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

__all__ = ["BatchMountainCar", "MountainCarState", "MountainCarParams"]

_FIELDS = ("position", "velocity")


@dataclass(frozen=True)
class MountainCarParams:
    """The constants of Gymnasium's ``MountainCarEnv`` (same names, same values)."""

    min_position: float = -1.2
    max_position: float = 0.6
    max_speed: float = 0.07
    goal_position: float = 0.5
    goal_velocity: float = 0  # Gymnasium's constructor option
    force: float = 0.001
    gravity: float = 0.0025
    reset_low: float = -0.6  # start position uniform in [low, high), velocity 0
    reset_high: float = -0.4  # (Gymnasium's reset(options={"low": .., "high": ..}))

    def __post_init__(self) -> None:
        if not self.reset_low <= self.reset_high:
            raise ValueError(f"MountainCarParams: need reset_low <= reset_high, got "
                             f"{self.reset_low} > {self.reset_high}")


class MountainCarState(State):
    """One env per row (``BatchMountainCar.state_dtype`` is made from these annotations)."""

    position: Field[np.float64]  # along the x-axis, [min_position, max_position]
    velocity: Field[np.float64]  # per step, [-max_speed, max_speed]


class BatchMountainCar(ClassicControlEnv[MountainCarState]):
    """## Description

    Gymnasium's ``MountainCar-v0`` for thousands of cars at once: a car placed at the
    bottom of a sinusoidal valley must reach the flag on top of the right hill, but its
    engine is too weak to climb straight up; it has to swing back and forth to build
    momentum (Moore, 1990). Same dynamics, constants, spaces, rewards, start states and
    time limit as Gymnasium's ``MountainCarEnv``; the state is float64 and every step
    repeats Gymnasium's floating-point operations in Gymnasium's order, so trajectories
    match Gymnasium's bit for bit (tested step by step).

    Each step applies :func:`accelerate` (engine and gravity), :func:`move` (with the
    inelastic wall on the left) and :func:`reached_goal`.

    ## Action Space

    ``Discrete(3)``: 0 accelerates to the left, 1 does not accelerate, 2 accelerates to
    the right.

    ## Observation Space

    ``Box(float32, (2,))``, the state cast to float32:

    | index | observation | min | max |
    |---|---|---|---|
    | 0 | position of the car along the x-axis `position` | -1.2 | 0.6 |
    | 1 | velocity of the car `velocity` | -0.07 | 0.07 |

    Dynamics: ``velocity += (action - 1) * force - cos(3 * position) * gravity`` with
    force = 0.001 and gravity = 0.0025, clipped to [-0.07, 0.07]; then
    ``position += velocity``, clipped to [-1.2, 0.6]; a car stopped by the left wall
    (position -1.2 and velocity < 0) loses its velocity.

    ## Rewards

    -1 for every step.

    ## Starting State

    ``position`` uniform in [-0.6, -0.4) (``reset_low``, ``reset_high``), ``velocity`` 0.

    ## Episode End

    Terminated when ``position >= 0.5`` and ``velocity >= goal_velocity`` (default 0).
    Truncated after ``max_episode_steps`` (default 200, as MountainCar-v0).

    ## Arguments

    ``BatchMountainCar(num_envs, *, params=MountainCarParams(...), **overrides,
    **BatchEnv options)``: any field of :class:`MountainCarParams` may be given as a
    keyword: ``goal_velocity`` (Gymnasium's constructor option), the constants
    (``min_position``, ``max_position``, ``max_speed``, ``goal_position``, ``force``,
    ``gravity``: Gymnasium's attributes of the same names) and ``reset_low``/
    ``reset_high``. ``autoreset_mode``, ``max_episode_steps``, ``copy``, ``validate``,
    ``render_mode`` (``"rgb_array"``: 600 x 400 frames drawn like Gymnasium's) as in
    :class:`~batchenv.BatchEnv`. Also
    ``gymnasium.make_vec("batchenv/MountainCar-v0", num_envs=N)``.

    ## Differences from Gymnasium

    * Random numbers come from batchenv's per-env streams, so a seed gives other start
      states than Gymnasium's with the same seed (same distribution).
    * Gymnasium's ``reset(options={"low": ..., "high": ...})`` is the constructor's
      ``reset_low``/``reset_high`` here (``BatchEnv.reset`` accepts only ``reset_mask``).

    ## Version History

    * v0: as Gymnasium's MountainCar-v0.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}
    state_type = MountainCarState
    default_max_episode_steps = 200
    single_action_space = spaces.Discrete(3)

    def __init__(self, num_envs: int | None = None, *,
                 params: MountainCarParams | None = None, **kwargs: Any) -> None:
        self.params = p = params_from(MountainCarParams, params, kwargs)
        self.single_observation_space = spaces.Box(
            np.array([p.min_position, -p.max_speed], dtype=np.float32),
            np.array([p.max_position, p.max_speed], dtype=np.float32), dtype=np.float32)
        super().__init__(num_envs, **kwargs)
        n = self.num_envs
        # (action - 1) * force, as Gymnasium computes it for actions 0, 1, 2
        self._push = np.array([(a - 1) * p.force for a in range(3)])
        self._c = {name: np.array(getattr(p, name), dtype=np.float64) for name in (
            "min_position", "max_position", "max_speed", "goal_position", "gravity")}
        self._c["three"] = np.array(3.0)
        self._c["minus_speed"] = np.array(-p.max_speed)
        self._c["minus_gravity"] = np.array(-p.gravity)
        self._tmp = np.empty(n)
        self._at_wall = np.empty(n, dtype=np.bool_)
        self._done = np.zeros(n, dtype=np.bool_)
        self._step_reward = np.full(n, -1.0)

    # ---------------------------------------------------------------- kernels
    def state_bounds(self) -> dict[str, tuple[float, float]]:
        """Gymnasium clips these fields to these bounds: :meth:`set_state` rejects others."""
        p = self.params
        return {"position": (p.min_position, p.max_position),
                "velocity": (-p.max_speed, p.max_speed)}

    def reset_rows(self, s: MountainCarState, rows: np.ndarray | slice, rng: BatchRandom) -> None:
        p = self.params
        s.position[rows] = rng.uniform(p.reset_low, p.reset_high)
        s.velocity[rows] = 0.0

    def step_envs(self, s: MountainCarState, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        c = self._c
        accelerate(s, self._push[action], c, self._tmp)
        move(s, c, self._at_wall)
        reached_goal(s, self.params.goal_velocity, c, self._at_wall, self._done)
        return self._step_reward, self._done

    def observe(self, s: MountainCarState, out: np.ndarray) -> None:
        write_columns(out, fields_view(s, _FIELDS))

    def render_envs(self, s: MountainCarState) -> list[np.ndarray]:
        return draw.mountain_car_frames(s.position, self.params)


# -------------------------------------------------------------------- the rules
def accelerate(s: MountainCarState, push: np.ndarray, c: dict[str, np.ndarray],
               tmp: np.ndarray) -> None:
    """``velocity += (action - 1) * force + cos(3 * position) * (-gravity)``, clipped to
    ``[-max_speed, max_speed]``; ``push`` is ``(action - 1) * force``."""
    np.multiply(s.position, c["three"], out=tmp)
    np.cos(tmp, out=tmp)
    tmp *= c["minus_gravity"]
    tmp += push
    s.velocity += tmp
    np.clip(s.velocity, c["minus_speed"], c["max_speed"], out=s.velocity)


def move(s: MountainCarState, c: dict[str, np.ndarray], at_wall: np.ndarray) -> None:
    """``position += velocity``, clipped to ``[min_position, max_position]``; a car at the
    left wall moving left stops (the collision is inelastic)."""
    s.position += s.velocity
    np.clip(s.position, c["min_position"], c["max_position"], out=s.position)
    np.equal(s.position, c["min_position"], out=at_wall)
    if at_wall.any():  # rare: the sparse path
        rows = np.flatnonzero(at_wall)
        v = s.velocity[rows]
        s.velocity[rows] = np.where(v < 0, 0.0, v)


def reached_goal(s: MountainCarState, goal_velocity: float, c: dict[str, np.ndarray],
                 tmp: np.ndarray, out: np.ndarray) -> None:
    """Terminated: ``position >= goal_position`` and ``velocity >= goal_velocity``."""
    np.greater_equal(s.position, c["goal_position"], out=out)
    np.greater_equal(s.velocity, goal_velocity, out=tmp)
    out &= tmp
