"""BatchAcrobot: Gymnasium's Acrobot-v1, batched (vectorized RK4), bit for bit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from batchenv.envs.classic import _render as draw
from batchenv.envs.classic._classic import ClassicControlEnv, params_from
from batchenv.random import BatchRandom
from batchenv.state import Field, State, fields_view

__all__ = ["BatchAcrobot", "AcrobotState", "AcrobotParams"]

_FIELDS = ("theta1", "theta2", "dtheta1", "dtheta2")
_PI = np.pi


@dataclass(frozen=True)
class AcrobotParams:
    """The constants of Gymnasium's ``AcrobotEnv`` (same names, same values)."""

    dt: float = 0.2  # s, the RK4 integration step
    LINK_LENGTH_1: float = 1.0  # noqa: N815 (Gymnasium's names) m
    LINK_LENGTH_2: float = 1.0  # noqa: N815 m
    LINK_MASS_1: float = 1.0  # noqa: N815 kg
    LINK_MASS_2: float = 1.0  # noqa: N815 kg
    LINK_COM_POS_1: float = 0.5  # noqa: N815 m, position of the centre of mass of link 1
    LINK_COM_POS_2: float = 0.5  # noqa: N815 m
    LINK_MOI: float = 1.0  # noqa: N815 moments of inertia of both links
    MAX_VEL_1: float = 4 * _PI  # noqa: N815 rad/s
    MAX_VEL_2: float = 9 * _PI  # noqa: N815 rad/s
    torque_noise_max: float = 0.0  # uniform noise added to the torque, from the env's stream
    book_or_nips: str = "book"  # the dynamics of Sutton & Barto's book, or the NIPS paper
    reset_low: float = -0.1  # every state variable uniform in [low, high), then float32
    reset_high: float = 0.1  # (Gymnasium's reset(options={"low": .., "high": ..}))

    def __post_init__(self) -> None:
        if self.book_or_nips not in ("book", "nips"):
            raise ValueError(f"AcrobotParams: book_or_nips must be 'book' or 'nips', got "
                             f"{self.book_or_nips!r}")
        if not self.reset_low <= self.reset_high:
            raise ValueError(f"AcrobotParams: need reset_low <= reset_high, got "
                             f"{self.reset_low} > {self.reset_high}")
        if self.torque_noise_max < 0:
            raise ValueError("AcrobotParams: torque_noise_max must be >= 0")


class AcrobotState(State):
    """One env per row (``BatchAcrobot.state_dtype`` is made from these annotations)."""

    theta1: Field[np.float64]  # rad, first link from pointing down, [-pi, pi]
    theta2: Field[np.float64]  # rad, second link relative to the first, [-pi, pi]
    dtheta1: Field[np.float64]  # rad/s, [-MAX_VEL_1, MAX_VEL_1]
    dtheta2: Field[np.float64]  # rad/s, [-MAX_VEL_2, MAX_VEL_2]


class BatchAcrobot(ClassicControlEnv[AcrobotState]):
    """## Description

    Gymnasium's ``Acrobot-v1`` for thousands of acrobots at once: two links connected in a
    chain, one end fixed; the joint between the links is actuated, and the goal is to
    swing the free end above a target height, starting from hanging down (Sutton, 1996;
    Sutton & Barto's book). Same dynamics, constants, spaces, rewards, start-state
    distribution and time limit as Gymnasium's ``AcrobotEnv``. The fourth-order
    Runge-Kutta step (:func:`rk4`, over :func:`dsdt`) is vectorized over the batch, and
    repeats Gymnasium's floating-point operations in Gymnasium's order, so trajectories
    match Gymnasium's bit for bit (tested step by step). Then :func:`wrap_and_bound` and
    :func:`reached_height`.

    ## Action Space

    ``Discrete(3)``: the torque on the actuated joint, 0: -1, 1: 0, 2: +1 (N m).

    ## Observation Space

    ``Box(float32, (6,))``:

    | index | observation | min | max |
    |---|---|---|---|
    | 0 | cos(`theta1`) | -1 | 1 |
    | 1 | sin(`theta1`) | -1 | 1 |
    | 2 | cos(`theta2`) | -1 | 1 |
    | 3 | sin(`theta2`) | -1 | 1 |
    | 4 | angular velocity `dtheta1` | ~ -12.567 (-4 pi) | ~ 12.567 (4 pi) |
    | 5 | angular velocity `dtheta2` | ~ -28.274 (-9 pi) | ~ 28.274 (9 pi) |

    ``theta1`` is the angle of the first joint (0: pointing down), ``theta2`` the angle of
    the second link relative to the first; both are wrapped to [-pi, pi], the velocities
    bounded.

    ## Rewards

    -1 for every step that does not reach the target height, 0 for the one that does.

    ## Starting State

    ``theta1, theta2, dtheta1, dtheta2`` each uniform in [-0.1, 0.1) (``reset_low``,
    ``reset_high``), rounded to float32 as Gymnasium does (the state is float64 after).

    ## Episode End

    Terminated when the free end reaches the target height:
    ``-cos(theta1) - cos(theta2 + theta1) > 1.0``. Truncated after ``max_episode_steps``
    (default 500, as Acrobot-v1).

    ## Arguments

    ``BatchAcrobot(num_envs, *, params=AcrobotParams(...), **overrides,
    **BatchEnv options)``: any field of :class:`AcrobotParams` may be given as a keyword:
    ``book_or_nips`` (``"book"``, default, or ``"nips"``: the NIPS paper's equations),
    ``dt``, ``torque_noise_max``, the link constants (Gymnasium's attribute names) and
    ``reset_low``/``reset_high``. ``autoreset_mode``, ``max_episode_steps``, ``copy``,
    ``validate``, ``render_mode`` (``"rgb_array"``: 500 x 500 frames drawn like
    Gymnasium's) as in :class:`~batchenv.BatchEnv`. Also
    ``gymnasium.make_vec("batchenv/Acrobot-v1", num_envs=N)``.

    ## Differences from Gymnasium

    * Random numbers (start states, torque noise) come from batchenv's per-env streams, so
      a seed gives other start states than Gymnasium's with the same seed (same
      distribution).
    * Gymnasium's start state is float32 until the first step, and its observation is
      computed with float32 sine and cosine; batchenv does the same for every env that
      has not stepped since its reset (``elapsed_steps == 0``), so these observations
      match too.
    * Gymnasium's ``reset(options={"low": ..., "high": ...})`` is the constructor's
      ``reset_low``/``reset_high`` here (``BatchEnv.reset`` accepts only ``reset_mask``).

    ## Version History

    * v1: as Gymnasium's Acrobot-v1 (observation of sines and cosines, 500 steps).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 15}
    state_type = AcrobotState
    default_max_episode_steps = 500
    single_action_space = spaces.Discrete(3)

    def __init__(self, num_envs: int | None = None, *, params: AcrobotParams | None = None,
                 **kwargs: Any) -> None:
        self.params = p = params_from(AcrobotParams, params, kwargs)
        high = np.array([1.0, 1.0, 1.0, 1.0, p.MAX_VEL_1, p.MAX_VEL_2], dtype=np.float32)
        self.single_observation_space = spaces.Box(-high, high, dtype=np.float32)
        super().__init__(num_envs, **kwargs)
        n = self.num_envs
        self._k = AcrobotConstants(p)
        self._torque = np.zeros(n)
        self._y = np.zeros((4, n))  # a stage's state
        self._ks = np.zeros((4, 4, n))  # k1..k4, each (dtheta1, dtheta2, ddtheta1, ddtheta2)
        self._work = np.zeros((12, n))
        self._done = np.zeros(n, dtype=np.bool_)
        self._step_reward = np.zeros(n)

    # ---------------------------------------------------------------- kernels
    def state_bounds(self) -> dict[str, tuple[float, float]]:
        """Gymnasium clips these fields to these bounds: :meth:`set_state` rejects others."""
        p = self.params
        return {"theta1": (-np.pi, np.pi), "theta2": (-np.pi, np.pi),
                "dtheta1": (-p.MAX_VEL_1, p.MAX_VEL_1), "dtheta2": (-p.MAX_VEL_2, p.MAX_VEL_2)}

    def reset_rows(self, s: AcrobotState, rows: np.ndarray | slice, rng: BatchRandom) -> None:
        p = self.params
        draws = rng.uniform(p.reset_low, p.reset_high, (4,)).T
        for name, values in zip(_FIELDS, draws.astype(np.float32)):  # float32, as Gymnasium
            getattr(s, name)[rows] = values

    def step_envs(self, s: AcrobotState, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        k = self._k
        torque = self._torque
        np.take(k.torques, action, out=torque)
        if self.params.torque_noise_max > 0:
            m = self.params.torque_noise_max
            torque += rng.uniform(-m, m)
        state = fields_view(s, _FIELDS)
        rk4(state, torque, k, self._y, self._ks, self._work)
        wrap_and_bound(s, k)
        reached_height(s, self._work, self._done)
        np.subtract(self._done, 1.0, out=self._step_reward)  # -1, or 0 at the goal
        return self._step_reward, self._done

    def observe(self, s: AcrobotState, out: np.ndarray) -> None:
        angles = fields_view(s, _FIELDS)[:2]
        np.cos(angles.T, out=out[:, 0:4:2])
        np.sin(angles.T, out=out[:, 1:4:2])
        out[:, 4] = s.dtheta1
        out[:, 5] = s.dtheta2
        fresh = np.flatnonzero(s.elapsed_steps == 0)
        if fresh.size:  # Gymnasium's float32 start state: float32 sine and cosine
            a32 = angles[:, fresh].T.astype(np.float32)
            out[fresh, 0:4:2] = np.cos(a32)
            out[fresh, 1:4:2] = np.sin(a32)

    def render_envs(self, s: AcrobotState) -> list[np.ndarray]:
        return draw.acrobot_frames(s.theta1, s.theta2, self.params)


class AcrobotConstants:
    """Gymnasium's constant subexpressions of ``_dsdt``, computed as Python evaluates them
    (left to right), as 0-d arrays."""

    def __init__(self, p: AcrobotParams) -> None:
        m1, m2 = p.LINK_MASS_1, p.LINK_MASS_2
        l1 = p.LINK_LENGTH_1
        lc1, lc2 = p.LINK_COM_POS_1, p.LINK_COM_POS_2
        i1 = i2 = p.LINK_MOI
        g = 9.8

        def c(x: float) -> np.ndarray:
            return np.array(x, dtype=np.float64)

        self.torques = np.array([-1.0, 0.0, 1.0])  # Gymnasium's AVAIL_TORQUE
        # d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * cos(theta2)) + I1 + I2
        self.d1_a, self.m2 = c(m1 * lc1**2), c(m2)
        self.d1_b, self.d1_c = c(l1**2 + lc2**2), c(2 * l1 * lc2)
        self.i1, self.i2 = c(i1), c(i2)
        # d2 = m2 * (lc2**2 + l1 * lc2 * cos(theta2)) + I2
        self.lc2_sq, self.l1_lc2 = c(lc2**2), c(l1 * lc2)
        # phi2 = m2 * lc2 * g * cos(theta1 + theta2 - pi / 2.0)
        self.phi2_a, self.half_pi = c(m2 * lc2 * g), c(np.pi / 2.0)
        # phi1 = -m2 * l1 * lc2 * dtheta2**2 * sin(theta2)
        #        - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * sin(theta2)
        #        + (m1 * lc1 + m2 * l1) * g * cos(theta1 - pi / 2) + phi2
        self.phi1_a, self.phi1_b = c(-m2 * l1 * lc2), c(2 * m2 * l1 * lc2)
        self.phi1_c = c((m1 * lc1 + m2 * l1) * g)
        # ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1**2 * sin(theta2) - phi2)
        #            / (m2 * lc2**2 + I2 - d2**2 / d1)
        self.dd2_a, self.dd2_den = c(m2 * l1 * lc2), c(m2 * lc2**2 + i2)
        self.book = p.book_or_nips == "book"
        self.two = c(2.0)
        # rk4 over t = [0, dt]: dt = t[1] - t[0], dt2 = dt / 2.0, and dt / 6.0
        dt = p.dt - 0
        self.dt, self.dt2, self.dt6 = c(dt), c(dt / 2.0), c(dt / 6.0)
        self.pi, self.minus_pi, self.two_pi = c(np.pi), c(-np.pi), c(np.pi - -np.pi)
        self.max_vel_1, self.max_vel_2 = c(p.MAX_VEL_1), c(p.MAX_VEL_2)


# -------------------------------------------------------------------- the rules
def dsdt(y: np.ndarray, torque: np.ndarray, k: AcrobotConstants, work: np.ndarray,
         out: np.ndarray) -> None:
    """The time derivative of the state ``y`` = (theta1, theta2, dtheta1, dtheta2) under
    ``torque``, written into ``out`` = (dtheta1, dtheta2, ddtheta1, ddtheta2): Gymnasium's
    ``_dsdt`` with its operations in its order. ``work``: 12 scratch rows."""
    theta1, theta2, dtheta1, dtheta2 = y
    trig = work[0:3]  # cos(theta2), cos(theta1 + theta2 - pi/2), cos(theta1 - pi/2)
    cos2, sin2 = work[0], work[3]
    d1, d2, phi1, phi2, a, b = work[4], work[5], work[6], work[7], work[8], work[9]
    np.copyto(work[0], theta2)
    np.add(theta1, theta2, out=work[1])
    work[1] -= k.half_pi
    np.subtract(theta1, k.half_pi, out=work[2])
    np.cos(trig, out=trig)
    np.sin(theta2, out=sin2)
    # d1 = ((m1*lc1**2 + m2 * ((l1**2 + lc2**2) + (2*l1*lc2) * cos2)) + I1) + I2
    np.multiply(cos2, k.d1_c, out=d1)
    d1 += k.d1_b
    d1 *= k.m2
    d1 += k.d1_a
    d1 += k.i1
    d1 += k.i2
    # d2 = m2 * (lc2**2 + (l1*lc2) * cos2) + I2
    np.multiply(cos2, k.l1_lc2, out=d2)
    d2 += k.lc2_sq
    d2 *= k.m2
    d2 += k.i2
    # phi2 = (m2*lc2*g) * cos(theta1 + theta2 - pi/2)
    np.multiply(work[1], k.phi2_a, out=phi2)
    # phi1 = ((-m2*l1*lc2 * dtheta2**2 * sin2 - 2*m2*l1*lc2 * dtheta2 * dtheta1 * sin2)
    #         + (m1*lc1 + m2*l1)*g * cos(theta1 - pi/2)) + phi2
    np.float_power(dtheta2, k.two, out=phi1)  # ** on a numpy float64: the C library's pow
    phi1 *= k.phi1_a
    phi1 *= sin2
    np.multiply(dtheta2, k.phi1_b, out=a)
    a *= dtheta1
    a *= sin2
    phi1 -= a
    np.multiply(work[2], k.phi1_c, out=a)
    phi1 += a
    phi1 += phi2
    ddtheta1, ddtheta2 = out[2], out[3]
    # ddtheta2 = numerator / ((m2*lc2**2 + I2) - d2**2 / d1)
    np.divide(d2, d1, out=a)  # d2 / d1
    a *= phi1
    a += torque
    if k.book:  # - m2*l1*lc2 * dtheta1**2 * sin2
        np.float_power(dtheta1, k.two, out=b)
        b *= k.dd2_a
        b *= sin2
        a -= b
    a -= phi2
    np.float_power(d2, k.two, out=b)
    b /= d1
    np.subtract(k.dd2_den, b, out=b)
    np.divide(a, b, out=ddtheta2)
    # ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    np.multiply(d2, ddtheta2, out=a)
    a += phi1
    np.negative(a, out=a)
    np.divide(a, d1, out=ddtheta1)
    np.copyto(out[0], dtheta1)
    np.copyto(out[1], dtheta2)


def rk4(state: np.ndarray, torque: np.ndarray, k: AcrobotConstants, y: np.ndarray,
        ks: np.ndarray, work: np.ndarray) -> None:
    """One fourth-order Runge-Kutta step of ``dt`` in place on ``state`` (4, n), the torque
    held constant: Gymnasium's ``rk4`` over ``t = [0, dt]``, vectorized."""
    k1, k2, k3, k4 = ks
    dsdt(state, torque, k, work, k1)
    np.multiply(k1, k.dt2, out=y)
    y += state
    dsdt(y, torque, k, work, k2)
    np.multiply(k2, k.dt2, out=y)
    y += state
    dsdt(y, torque, k, work, k3)
    np.multiply(k3, k.dt, out=y)
    y += state
    dsdt(y, torque, k, work, k4)
    # state + dt / 6.0 * (((k1 + 2 * k2) + 2 * k3) + k4)
    np.multiply(k2, k.two, out=y)
    y += k1
    k3 *= k.two
    y += k3
    y += k4
    y *= k.dt6
    state += y


def wrap_and_bound(s: AcrobotState, k: AcrobotConstants) -> None:
    """Angles wrapped into [-pi, pi] by whole turns (Gymnasium's ``wrap``: one subtraction
    or addition of 2 pi at a time), velocities clipped to ``MAX_VEL_1``/``MAX_VEL_2``."""
    for angle in (s.theta1, s.theta2):
        out = np.flatnonzero((angle > k.pi) | (angle < k.minus_pi))
        while out.size:  # rare: a few rows, usually one turn
            x = angle[out]
            x = np.where(x > k.pi, x - k.two_pi, np.where(x < k.minus_pi, x + k.two_pi, x))
            angle[out] = x
            out = out[(x > k.pi) | (x < k.minus_pi)]
    np.clip(s.dtheta1, -k.max_vel_1, k.max_vel_1, out=s.dtheta1)
    np.clip(s.dtheta2, -k.max_vel_2, k.max_vel_2, out=s.dtheta2)


def reached_height(s: AcrobotState, work: np.ndarray, out: np.ndarray) -> None:
    """Terminated: ``-cos(theta1) - cos(theta2 + theta1) > 1.0``: the free end is more than
    one link length above the fixed end."""
    a, b = work[0], work[1]
    np.cos(s.theta1, out=a)
    np.add(s.theta2, s.theta1, out=b)
    np.cos(b, out=b)
    np.negative(a, out=a)
    a -= b
    np.greater(a, 1.0, out=out)
