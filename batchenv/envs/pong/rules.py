"""The rules of BatchPong, one function each, over a whole batch of games.

The step (:meth:`BatchPong._substep <batchenv.envs.pong.env.BatchPong>`) applies them in
order: :func:`move_paddle` (or :func:`track_ball` for the CPU paddle),
:func:`keep_on_court`, :func:`move_ball`; then, on the few games whose ball left the open
court (:func:`ball_off_court`), gathered into one block of fields, :func:`reflect_off_walls`
and :func:`return_balls`; then :func:`score_points` and :func:`serve_balls` after a point
(or :func:`end_rally`). Each is tested against its scalar statement in
``tests/test_pong_rules.py``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Annotated

import numpy as np

try:  # np.clip's ufunc, without np.clip's Python wrapper (cost: docs/performance.md)
    from numpy._core.umath import clip as _clip  # type: ignore[attr-defined]
except ImportError:  # numpy < 2
    from numpy.core.umath import clip as _clip  # type: ignore[no-redef]

from batchenv.random import BatchRandom
from batchenv.state import Field, Range, State, fields_view

__all__ = ["PongState", "PongParams", "PongConstants", "NOOP", "UP", "DOWN", "move_paddle",
           "track_ball", "keep_on_court", "move_ball", "ball_off_court", "reflect_off_walls",
           "return_balls", "score_points", "serve", "serve_balls", "serve_straight",
           "end_rally", "sticky_draw", "fill_fields", "take_fields", "put_fields", "OBS_FIELDS",
           "BALL_FIELDS", "SCORE_FIELDS", "INT_FIELDS", "PADDLE_FIELDS"]

NOOP, UP, DOWN = 0, 1, 2  # actions; y grows downwards, so UP moves a paddle to smaller y
_DIRECTION = np.array([0.0, -1.0, 1.0], dtype=np.float32)  # paddle direction per action
_S11 = np.array(11, dtype=np.uint64)  # serve(): a word's top 53 bits
_SERVE_ORDER = np.array([1, 0, 2])  # serve(): draws (side, row, vy) to fields (y, vx, vy)
OBS_FIELDS = ("ball_x", "ball_y", "ball_vx", "ball_vy", "left_y", "right_y")
# consecutive fields of one dtype, read and written as (k, n) blocks (fields_view)
BALL_FIELDS = OBS_FIELDS[:4]
_BALL_POSITION, _BALL_VELOCITY = BALL_FIELDS[:2], BALL_FIELDS[2:]
SCORE_FIELDS = ("score_left", "score_right")
INT_FIELDS = ("score_left", "score_right", "action_left", "action_right")
PADDLE_FIELDS = ("left_y", "right_y")



class PongState(State):
    """One game per row (``BatchPong.state_dtype`` is made from these annotations). The
    ranges are the court and the rules' bounds (``BatchPong.params``): every state inside
    them steps safely in both kernel forms (tests/test_pong_ranges.py)."""

    # column of the ball centre, [1, width-2] in play (check_state), up to frameskip *
    # ball_speed past that in a game's final state: [0, width-1] by default
    ball_x: Annotated[Field[np.float32], Range("ball_x_low", "ball_x_high")]
    # row of the ball centre, [0, top_wall], y downwards
    ball_y: Annotated[Field[np.float32], Range(0, "params.top_wall")]
    # cells per step, +-ball_speed
    ball_vx: Annotated[Field[np.float32], Range("-params.ball_speed", "params.ball_speed")]
    # cells per step, [-max_ball_vy, max_ball_vy]
    ball_vy: Annotated[Field[np.float32], Range("-params.max_ball_vy", "params.max_ball_vy")]
    # agent paddle centre row, [paddle_min, paddle_max]
    left_y: Annotated[Field[np.float32], Range("params.paddle_min", "params.paddle_max")]
    # CPU paddle centre row
    right_y: Annotated[Field[np.float32], Range("params.paddle_min", "params.paddle_max")]
    # points won by the agent
    score_left: Annotated[Field[np.int8], Range(0, "params.points_to_win")]
    # points won by the CPU
    score_right: Annotated[Field[np.int8], Range(0, "params.points_to_win")]
    # last action applied to the left paddle (sticky actions): Discrete(3)
    action_left: Annotated[Field[np.int8], Range(0, 2)]
    # same, right paddle (two_player, rally)
    action_right: Annotated[Field[np.int8], Range(0, 2)]


@dataclass(frozen=True)
class PongParams:
    """The rules' constants. Defaults follow the seed (batch_pong_poc; docs/pong.md, "The
    rules") unless marked otherwise; batchenv.reference.pong.Rules states them independently
    and tests/test_pong_reference.py pins these defaults to it."""

    width: int = 40  # court columns; paddles stand in columns 0 and width-1 (seed)
    height: int = 30  # court rows (seed)
    paddle_height: int = 5  # cells (seed)
    paddle_speed: float = 2.0  # cells per step of the agent's paddle (seed)
    cpu_speed: float = 1.0  # cells per step of the CPU paddle: slower than the ball can go
    ball_speed: float = 1.0  # |vx|, cells per step (seed)
    max_ball_vy: float = 3.0  # bound on |vy| after spin (seed)
    spin: float = 0.5  # on a hit, vy += spin * (ball_y - paddle centre) (seed: /2)
    serve_vy: float = 1.0  # serve: vy uniform in [-serve_vy, serve_vy]
    points_to_win: int = 21  # the game ends when a side reaches this score (Atari Pong)

    def __post_init__(self) -> None:
        def need(ok: bool, what: str) -> None:
            if not ok:
                raise ValueError(f"PongParams: {what} (got {self})")

        need(self.width >= 6, "width must be >= 6")
        need(2 <= self.paddle_height < self.height, "need 2 <= paddle_height < height")
        need(self.paddle_speed > 0 and self.cpu_speed > 0, "paddle speeds must be > 0")
        need(0 < self.ball_speed < 1 or self.ball_speed == 1,
             "ball_speed must be in (0, 1] so the ball cannot jump over a paddle column")
        need(0 <= self.serve_vy <= self.max_ball_vy < self.height - 1,
             "need 0 <= serve_vy <= max_ball_vy < height - 1 (one wall bounce per step)")
        need(self.spin >= 0, "spin must be >= 0")
        need(1 <= self.points_to_win <= 127, "points_to_win must be in [1, 127]")

    # derived geometry, in court cells (x to the right, y downwards, cell centres)
    @property
    def top_wall(self) -> float:
        """Largest ball y; the ball reflects off y = 0 and y = top_wall."""
        return float(self.height - 1)

    @property
    def paddle_min(self) -> float:
        """Smallest paddle centre: the paddle's top cell is row 0."""
        return (self.paddle_height - 1) / 2

    @property
    def paddle_max(self) -> float:
        return self.height - 1 - self.paddle_min

    @property
    def paddle_reach(self) -> float:
        """A paddle returns the ball when |ball_y - centre| <= paddle_reach."""
        return self.paddle_height / 2

    @property
    def left_plane(self) -> float:
        """The ball reflects off the left paddle at x = 1 (the paddle's column is 0)."""
        return 1.0

    @property
    def right_plane(self) -> float:
        return float(self.width - 2)

    @functools.cached_property
    def f32(self) -> PongConstants:
        """These parameters as the kernels use them (:class:`PongConstants`, made once)."""
        return PongConstants(self)


class PongConstants:
    """:class:`PongParams`' numbers as the rules use them: float32 0-d arrays (the state's
    dtype, so no operation changes precision; 0-d arrays rather than numpy scalars or
    Python floats because ufunc calls take them cheapest: ``docs/performance.md``), plus the
    derived constants of :func:`serve_balls` in float64."""

    def __init__(self, p: PongParams) -> None:
        def f(v: float | np.floating) -> np.ndarray:
            return np.array(v, dtype=np.float32)

        self.zero, self.one, self.minus_one = f(0), f(1), f(-1)
        self.paddle_min, self.paddle_max = f(p.paddle_min), f(p.paddle_max)
        self.cpu_speed, self.minus_cpu_speed = f(p.cpu_speed), f(-np.float32(p.cpu_speed))
        self.top = f(p.top_wall)
        self.top2 = f(np.float32(p.top_wall) + np.float32(p.top_wall))
        self.left_plane, self.right_plane = f(p.left_plane), f(p.right_plane)
        self.left_plane2, self.right_plane2 = f(2 * p.left_plane), f(2 * p.right_plane)
        self.reach, self.spin = f(p.paddle_reach), f(p.spin)
        self.max_vy, self.minus_max_vy = f(p.max_ball_vy), f(-np.float32(p.max_ball_vy))
        self.ball_speed = f(p.ball_speed)
        self.paddle_steps = _DIRECTION * np.float32(p.paddle_speed)  # NOOP, UP, DOWN
        self.serve_x = f(p.width / 2)
        # serve(), in float64: y, vx, vy from 53-bit integers (2**-53 folded in, exactly)
        self.serve_scales = np.array([[p.top_wall / 2 * 2.0**-53], [2.0**-53], [2.0**-52]])
        self.serve_offsets = np.array([[p.height / 4], [-0.5], [-1.0]])
        self.serve_vy = np.array(float(p.serve_vy))
        self.ball_speed64 = np.array(float(p.ball_speed))



def move_paddle(paddle_y: np.ndarray, action: np.ndarray, p: PongParams) -> None:
    """A controlled paddle moves ``paddle_speed`` cells up or down (then
    :func:`keep_on_court`)."""
    paddle_y += p.f32.paddle_steps[action]


def track_ball(paddle_y: np.ndarray, ball_y: np.ndarray, p: PongParams) -> None:
    """The CPU paddle moves towards the ball's row, at most ``cpu_speed`` cells per step
    (then :func:`keep_on_court`)."""
    k = p.f32
    move = ball_y - paddle_y
    paddle_y += _clip(move, k.minus_cpu_speed, k.cpu_speed, out=move)


def keep_on_court(paddles: np.ndarray, p: PongParams) -> None:
    """Paddles stay on the court: centres within [paddle_min, paddle_max] (both paddles in
    one call, as the ``(2, n)`` block of their fields)."""
    _clip(paddles, p.f32.paddle_min, p.f32.paddle_max, out=paddles)


def move_ball(s: PongState) -> None:
    """The ball moves by its velocity (x and y in one call: ``ball_x, ball_y`` and
    ``ball_vx, ball_vy`` are consecutive fields)."""
    position = fields_view(s, _BALL_POSITION)
    position += fields_view(s, _BALL_VELOCITY)


def ball_off_court(s: PongState, p: PongParams) -> np.ndarray:
    """Rows whose ball is past a wall (y < 0 or y > height-1) or has reached a paddle's
    plane (x < 1 or x > width-2): the rows :func:`reflect_off_walls` and
    :func:`return_balls` may change (the step gathers just those rows' fields)."""
    k = p.f32
    x, y = s.ball_x, s.ball_y
    return ((y < k.zero) | (y > k.top) | (x < k.left_plane) | (x > k.right_plane)).nonzero()[0]


def reflect_off_walls(bodies: np.ndarray, p: PongParams) -> None:
    """On a ``(4+, k)`` block of rows (x, y, vx, vy, ...): a ball past the top (y < 0) or
    bottom (y > height-1) wall is reflected back and its vy reversed."""
    k = p.f32
    y, vy = bodies[1], bodies[3]
    low, high = y < k.zero, y > k.top
    np.multiply(y, k.minus_one, out=y, where=low)  # (not np.negative: see take_fields)
    np.subtract(k.top2, y, out=y, where=high)
    np.multiply(vy, k.minus_one, out=vy, where=low | high)


def return_balls(bodies: np.ndarray, p: PongParams) -> np.ndarray:
    """On a ``(6, k)`` block of rows (x, y, vx, vy, left_y, right_y): a ball at a paddle's
    plane (x < 1 or x > width-2) is returned when the paddle is within reach
    (``|y - centre| <= paddle_height/2``): x reflected off the plane, vx reversed, and
    ``vy += spin * (y - centre)``, bounded by ``max_ball_vy``. Returns the block positions
    of the balls missed."""
    k = p.f32
    x, y, vx, vy = bodies[0], bodies[1], bodies[2], bodies[3]
    left = x < k.left_plane
    at_plane = left | (x > k.right_plane)
    offset = y - np.where(left, bodies[4], bodies[5])
    hit = np.abs(offset) <= k.reach
    hit &= at_plane
    np.subtract(np.where(left, k.left_plane2, k.right_plane2), x, out=x, where=hit)
    np.multiply(vx, k.minus_one, out=vx, where=hit)
    offset *= k.spin
    offset += vy
    _clip(offset, k.minus_max_vy, k.max_vy, out=vy, where=hit)
    missed = np.greater(at_plane, hit, out=at_plane)  # at a plane and not hit
    return missed.nonzero()[0]


def score_points(s: PongState, rows: np.ndarray, left_scored: np.ndarray, reward: np.ndarray,
                 terminated: np.ndarray, p: PongParams, accumulate: bool = True) -> None:
    """A missed ball is a point for the other side: at ``rows``, the left side scores where
    ``left_scored`` (the ball passed the right paddle), else the right side; +1 is added
    to the reward when the left side scores, -1 when the right side does (with
    ``accumulate=False``, written over a reward known to be 0). Reaching
    ``points_to_win`` ends the game."""
    k = p.f32
    points = np.where(left_scored, k.one, k.minus_one)
    if accumulate:
        reward[rows] += points
    else:
        reward[rows] = points
    scores = take_fields(s, SCORE_FIELDS, rows)  # (2, k) int8
    scores[0] += left_scored
    scores[1] += ~left_scored
    put_fields(s, SCORE_FIELDS, rows, scores)
    terminated[rows] = np.maximum(scores[0], scores[1]) >= p.points_to_win


def serve(s: PongState, rows: np.ndarray | slice, rng: BatchRandom, p: PongParams) -> None:
    """The ball restarts from the centre column at a row uniform in the middle half of the
    court, towards a random side, with vy uniform in [-serve_vy, serve_vy]
    (:func:`serve_balls` written into ``rows``)."""
    put_fields(s, BALL_FIELDS, rows, serve_balls(rng, p))


def serve_balls(rng: BatchRandom, p: PongParams) -> np.ndarray:
    """Served balls, one per row of ``rng``: a float64 ``(4, rows)`` block of x, y, vx, vy
    (exact in float32, or rounded once when written into the state)."""
    k = p.f32
    words = rng.draws(3)  # per row: side, row, vy, each u = (word >> 11) * 2**-53
    words >>= _S11
    ball = np.empty((4, words.shape[1]))
    ball[0] = k.serve_x
    body = ball[1:]
    # y = height/4 + u * (height-1)/2, vx = u - 1/2 (its sign), vy = (2u - 1) * serve_vy:
    # the formulas on u, bit for bit (the powers of two in the scales are exact)
    np.multiply(words[_SERVE_ORDER], k.serve_scales, out=body)
    body += k.serve_offsets
    ball[3] *= k.serve_vy
    np.copysign(k.ball_speed64, ball[2], out=ball[2])  # +ball_speed when u >= 1/2
    return ball


def fill_fields(s: PongState, names: tuple[str, ...], rows: np.ndarray | slice,
                value: float) -> None:
    """Set fields ``names`` (consecutive, one dtype) to ``value`` at ``rows``."""
    for field in fields_view(s, names):  # field by field: cheaper than one 2-D write
        field[rows] = value


def take_fields(s: PongState, names: tuple[str, ...], rows: np.ndarray) -> np.ndarray:
    """Copies of fields ``names`` (consecutive, one dtype) at ``rows``, as one C-contiguous
    ``(len(names), k)`` block: one gather instead of one per field."""
    # np.take, not ``view[:, rows]``: its rows are contiguous, and numpy 2.4.6's in-place
    # np.negative writes wrong values into float32 rows with a 16-byte stride (reproduced
    # here; related upstream: numpy/numpy#26775, the SIMD stride logic of negative), which
    # is also why the rules negate with ``np.multiply(v, -1, out=v)``
    return fields_view(s, names).take(rows, axis=1)


def put_fields(s: PongState, names: tuple[str, ...], rows: np.ndarray | slice,
               values: np.ndarray) -> None:
    """Write ``values`` (``(len(names), k)``) into fields ``names`` at ``rows``."""
    view = fields_view(s, names)
    if values.dtype == view.dtype:  # same dtype: field by field is the cheaper scatter
        for field, v in zip(view, values):
            field[rows] = v
    else:  # casting: one 2-D scatter is cheaper
        view[:, rows] = values


def serve_straight(s: PongState, rows: np.ndarray | slice, rng: BatchRandom,
                   p: PongParams) -> None:
    """The seed's serve (``rally``): the ball at the centre of the court (column width/2,
    the paddles' starting row), vy = 0, towards a random side (one draw per row)."""
    u = rng.random()
    s.ball_x[rows] = p.width / 2
    s.ball_y[rows] = p.top_wall / 2
    s.ball_vx[rows] = np.where(u < 0.5, np.float32(-p.ball_speed), np.float32(p.ball_speed))
    s.ball_vy[rows] = 0.0


def end_rally(rows: np.ndarray, reward: np.ndarray, terminated: np.ndarray) -> None:
    """``rally``: the step of a miss earns nothing (its +1 is taken back) and ends the
    episode."""
    reward[rows] -= np.float32(1)
    terminated[rows] = True


def sticky_draw(rng: BatchRandom, probability: float, paddles: int) -> np.ndarray:
    """Sticky actions: ``(rows, paddles)`` booleans, True where the given action is taken
    (probability ``1 - probability``), False where the last applied one repeats."""
    return rng.random((paddles,)) >= probability
