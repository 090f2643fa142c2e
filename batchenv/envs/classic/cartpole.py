"""BatchCartPole: Gymnasium's CartPole-v1, batched (bit for bit with ``fast_trig=False``)."""

from __future__ import annotations

import math
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

__all__ = ["BatchCartPole", "CartPoleState", "CartPoleParams"]

_FIELDS = ("x", "x_dot", "theta", "theta_dot")
_INTEGRATORS = ("euler", "semi-implicit euler")


@dataclass(frozen=True)
class CartPoleParams:
    """The constants of Gymnasium's ``CartPoleEnv`` (same names, same values)."""

    gravity: float = 9.8  # m/s^2
    masscart: float = 1.0  # kg
    masspole: float = 0.1  # kg
    length: float = 0.5  # m, half the pole's length
    force_mag: float = 10.0  # N, the push of either action
    tau: float = 0.02  # s, seconds between state updates
    kinematics_integrator: str = "euler"  # or "semi-implicit euler"
    theta_threshold_radians: float = 12 * 2 * math.pi / 360  # |theta| beyond this ends it
    x_threshold: float = 2.4  # m, |x| beyond this ends the episode
    sutton_barto_reward: bool = False  # 0 per step and -1 on termination, not +1 per step
    fast_trig: bool = True  # sin/cos by polynomial and sqrt (1 ulp); False: bit for bit
    reset_low: float = -0.05  # start states: every variable uniform in [low, high)
    reset_high: float = 0.05  # (Gymnasium's reset(options={"low": .., "high": ..}))

    def __post_init__(self) -> None:
        if self.kinematics_integrator not in _INTEGRATORS:
            raise ValueError(f"CartPoleParams: kinematics_integrator must be one of "
                             f"{_INTEGRATORS}, got {self.kinematics_integrator!r}")
        if not self.reset_low <= self.reset_high:
            raise ValueError(f"CartPoleParams: need reset_low <= reset_high, got "
                             f"{self.reset_low} > {self.reset_high}")

    # derived exactly as Gymnasium derives them, so the arithmetic matches bit for bit
    @property
    def total_mass(self) -> float:
        return self.masspole + self.masscart

    @property
    def polemass_length(self) -> float:
        return self.masspole * self.length


class CartPoleState(State):
    """One env per row (``BatchCartPole.state_dtype`` is made from these annotations)."""

    x: Field[np.float64]  # cart position, m; the episode ends beyond +-x_threshold (2.4)
    x_dot: Field[np.float64]  # cart velocity, m/s
    theta: Field[np.float64]  # pole angle from upright, rad; ends beyond +-12 degrees
    theta_dot: Field[np.float64]  # pole angular velocity, rad/s


class BatchCartPole(ClassicControlEnv[CartPoleState]):
    """## Description

    Gymnasium's ``CartPole-v1`` for thousands of carts at once: a pole is attached by an
    un-actuated joint to a cart moving along a frictionless track; the goal is to keep the
    pole upright by pushing the cart left or right (Barto, Sutton & Anderson, 1983). Same
    dynamics, constants, spaces, rewards, start states and time limit as Gymnasium's
    ``CartPoleEnv``; the state is float64 and every step repeats Gymnasium's floating-point
    operations in Gymnasium's order. The only difference is the sine and cosine of the
    pole angle, which by default come from a polynomial and a square root rather than the C
    library (one unit in the last place at most; see ``fast_trig`` below). With
    ``fast_trig=False`` a trajectory from the same state with the same actions is identical
    to Gymnasium's bit for bit (both tested against Gymnasium step by step).

    Each step applies the rules in order: :func:`push_force` (action to force),
    :func:`accelerations` (the equations of motion), :func:`integrate` (Euler, or
    semi-implicit Euler) and :func:`out_of_bounds` (termination).

    ## Action Space

    ``Discrete(2)``: 0 pushes the cart to the left, 1 to the right, with a force of
    ``force_mag`` = 10 N.

    ## Observation Space

    ``Box(float32, (4,))``, the state cast to float32:

    | index | observation | min | max |
    |---|---|---|---|
    | 0 | cart position `x` (m) | -4.8 | 4.8 |
    | 1 | cart velocity `x_dot` (m/s) | -inf | inf |
    | 2 | pole angle `theta` (rad) | ~ -0.418 (-24°) | ~ 0.418 (24°) |
    | 3 | pole angular velocity `theta_dot` (rad/s) | -inf | inf |

    An episode ends long before the position or angle bounds: at |x| > 2.4 or
    |theta| > 12°.

    ## Rewards

    +1 for every step, including the terminating one. With ``sutton_barto_reward=True``:
    0 for every step and -1 for the terminating step.

    ## Starting State

    ``x, x_dot, theta, theta_dot`` each uniform in [-0.05, 0.05) (``reset_low``,
    ``reset_high``), drawn in float64 from the env's own random stream.

    ## Episode End

    Terminated when the pole angle leaves [-12°, 12°] or the cart position leaves
    [-2.4, 2.4]. Truncated after ``max_episode_steps`` (default 500, as CartPole-v1).

    ## Arguments

    ``BatchCartPole(num_envs, *, params=CartPoleParams(...), **overrides,
    **BatchEnv options)``: any field of :class:`CartPoleParams` may be given as a keyword:
    ``sutton_barto_reward`` (Gymnasium's constructor option), ``fast_trig`` (see below),
    the physical constants
    (``gravity``, ``masscart``, ``masspole``, ``length``, ``force_mag``, ``tau``,
    ``kinematics_integrator``, thresholds: Gymnasium's attributes of the same names), and
    ``reset_low``/``reset_high``. ``autoreset_mode``, ``max_episode_steps``, ``copy``,
    ``validate``, ``render_mode`` (``"rgb_array"``: 600 x 400 frames drawn like
    Gymnasium's) as in :class:`~batchenv.BatchEnv`. Also
    ``gymnasium.make_vec("batchenv/CartPole-v1", num_envs=N)`` and
    ``batchenv.make("CartPole-v1", num_envs=N)``.

    ``fast_trig=True`` (the default) computes sin and cos of the pole angle in
    :func:`sin_cos` (a minimax polynomial for the sine, ``sqrt(1 - sin**2)`` for the
    cosine) instead of the C library, which numpy calls one element at a time (the step's
    cost with and without it: ``docs/classic_control.md``, measured by
    ``benchmarks/test_bench_classic.py``). A sine may differ from Gymnasium's by one unit
    in the last place for under 2% of angles, a cosine for under 20% (tested), so a step
    from the same state agrees to 1e-15 (tested) instead of bit for bit, and long balanced
    episodes drift apart (the upright pole is unstable).
    ``fast_trig=False`` uses the C library and is bit for bit.

    ## Differences from Gymnasium

    * Random numbers come from batchenv's per-env streams, so a seed gives other start
      states than Gymnasium's with the same seed (same distribution).
    * Gymnasium's ``reset(options={"low": ..., "high": ...})`` is the constructor's
      ``reset_low``/``reset_high`` here (``BatchEnv.reset`` accepts only ``reset_mask``).
    * Sine and cosine within one unit in the last place of the C library's, unless
      ``fast_trig=False`` (see above).
    * Stepping a terminated env without a reset (Gymnasium warns, then gives reward 0) does
      not happen here: auto-reset, or a frozen env in ``DISABLED`` mode, takes over.

    ## Version History

    * v1: as Gymnasium's CartPole-v1 (500 steps); ``fast_trig`` (default True) for the
      sine and cosine.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 50}
    state_type = CartPoleState
    default_max_episode_steps = 500
    single_action_space = spaces.Discrete(2)

    def __init__(self, num_envs: int | None = None, *, params: CartPoleParams | None = None,
                 **kwargs: Any) -> None:
        self.params = p = params_from(CartPoleParams, params, kwargs)
        high = np.array([p.x_threshold * 2, np.inf, p.theta_threshold_radians * 2, np.inf],
                        dtype=np.float32)
        self.single_observation_space = spaces.Box(-high, high, dtype=np.float32)
        super().__init__(num_envs, **kwargs)
        n = self.num_envs
        self._k = CartPoleConstants(p)
        self._work = np.empty((5, n))  # scratch rows
        self._acc = np.empty((2, n))  # xacc, thetaacc
        self._beyond = np.empty(n, dtype=np.bool_)
        self._done = np.empty(n, dtype=np.bool_)
        self._step_reward = np.full(n, 0.0 if p.sutton_barto_reward else 1.0)

    # ---------------------------------------------------------------- kernels
    def reset_rows(self, s: CartPoleState, rows: np.ndarray | slice, rng: BatchRandom) -> None:
        p = self.params
        draws = np.ascontiguousarray(rng.uniform(p.reset_low, p.reset_high, (4,)).T)
        for field, values in zip(fields_view(s, _FIELDS), draws):
            field[rows] = values  # row by row from contiguous rows: the cheapest scatter

    def step_envs(self, s: CartPoleState, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        k, work, acc = self._k, self._work, self._acc
        force = push_force(action, k)
        accelerations(s.theta, s.theta_dot, force, k, work, acc[0], acc[1])
        integrate(s, acc[0], acc[1], k, work[4])
        done = self._done
        out_of_bounds(s, k, work[4], self._beyond, done)
        if self.params.sutton_barto_reward:
            np.subtract(0.0, done, out=self._step_reward)
        return self._step_reward, done

    def observe(self, s: CartPoleState, out: np.ndarray) -> None:
        write_columns(out, fields_view(s, _FIELDS))

    def render_envs(self, s: CartPoleState) -> list[np.ndarray]:
        return draw.cartpole_frames(s.x, s.theta, self.params)


# -------------------------------------------------------------------- the rules
class CartPoleConstants:
    """The parameters as 0-d float64 arrays (the cheapest ufunc operands:
    ``docs/performance.md``), derived exactly as Gymnasium derives them."""

    def __init__(self, p: CartPoleParams) -> None:
        def c(x: float) -> np.ndarray:
            return np.array(x, dtype=np.float64)

        self.forces = np.array([-p.force_mag, p.force_mag])
        self.gravity, self.masspole, self.length = c(p.gravity), c(p.masspole), c(p.length)
        self.total_mass, self.polemass_length = c(p.total_mass), c(p.polemass_length)
        self.four_thirds, self.tau = c(4.0 / 3.0), c(p.tau)
        self.x_threshold, self.theta_threshold = c(p.x_threshold), c(p.theta_threshold_radians)
        self.euler = p.kinematics_integrator == "euler"
        self.fast_trig = p.fast_trig


def push_force(action: np.ndarray, k: CartPoleConstants) -> np.ndarray:
    """Action 1 pushes right with ``+force_mag``, action 0 left with ``-force_mag``."""
    return k.forces[action]  # a gather is cheaper than np.take(..., out=)


def accelerations(theta: np.ndarray, theta_dot: np.ndarray, force: np.ndarray,
                  k: CartPoleConstants, work: np.ndarray, xacc: np.ndarray,
                  thetaacc: np.ndarray) -> None:
    """The cart's and the pole's accelerations (Florian, "Correct equations for the dynamics
    of the cart-pole system", 2007)::

        temp = (force + polemass_length * theta_dot**2 * sin(theta)) / total_mass
        thetaacc = (gravity * sin(theta) - cos(theta) * temp)
                   / (length * (4/3 - masspole * cos(theta)**2 / total_mass))
        xacc = temp - polemass_length * thetaacc * cos(theta) / total_mass

    written below as a chain of in-place ufuncs (no temporaries), with Gymnasium's
    operations in Gymnasium's order, so the results match bit for bit
    (``tests/test_classic_control.py`` checks the chain against these lines). ``work``: four
    scratch rows."""
    temp, den, cos, sin = work[0], work[1], work[2], work[3]
    if k.fast_trig:
        sin_cos(theta, sin, cos, temp)
    else:
        np.cos(theta, out=cos)
        np.sin(theta, out=sin)
    # temp = (force + polemass_length * theta_dot**2 * sin) / total_mass
    np.multiply(theta_dot, theta_dot, out=temp)
    temp *= k.polemass_length
    temp *= sin
    temp += force
    # den = length * (4/3 - masspole * cos**2 / total_mass)
    np.multiply(cos, cos, out=den)
    den *= k.masspole
    work[0:2] /= k.total_mass  # temp and den: one call for both divisions
    np.subtract(k.four_thirds, den, out=den)
    den *= k.length
    # thetaacc = (gravity * sin - cos * temp) / den
    np.multiply(sin, k.gravity, out=thetaacc)
    np.multiply(cos, temp, out=sin)
    thetaacc -= sin
    thetaacc /= den
    # xacc = temp - polemass_length * thetaacc * cos / total_mass
    np.multiply(thetaacc, k.polemass_length, out=xacc)
    xacc *= cos
    xacc /= k.total_mass
    np.subtract(temp, xacc, out=xacc)


#: sin(x) = x + x * z * P(z), z = x * x, with P the degree-4 polynomial closest to
#: (sin(x)/x - 1)/z in the maximum norm on |x| <= FAST_TRIG_RANGE (a Chebyshev fit, computed
#: with mpmath at 40 digits: ``tests/test_classic_control.py`` recomputes it). Its error,
#: 5e-18 relative, is ~0.03 units in the last place: what remains is float64 rounding.
SIN_COEFFS = (-0.16666666666666663, 0.008333333333323076, -0.00019841269789973805,
              2.7557229440036473e-06, -2.498795167765636e-08)
_SIN_K = [np.array(c) for c in SIN_COEFFS]  # 0-d arrays: the cheapest ufunc operands
_ONE = np.array(1.0)
#: Where sin_cos uses the polynomial; beyond, the C library (a CartPole episode ends at
#: |theta| > 0.21, so an angle beyond 0.4 needs |theta_dot| > 9 rad/s: rare).
FAST_TRIG_RANGE = 0.4
_RANGE_SQUARED = FAST_TRIG_RANGE * FAST_TRIG_RANGE


def sin_cos(x: np.ndarray, sin: np.ndarray, cos: np.ndarray, z: np.ndarray) -> None:
    """``sin(x)`` and ``cos(x)`` in ~16 numpy calls that run at memory speed: the sine by
    Horner's rule on a minimax polynomial, the cosine as ``sqrt(1 - sin**2)`` (exact
    for |x| < pi/2, and ``np.sqrt`` is one correctly rounded SIMD instruction), instead of
    the C library's ``sin`` and ``cos``, which numpy calls one element at a time (timings:
    docs/performance.md, "Why the kernels are written as they are"). Each result is within one
    unit in the last place of the C library's (sines equal for ~99% of angles, cosines for
    ~87%); angles beyond :data:`FAST_TRIG_RANGE` go to the C library. ``z``: scratch."""
    np.multiply(x, x, out=z)
    np.multiply(z, _SIN_K[-1], out=sin)
    for c in _SIN_K[-2::-1]:
        sin += c
        sin *= z
    sin *= x
    sin += x
    np.multiply(sin, sin, out=cos)
    np.subtract(_ONE, cos, out=cos)
    if z[z.argmax()] <= _RANGE_SQUARED:  # argmax, not max(): no reduction machinery
        np.sqrt(cos, out=cos)
        return
    with np.errstate(invalid="ignore"):  # 1 - sin**2 < 0 where the polynomial is invalid
        np.sqrt(cos, out=cos)
    wide = (z > _RANGE_SQUARED).nonzero()[0]
    sin[wide] = np.sin(x[wide])
    cos[wide] = np.cos(x[wide])


def integrate(s: CartPoleState, xacc: np.ndarray, thetaacc: np.ndarray, k: CartPoleConstants,
              tmp: np.ndarray) -> None:
    """One step of ``tau`` seconds: Euler moves the positions with the old velocities,
    semi-implicit Euler with the new ones."""
    xacc *= k.tau
    thetaacc *= k.tau
    if k.euler:
        np.multiply(s.x_dot, k.tau, out=tmp)
        s.x += tmp
        np.multiply(s.theta_dot, k.tau, out=tmp)
        s.theta += tmp
    s.x_dot += xacc
    s.theta_dot += thetaacc
    if not k.euler:
        np.multiply(s.x_dot, k.tau, out=tmp)
        s.x += tmp
        np.multiply(s.theta_dot, k.tau, out=tmp)
        s.theta += tmp


def out_of_bounds(s: CartPoleState, k: CartPoleConstants, tmp: np.ndarray, beyond: np.ndarray,
                  out: np.ndarray) -> None:
    """Terminated: ``|x| > x_threshold`` or ``|theta| > theta_threshold_radians``."""
    np.abs(s.x, out=tmp)
    np.greater(tmp, k.x_threshold, out=out)
    np.abs(s.theta, out=tmp)
    np.greater(tmp, k.theta_threshold, out=beyond)
    out |= beyond
