"""The rules of BatchPong for one game, row ``i``: BatchPong's per-env kernels.

The same rules as :mod:`batchenv.envs.pong.rules` (the numpy kernels), written for one env
with branches and compiled by numba into one loop over the batch (:mod:`batchenv.perenv`;
``BatchPong(kernels="numba")``). Both forms agree bit for bit, which
``tests/test_pong_per_env.py`` checks step by step in every mode, observation type and
auto-reset mode. For that:

* every float is float32 and every constant a float32 (:class:`PongKernelConstants`):
  numba, like Python, would compute ``float32 op float`` in float64;
* operations come in the numpy kernels' order (``offset * spin + vy``, not
  ``vy + spin * offset``; the serve's float64 formulas with their powers of two);
* draws come in the numpy kernels' order: per sub-step the sticky draws (left, then right
  paddle), then after a point the serve's three words (side, row, vy).

The step is :func:`substep` ``frameskip`` times: :func:`sticky_actions`,
:func:`move_paddle` (or :func:`track_ball`), :func:`keep_on_court`, :func:`move_ball`,
:func:`reflect_off_walls`, :func:`return_ball`, then :func:`score_point` and :func:`serve`
after a miss (or the end of the rally).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from batchenv import perenv
from batchenv.perenv import rule

__all__ = ["PongKernelConstants", "PongImageConstants", "kernel_constants",
           "image_layout_constants", "reset_env", "step_env", "observe_env"]

_F32 = np.float32
_S11 = np.uint64(11)  # a word's top 53 bits
_TWO_M53 = 2.0**-53  # 53 bits to [0, 1)
_TWO_M52 = 2.0**-52  # 53 bits to [0, 2)


class PongKernelConstants(NamedTuple):
    """What the per-env kernels read as ``p.constants``: :class:`~batchenv.envs.pong.rules.
    PongParams` and the env's options as numba-typed scalars and arrays (float32 where the
    state is float32), and the state observation's scaling."""

    # the game
    cpu: bool  # the right paddle tracks the ball (mode "cpu")
    rally: bool  # mode "rally": +1 per step, a miss ends the episode
    frameskip: int
    sticky: float  # repeat_action_probability (float64, as the numpy draw compares)
    points_to_win: int
    paddle_min: np.float32
    paddle_max: np.float32
    centre_y: np.float32  # top_wall / 2: paddles' start row, the straight serve's row
    paddle_steps: np.ndarray  # (3,) float32: NOOP, UP, DOWN
    cpu_speed: np.float32
    minus_cpu_speed: np.float32
    top: np.float32
    top2: np.float32
    left_plane: np.float32
    right_plane: np.float32
    left_plane2: np.float32
    right_plane2: np.float32
    reach: np.float32
    spin: np.float32
    max_vy: np.float32
    minus_max_vy: np.float32
    ball_speed: np.float32
    minus_ball_speed: np.float32
    serve_x: np.float32
    serve_y_scale: float  # serve: y = u53 * scale + offset (float64, as serve_balls)
    serve_y_offset: float
    serve_vy: float
    ball_speed64: float
    # the state observation: six float32 each (tuples, not arrays: values the loop keeps,
    # where an array would be read again for every env, as a store into the state might
    # have changed it)
    obs_scale: tuple[np.float32, ...]
    obs_offset: tuple[np.float32, ...]


class PongImageConstants(NamedTuple):
    """What the per-env kernels read as ``p.image_constants`` for tiles and pixels (None
    for the state observation: the step then carries none of it): the image layout of
    :mod:`batchenv.envs.pong.raster`."""

    image_shape: tuple[int, int]
    background: np.ndarray  # (H, W) uint8: walls and court
    ball_a: np.ndarray  # (2,) float32 [x, y]: first pixel = trunc(u * a + b), clipped
    ball_b: np.ndarray
    ball_lo: np.ndarray  # (2,) int64 [col, row]
    ball_hi: np.ndarray
    ball_size: tuple[int, int]  # (rows, cols)
    paddle_a: np.float32
    paddle_b: np.float32
    paddle_lo: int
    paddle_hi: int
    paddle_size: tuple[int, int]
    paddle_cols: tuple[int, int]  # first pixel column of the left and the right paddle
    ball_value: np.uint8
    left_value: np.uint8
    right_value: np.uint8


def kernel_constants(env: Any) -> PongKernelConstants:
    """The constants of a :class:`~batchenv.BatchPong` (its params, mode, frameskip, sticky
    actions, the state observation's scaling)."""
    p, k = env.params, env.params.f32
    return PongKernelConstants(
        cpu=env.mode == "cpu", rally=env.mode == "rally", frameskip=int(env.frameskip),
        sticky=float(env.repeat_action_probability), points_to_win=int(p.points_to_win),
        paddle_min=_F32(k.paddle_min), paddle_max=_F32(k.paddle_max),
        centre_y=_F32(p.top_wall / 2), paddle_steps=k.paddle_steps.astype(np.float32),
        cpu_speed=_F32(k.cpu_speed), minus_cpu_speed=_F32(k.minus_cpu_speed),
        top=_F32(k.top), top2=_F32(k.top2), left_plane=_F32(k.left_plane),
        right_plane=_F32(k.right_plane), left_plane2=_F32(k.left_plane2),
        right_plane2=_F32(k.right_plane2), reach=_F32(k.reach), spin=_F32(k.spin),
        max_vy=_F32(k.max_vy), minus_max_vy=_F32(k.minus_max_vy),
        ball_speed=_F32(k.ball_speed), minus_ball_speed=_F32(-p.ball_speed),
        serve_x=_F32(k.serve_x), serve_y_scale=float(k.serve_scales[0, 0]),
        serve_y_offset=float(k.serve_offsets[0, 0]), serve_vy=float(k.serve_vy),
        ball_speed64=float(k.ball_speed64),
        obs_scale=tuple(map(_F32, env._obs_scale)),
        obs_offset=tuple(map(_F32, env._obs_offset)))


def image_layout_constants(env: Any) -> PongImageConstants | None:
    """The image layout of a :class:`~batchenv.BatchPong` with tiles or pixels, else None.
    (Not named ``image_constants``: the compile cache's key follows the module globals
    named like the names a kernel reads, and ``p.image_constants`` would lead it here, to
    the namedtuple class's field accessors, which it cannot hash: BatchPong's loops were
    then compiled in every process.)"""
    lay = env.layout
    if lay is None:
        return None
    (ay, by), (ax, bx), (py, pb) = lay.ball_y_coef, lay.ball_x_coef, lay.paddle_y_coef
    return PongImageConstants(
        image_shape=(int(lay.height), int(lay.width)),
        background=lay.background_image(),
        ball_a=np.array([ax, ay], np.float32), ball_b=np.array([bx, by], np.float32),
        ball_lo=np.array([lay.ball_cols[0], lay.ball_rows[0]], np.int64),
        ball_hi=np.array([lay.ball_cols[1], lay.ball_rows[1]], np.int64),
        ball_size=(int(lay.ball_size[0]), int(lay.ball_size[1])),
        paddle_a=_F32(py), paddle_b=_F32(pb), paddle_lo=int(lay.paddle_rows[0]),
        paddle_hi=int(lay.paddle_rows[1]),
        paddle_size=(int(lay.paddle_size[0]), int(lay.paddle_size[1])),
        paddle_cols=(int(lay.paddle_cols[0]), int(lay.paddle_cols[1])),
        ball_value=np.uint8(lay.ball), left_value=np.uint8(lay.left_paddle),
        right_value=np.uint8(lay.right_paddle))


# ---------------------------------------------------------------- the rules, one game
@rule
def clip(x: Any, lo: Any, hi: Any) -> Any:
    """``x`` bounded to ``[lo, hi]`` (numpy's clip for numbers that are not NaN)."""
    return min(max(x, lo), hi)


def paddle_actions(action: Any) -> tuple[Any, Any]:
    """(left, right) given actions: a ``Discrete`` action (cpu; the right paddle's is
    unused) or a ``MultiDiscrete([3, 3])`` pair."""
    if np.ndim(action) == 0:
        return action, 0
    return action[0], action[1]


@rule
def sticky_actions(k: PongKernelConstants, s: Any, i: int, left: int, right: int
                   ) -> tuple[int, int]:
    """The actions applied this sub-step: each paddle keeps its last applied one with
    probability ``repeat_action_probability`` (one draw per controlled paddle, left first)."""
    if perenv.random(s, i) >= k.sticky:
        s.action_left[i] = left
    if not k.cpu:
        if perenv.random(s, i) >= k.sticky:
            s.action_right[i] = right
    return s.action_left[i], s.action_right[i]


@rule
def move_paddle(k: PongKernelConstants, paddle_y: np.float32, action: int) -> np.float32:
    """A controlled paddle moves ``paddle_speed`` cells up or down."""
    return paddle_y + k.paddle_steps[action]


@rule
def track_ball(k: PongKernelConstants, paddle_y: np.float32, ball_y: np.float32
               ) -> np.float32:
    """The CPU paddle moves towards the ball's row, at most ``cpu_speed`` cells."""
    return paddle_y + clip(ball_y - paddle_y, k.minus_cpu_speed, k.cpu_speed)


@rule
def keep_on_court(k: PongKernelConstants, paddle_y: np.float32) -> np.float32:
    """Paddle centres stay within ``[paddle_min, paddle_max]``."""
    return clip(paddle_y, k.paddle_min, k.paddle_max)


@rule
def move_ball(s: Any, i: int) -> None:
    """The ball moves by its velocity."""
    s.ball_x[i] += s.ball_vx[i]
    s.ball_y[i] += s.ball_vy[i]


@rule
def reflect_off_walls(k: PongKernelConstants, s: Any, i: int) -> None:
    """A ball past the top (y < 0) or bottom (y > height-1) wall is reflected back and its
    vy reversed."""
    y = s.ball_y[i]
    if y < 0:
        s.ball_y[i] = -y
        s.ball_vy[i] = -s.ball_vy[i]
    elif y > k.top:
        s.ball_y[i] = k.top2 - y
        s.ball_vy[i] = -s.ball_vy[i]


@rule
def return_ball(k: PongKernelConstants, s: Any, i: int) -> bool:
    """A ball at a paddle's plane is returned when the paddle is within reach (x reflected
    off the plane, vx reversed, ``vy += spin * (y - centre)`` bounded by ``max_ball_vy``);
    returns whether it was missed."""
    x = s.ball_x[i]
    left = x < k.left_plane
    if not (left or x > k.right_plane):
        return False
    offset = s.ball_y[i] - (s.left_y[i] if left else s.right_y[i])
    if abs(offset) > k.reach:
        return True
    s.ball_x[i] = (k.left_plane2 if left else k.right_plane2) - x
    s.ball_vx[i] = -s.ball_vx[i]
    s.ball_vy[i] = clip(offset * k.spin + s.ball_vy[i], k.minus_max_vy, k.max_vy)
    return False


@rule
def score_point(k: PongKernelConstants, s: Any, i: int) -> tuple[float, bool]:
    """A missed ball is a point for the other side: +1 when the left side scores (the ball
    passed the right paddle), -1 otherwise; reaching ``points_to_win`` ends the game."""
    if s.ball_x[i] > k.right_plane:
        s.score_left[i] += 1
        reward = 1.0
    else:
        s.score_right[i] += 1
        reward = -1.0
    return reward, max(s.score_left[i], s.score_right[i]) >= k.points_to_win


@rule
def serve(k: PongKernelConstants, s: Any, i: int) -> None:
    """The ball restarts from the centre column at a row uniform in the middle half of the
    court, towards a random side, with vy uniform in [-serve_vy, serve_vy] (three words:
    side, row, vy; float64 formulas of ``serve_balls``, rounded once to float32)."""
    side = np.float64(perenv.bits(s, i) >> _S11)
    row = np.float64(perenv.bits(s, i) >> _S11)
    vy = np.float64(perenv.bits(s, i) >> _S11)
    s.ball_x[i] = k.serve_x
    s.ball_y[i] = row * k.serve_y_scale + k.serve_y_offset
    s.ball_vx[i] = np.copysign(k.ball_speed64, side * _TWO_M53 + -0.5)
    s.ball_vy[i] = (vy * _TWO_M52 + -1.0) * k.serve_vy


@rule
def serve_straight(k: PongKernelConstants, s: Any, i: int) -> None:
    """``rally``: the ball at the centre of the court, vy = 0, towards a random side."""
    u = perenv.random(s, i)
    s.ball_x[i] = k.serve_x
    s.ball_y[i] = k.centre_y
    s.ball_vx[i] = k.minus_ball_speed if u < 0.5 else k.ball_speed
    s.ball_vy[i] = 0.0


@rule
def substep(k: PongKernelConstants, s: Any, i: int, left: int, right: int
            ) -> tuple[float, bool]:
    """One physics step of game ``i``: ``(reward, episode over)``."""
    if k.sticky > 0.0:
        left, right = sticky_actions(k, s, i, left, right)
    s.left_y[i] = keep_on_court(k, move_paddle(k, s.left_y[i], left))
    if k.cpu:
        s.right_y[i] = keep_on_court(k, track_ball(k, s.right_y[i], s.ball_y[i]))
    else:
        s.right_y[i] = keep_on_court(k, move_paddle(k, s.right_y[i], right))
    move_ball(s, i)
    reflect_off_walls(k, s, i)
    if not return_ball(k, s, i):
        return (1.0 if k.rally else 0.0), False
    if k.rally:  # a miss ends the rally and earns nothing
        return 0.0, True
    reward, over = score_point(k, s, i)
    serve(k, s, i)
    return reward, over


# ---------------------------------------------------------------- the kernels
def reset_env(p: Any, s: Any, i: int) -> None:
    """Scores 0-0, last actions NOOP, paddles centred, and a serve."""
    k = p.constants
    s.score_left[i] = 0
    s.score_right[i] = 0
    s.action_left[i] = 0
    s.action_right[i] = 0
    s.left_y[i] = k.centre_y
    s.right_y[i] = k.centre_y
    if k.rally:
        serve_straight(k, s, i)
    else:
        serve(k, s, i)


def step_env(p: Any, s: Any, i: int, action: Any) -> tuple[float, bool]:
    """``frameskip`` sub-steps with the same given actions, rewards summed; an episode
    that ends at a sub-step stops there."""
    k = p.constants
    left, right = paddle_actions(action)
    reward = 0.0
    for _ in range(k.frameskip):
        r, over = substep(k, s, i, left, right)
        reward += r
        if over:
            return reward, True
    return reward, False


def observe_env(p: Any, s: Any, i: int, obs: np.ndarray) -> None:
    """The 6 scaled floats, or the image (tiles, pixels) drawn whole."""
    observe_into(p.constants, p.image_constants, s, i, obs)


def observe_into(k: PongKernelConstants, g: PongImageConstants | None, s: Any, i: int,
                 obs: np.ndarray) -> None:
    """:func:`observe_state` into a vector, :func:`draw` into an image (of any channel
    axis)."""
    if g is not None:
        draw(g, s, i, obs.reshape(g.image_shape))
    else:
        observe_state(k, s, i, obs)


@rule
def observe_state(k: PongKernelConstants, s: Any, i: int, obs: np.ndarray) -> None:
    """``field * scale + offset`` in float32 (two roundings, as the numpy kernel)."""
    a, b = k.obs_scale, k.obs_offset
    obs[0] = s.ball_x[i] * a[0] + b[0]
    obs[1] = s.ball_y[i] * a[1] + b[1]
    obs[2] = s.ball_vx[i] * a[2] + b[2]
    obs[3] = s.ball_vy[i] * a[3] + b[3]
    obs[4] = s.left_y[i] * a[4] + b[4]
    obs[5] = s.right_y[i] * a[5] + b[5]


@rule
def fill_box(img: np.ndarray, top: int, left: int, size: tuple[int, int], value: Any) -> None:
    """Pixels ``[top, top + rows) x [left, left + cols)`` of ``img`` set to ``value`` (plain
    loops: numba compiles them in a fraction of a slice assignment's time)."""
    for r in range(top, top + size[0]):
        for c in range(left, left + size[1]):
            img[r, c] = value


@rule
def draw(k: PongImageConstants, s: Any, i: int, img: np.ndarray) -> None:
    """Background and walls, the ball, then the paddles over it (raster.py's placement:
    first pixel ``trunc(u * a + b)`` in float32, clipped to the court)."""
    background = k.background
    for r in range(background.shape[0]):
        for c in range(background.shape[1]):
            img[r, c] = background[r, c]
    col = clip(int(s.ball_x[i] * k.ball_a[0] + k.ball_b[0]), k.ball_lo[0], k.ball_hi[0])
    row = clip(int(s.ball_y[i] * k.ball_a[1] + k.ball_b[1]), k.ball_lo[1], k.ball_hi[1])
    fill_box(img, row, col, k.ball_size, k.ball_value)
    top = clip(int(s.left_y[i] * k.paddle_a + k.paddle_b), k.paddle_lo, k.paddle_hi)
    fill_box(img, top, k.paddle_cols[0], k.paddle_size, k.left_value)
    top = clip(int(s.right_y[i] * k.paddle_a + k.paddle_b), k.paddle_lo, k.paddle_hi)
    fill_box(img, top, k.paddle_cols[1], k.paddle_size, k.right_value)


if perenv.numba_available():  # compiled: the choices are made on the argument types
    from numba import types
    from numba.extending import overload

    @overload(paddle_actions, inline="always")
    def _paddle_actions_compiled(action):  # type: ignore[no-untyped-def]  # (numba: no hints)
        if isinstance(action, types.Integer):
            return lambda action: (action, 0)
        return lambda action: (action[0], action[1])

    @overload(observe_into, inline="always")
    def _observe_into_compiled(k, g, s, i, obs):  # type: ignore[no-untyped-def]
        if obs.ndim == 1:  # a vector: the state (one observation type per compiled loop)
            return lambda k, g, s, i, obs: observe_state(k, s, i, obs)
        return lambda k, g, s, i, obs: draw(g, s, i, obs.reshape(g.image_shape))
