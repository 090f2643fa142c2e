"""BatchPendulum: Gymnasium's Pendulum-v1, batched."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from batchenv.envs.classic import _render as draw
from batchenv.envs.classic._classic import ClassicControlEnv, params_from
from batchenv.random import BatchRandom
from batchenv.state import Field, State

__all__ = ["BatchPendulum", "PendulumState", "PendulumParams"]


@dataclass(frozen=True)
class PendulumParams:
    """The constants of Gymnasium's ``PendulumEnv`` (same names, same values)."""

    max_speed: float = 8  # rad/s
    max_torque: float = 2.0  # N m; actions are clipped to [-max_torque, max_torque]
    dt: float = 0.05  # s
    g: float = 10.0  # m/s^2, Gymnasium's constructor option
    m: float = 1.0  # kg
    l: float = 1.0  # noqa: E741  (Gymnasium's name) m
    x_init: float = np.pi  # start angle uniform in [-x_init, x_init)
    y_init: float = 1.0  # start angular velocity uniform in [-y_init, y_init)

    def __post_init__(self) -> None:
        if not (self.max_torque > 0 and self.max_speed > 0):
            raise ValueError("PendulumParams: max_torque and max_speed must be > 0")


class PendulumState(State):
    """One env per row (``BatchPendulum.state_dtype`` is made from these annotations)."""

    th: Field[np.float64]  # angle, rad, 0 upright, counter-clockwise; not wrapped
    thdot: Field[np.float64]  # angular velocity, rad/s, [-max_speed, max_speed]


class BatchPendulum(ClassicControlEnv[PendulumState]):
    """## Description

    Gymnasium's ``Pendulum-v1`` for thousands of pendulums at once: the inverted
    pendulum swing-up problem. A pendulum attached at one end to a fixed point starts in a
    random position; the goal is to apply torque to swing it into an upright position and
    keep it there. Same dynamics, constants, spaces, rewards, start-state distribution and
    time limit as Gymnasium's ``PendulumEnv``. Each step applies :func:`swing_cost` (the
    reward, from the state before the step) and :func:`swing` (the dynamics).

    ## Action Space

    ``Box(-2.0, 2.0, (1,), float32)``: the torque applied to the free end, counter-clockwise
    positive. Actions outside the bounds are clipped, as Gymnasium does (reward included).

    ## Observation Space

    ``Box(float32, (3,))``:

    | index | observation | min | max |
    |---|---|---|---|
    | 0 | x = cos(th) | -1.0 | 1.0 |
    | 1 | y = sin(th) | -1.0 | 1.0 |
    | 2 | angular velocity `thdot` | -8.0 | 8.0 |

    ``th`` is the angle (0 upright), ``thdot`` its velocity; dynamics:
    ``thdot += (3 g / (2 l) * sin(th) + 3 / (m l^2) * u) * dt``, clipped to [-8, 8], then
    ``th += thdot * dt`` (``th`` itself is not wrapped).

    ## Rewards

    ``-(angle_normalize(th)**2 + 0.1 * thdot**2 + 0.001 * u**2)`` with the angle normalized
    to [-pi, pi) and the state before the step: between -16.2736044 and 0.

    ## Starting State

    ``th`` uniform in [-pi, pi) and ``thdot`` uniform in [-1, 1) (``x_init``, ``y_init``).

    ## Episode End

    Never terminated; truncated after ``max_episode_steps`` (default 200, as Pendulum-v1).

    ## Arguments

    ``BatchPendulum(num_envs, *, params=PendulumParams(...), **overrides,
    **BatchEnv options)``: any field of :class:`PendulumParams` may be given as a keyword:
    ``g`` (Gymnasium's constructor option), the constants (``max_speed``, ``max_torque``,
    ``dt``, ``m``, ``l``: Gymnasium's attributes) and ``x_init``/``y_init`` (Gymnasium's
    reset options). ``autoreset_mode``, ``max_episode_steps``, ``copy``, ``validate``,
    ``render_mode`` (``"rgb_array"``: 500 x 500 frames drawn like Gymnasium's) as in
    :class:`~batchenv.BatchEnv`. Also
    ``gymnasium.make_vec("batchenv/Pendulum-v1", num_envs=N)``.

    ## Differences from Gymnasium

    * Observations and the dynamics are bit for bit Gymnasium's. The reward's torque term
      ``0.001 * u**2`` is computed in float32 as Gymnasium does, but Gymnasium squares
      with the C library's ``powf``, which is off by one float32 unit in the last place
      for about 0.07% of torques, and numpy has no vectorized ``powf``: batchenv squares
      exactly. The reward can then differ by ~1e-10 (relative 1e-11); tests compare it with
      ``rtol=1e-9``.
    * Random numbers come from batchenv's per-env streams, so a seed gives other start
      states than Gymnasium's with the same seed (same distribution).
    * Gymnasium's ``reset(options={"x_init": ..., "y_init": ...})`` is the constructor's
      ``x_init``/``y_init`` here (``BatchEnv.reset`` accepts only ``reset_mask``).
    * The torque arrow of rendered frames is the last step's action, kept outside the
      state: ``set_state`` does not restore it.

    ## Version History

    * v1: as Gymnasium's Pendulum-v1.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}
    state_type = PendulumState
    default_max_episode_steps = 200
    box_action_bounds = "clip"  # Gymnasium clips the torque

    def __init__(self, num_envs: int | None = None, *, params: PendulumParams | None = None,
                 **kwargs: Any) -> None:
        self.params = p = params_from(PendulumParams, params, kwargs)
        self.single_action_space = spaces.Box(-p.max_torque, p.max_torque, (1,), np.float32)
        high = np.array([1.0, 1.0, p.max_speed], dtype=np.float32)
        self.single_observation_space = spaces.Box(-high, high, dtype=np.float32)
        super().__init__(num_envs, **kwargs)
        n = self.num_envs
        self._k = PendulumConstants(p)
        self._u = np.zeros(n, dtype=np.float32)  # this step's torque; the arrow of frames
        self._u2 = np.zeros(n, dtype=np.float32)
        self._work = np.zeros((2, n))
        self._step_reward = np.zeros(n)
        self._never = np.zeros(n, dtype=np.bool_)

    # ---------------------------------------------------------------- kernels
    def state_bounds(self) -> dict[str, tuple[float, float]]:
        """Gymnasium clips these fields to these bounds: :meth:`set_state` rejects others."""
        p = self.params
        return {"thdot": (-p.max_speed, p.max_speed)}

    def reset_rows(self, s: PendulumState, rows: np.ndarray | slice, rng: BatchRandom) -> None:
        p = self.params
        draws = rng.uniform(np.array([-p.x_init, -p.y_init]), np.array([p.x_init, p.y_init]),
                            (2,)).T
        s.th[rows] = draws[0]
        s.thdot[rows] = draws[1]
        if s is self.state:
            self._u[rows] = 0.0  # no arrow until the next action (Gymnasium: last_u None)

    def step_envs(self, s: PendulumState, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        k = self._k
        u = self._u
        u[:] = action[:, 0]  # clipped to [-max_torque, max_torque] by the base class
        swing_cost(s, u, k, self._u2, self._work, self._step_reward)
        swing(s, u, k, self._u2, self._work[0])
        return self._step_reward, self._never

    def observe(self, s: PendulumState, out: np.ndarray) -> None:
        np.cos(s.th, out=out[:, 0])
        np.sin(s.th, out=out[:, 1])
        out[:, 2] = s.thdot

    def render_envs(self, s: PendulumState) -> list[np.ndarray]:
        return draw.pendulum_frames(s.th, self._u, self.params)


class PendulumConstants:
    """The parameters as 0-d arrays (cheaper ufunc operands), derived as Gymnasium does."""

    def __init__(self, p: PendulumParams) -> None:
        f64, f32 = np.float64, np.float32
        self.max_torque = np.array(p.max_torque, dtype=f32)
        self.minus_max_torque = np.array(-p.max_torque, dtype=f32)
        self.max_speed = np.array(p.max_speed, dtype=f64)
        self.minus_max_speed = np.array(-p.max_speed, dtype=f64)
        self.pi = np.array(np.pi, dtype=f64)
        self.two_pi = np.array(2 * np.pi, dtype=f64)
        self.two = np.array(2.0, dtype=f64)
        self.tenth = np.array(0.1, dtype=f64)
        # Python float * np.float32 is a float32 product (NumPy 2): the constant is rounded
        self.torque_cost = np.array(0.001, dtype=f32)
        self.gravity_term = np.array(3 * p.g / (2 * p.l), dtype=f64)
        self.torque_term = np.array(3.0 / (p.m * p.l**2), dtype=f32)
        self.dt = np.array(p.dt, dtype=f64)


# -------------------------------------------------------------------- the rules
def angle_normalize(x: np.ndarray, k: PendulumConstants, out: np.ndarray) -> np.ndarray:
    """``((x + pi) % (2 pi)) - pi``: the angle in [-pi, pi)."""
    np.add(x, k.pi, out=out)
    np.remainder(out, k.two_pi, out=out)
    out -= k.pi
    return out


def swing_cost(s: PendulumState, u: np.ndarray, k: PendulumConstants, u2: np.ndarray,
               work: np.ndarray, out: np.ndarray) -> None:
    """The reward ``-(angle_normalize(th)**2 + 0.1 * thdot**2 + 0.001 * u**2)``.

    Gymnasium squares numpy float64 scalars with ``**``, that is the C library's ``pow``,
    which differs from ``x * x`` in the last bit for ~0.1% of values; ``np.float_power``
    calls the same ``pow``. The torque term is a float32 product, as in Gymnasium."""
    angle = angle_normalize(s.th, k, work[0])
    np.float_power(angle, k.two, out=out)
    np.float_power(s.thdot, k.two, out=work[1])
    work[1] *= k.tenth
    out += work[1]
    np.multiply(u, u, out=u2)
    u2 *= k.torque_cost
    out += u2
    np.negative(out, out=out)


def swing(s: PendulumState, u: np.ndarray, k: PendulumConstants, tmp32: np.ndarray,
          tmp: np.ndarray) -> None:
    """``thdot += (3 g / (2 l) * sin(th) + 3 / (m l^2) * u) * dt``, clipped to
    ``[-max_speed, max_speed]``; ``th += thdot * dt``. ``3 / (m l^2) * u`` is float32."""
    np.sin(s.th, out=tmp)
    tmp *= k.gravity_term
    np.multiply(u, k.torque_term, out=tmp32)
    tmp += tmp32
    tmp *= k.dt
    s.thdot += tmp
    np.clip(s.thdot, k.minus_max_speed, k.max_speed, out=s.thdot)
    np.multiply(s.thdot, k.dt, out=tmp)
    s.th += tmp
