"""BatchPong: the seed's numpy Pong, batched, against a scripted CPU paddle."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from batchenv.core import BatchEnv
from batchenv.random import BatchRandom
from batchenv.state import State, fields_view

__all__ = ["BatchPong", "PongParams", "NOOP", "UP", "DOWN"]

NOOP, UP, DOWN = 0, 1, 2  # actions; y grows downwards, so UP moves a paddle to smaller y
_DIRECTION = np.array([0.0, -1.0, 1.0], dtype=np.float32)  # paddle direction per action
_OBS_FIELDS = ["ball_x", "ball_y", "ball_vx", "ball_vy", "left_y", "right_y"]


@dataclass(frozen=True)
class PongParams:
    """The rules' constants. Defaults follow the seed (batch_pong_poc, DESIGN.md section 2)
    unless marked otherwise."""

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


class BatchPong(BatchEnv):
    """## Description

    Pong for thousands of games at once: the agent's paddle (left) against a scripted CPU
    paddle (right) that follows the ball at a limited speed, on the 40 x 30 court of the
    *batch_pong_poc* seed. The ball moves one column per step; a paddle that returns it adds
    spin (``vy += 0.5 * (ball_y - paddle centre)``, bounded by 3), which the CPU, moving one
    cell per step, cannot always follow: it is beatable.

    Each step applies the rules in order: :func:`move_paddle` (agent),
    :func:`track_ball` (CPU), :func:`move_ball`, :func:`bounce_off_walls`,
    :func:`bounce_off_paddles`, :func:`score_points` (and :func:`serve` after a point).

    ## Action Space

    ``Discrete(3)``: 0 NOOP, 1 UP (towards row 0), 2 DOWN; the paddle moves
    ``paddle_speed`` = 2 cells and stays within the court.

    ## Observation Space

    ``Box(float32, (6,))``, every entry scaled to about [-1, 1]:

    | index | quantity | raw range (cells, cells/step) | scaling |
    |---|---|---|---|
    | 0 | ball x | [0, width-1] | 2x/(width-1) - 1 |
    | 1 | ball y | [0, height-1] | 2y/(height-1) - 1 |
    | 2 | ball vx | [-ball_speed, ball_speed] | vx / ball_speed |
    | 3 | ball vy | [-max_ball_vy, max_ball_vy] | vy / max_ball_vy |
    | 4 | agent paddle centre y | [2, height-3] | as ball y |
    | 5 | CPU paddle centre y | [2, height-3] | as ball y |

    The space's bounds are the scaled raw ranges, computed in float32.

    ## Rewards

    +1 when the agent wins a point (the ball passes the CPU paddle), -1 when the CPU does,
    0 otherwise.

    ## Starting State

    Scores 0-0, both paddles centred, the ball served from the centre column at a row
    uniform in the middle half of the court, towards a random side, with vy uniform in
    [-1, 1] (from the env's own random stream). The same serve follows every point.

    ## Episode End

    Terminated when either side reaches ``points_to_win`` (21). Truncated after
    ``max_episode_steps`` (default 10,000; random play ends a game in about 1,000 steps).

    ## Arguments

    ``BatchPong(num_envs, *, params=PongParams(...), **overrides, **BatchEnv options)``:
    any field of :class:`PongParams` may be given as a keyword (``points_to_win=5``);
    ``autoreset_mode``, ``max_episode_steps``, ``copy``, ``validate``, ``render_mode`` as in
    :class:`~batchenv.BatchEnv`. Also ``gymnasium.make_vec("batchenv/Pong-v0", num_envs=N)``.

    ## Version History

    * v0: initial version (vs CPU, state observation).
    """

    metadata = {"render_modes": []}
    state_dtype = np.dtype([
        ("ball_x", np.float32),  # column of the ball centre, [0, width-1]
        ("ball_y", np.float32),  # row of the ball centre, [0, height-1], y downwards
        ("ball_vx", np.float32),  # cells per step, +-ball_speed
        ("ball_vy", np.float32),  # cells per step, [-max_ball_vy, max_ball_vy]
        ("left_y", np.float32),  # agent paddle centre row, [paddle_min, paddle_max]
        ("right_y", np.float32),  # CPU paddle centre row
        ("score_left", np.int8),  # points won by the agent
        ("score_right", np.int8),  # points won by the CPU
    ])
    default_max_episode_steps = 10_000
    single_action_space = spaces.Discrete(3)

    def __init__(self, num_envs: int | None = None, *, params: PongParams | None = None,
                 **kwargs: Any) -> None:
        overrides = {k: kwargs.pop(k) for k in list(kwargs) if k in _PARAM_NAMES}
        self.params = dataclasses.replace(params or PongParams(), **overrides)
        p = self.params
        raw_low = np.array([0, 0, -p.ball_speed, -p.max_ball_vy, p.paddle_min, p.paddle_min],
                           dtype=np.float32)
        raw_high = np.array([p.width - 1, p.top_wall, p.ball_speed, p.max_ball_vy,
                             p.paddle_max, p.paddle_max], dtype=np.float32)
        mid = p.top_wall / 2
        centre = np.array([(p.width - 1) / 2, mid, 0, 0, mid, mid])
        half_range = np.array([(p.width - 1) / 2, mid, p.ball_speed, p.max_ball_vy, mid, mid])
        self._obs_scale = (1 / half_range).astype(np.float32)
        self._obs_offset = (-centre / half_range).astype(np.float32)
        self.single_observation_space = spaces.Box(
            self._scale(raw_low), self._scale(raw_high), dtype=np.float32)
        super().__init__(num_envs, **kwargs)
        self._step_reward = np.zeros(self.num_envs, dtype=np.float32)
        self._step_terminated = np.zeros(self.num_envs, dtype=np.bool_)

    def _scale(self, raw: np.ndarray) -> np.ndarray:
        return raw * self._obs_scale + self._obs_offset

    # ---------------------------------------------------------------- kernels
    def reset_envs(self, s: State, rng: BatchRandom) -> None:
        p = self.params
        s.score_left[:] = 0
        s.score_right[:] = 0
        s.left_y[:] = p.top_wall / 2
        s.right_y[:] = p.top_wall / 2
        serve(s, slice(None), rng, p)

    def step_envs(self, s: State, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        p = self.params
        move_paddle(s.left_y, action, p)
        track_ball(s.right_y, s.ball_y, p)
        move_ball(s)
        bounce_off_walls(s, p)
        reward, terminated = self._step_reward, self._step_terminated
        reward.fill(0.0)
        terminated.fill(False)
        at_paddle = np.flatnonzero(ball_at_paddle_columns(s, p))
        if at_paddle.size:
            missed = bounce_off_paddles(s, at_paddle, p)
            if missed.size:
                score_points(s, missed, reward, terminated, p)
                serve(s, missed, rng.at(missed), p)
        return reward, terminated

    def observe(self, s: State, out: np.ndarray) -> None:
        np.multiply(fields_view(s, _OBS_FIELDS).T, self._obs_scale, out=out)
        out += self._obs_offset


_PARAM_NAMES = {f.name for f in dataclasses.fields(PongParams)}


# -------------------------------------------------------------------- the rules
def move_paddle(paddle_y: np.ndarray, action: np.ndarray, p: PongParams) -> None:
    """The agent's paddle moves ``paddle_speed`` cells up or down, staying on court."""
    paddle_y += _DIRECTION[action] * np.float32(p.paddle_speed)
    np.clip(paddle_y, np.float32(p.paddle_min), np.float32(p.paddle_max), out=paddle_y)


def track_ball(paddle_y: np.ndarray, ball_y: np.ndarray, p: PongParams) -> None:
    """The CPU paddle moves towards the ball's row, at most ``cpu_speed`` cells per step."""
    speed = np.float32(p.cpu_speed)
    paddle_y += np.clip(ball_y - paddle_y, -speed, speed)
    np.clip(paddle_y, np.float32(p.paddle_min), np.float32(p.paddle_max), out=paddle_y)


def move_ball(s: State) -> None:
    """The ball moves by its velocity."""
    s.ball_x += s.ball_vx
    s.ball_y += s.ball_vy


def bounce_off_walls(s: State, p: PongParams) -> None:
    """A ball past the top (y < 0) or bottom (y > height-1) wall is reflected back."""
    top = np.float32(p.top_wall)
    out = np.flatnonzero((s.ball_y < 0) | (s.ball_y > top))
    if out.size:
        y = s.ball_y[out]
        s.ball_y[out] = np.where(y < 0, -y, (top + top) - y)
        s.ball_vy[out] = -s.ball_vy[out]


def ball_at_paddle_columns(s: State, p: PongParams) -> np.ndarray:
    """Rows whose ball has reached a paddle's plane (x < 1 or x > width-2) this step."""
    return (s.ball_x < np.float32(p.left_plane)) | (s.ball_x > np.float32(p.right_plane))


def bounce_off_paddles(s: State, rows: np.ndarray, p: PongParams) -> np.ndarray:
    """Of ``rows`` (balls at a paddle plane), a paddle within reach returns the ball: x is
    reflected off the plane, vx reversed, and vy gets spin from where the ball hit.
    Returns the rows whose ball was missed."""
    x = s.ball_x[rows]
    left = x < np.float32(p.left_plane)
    offset = s.ball_y[rows] - np.where(left, s.left_y[rows], s.right_y[rows])
    hit = np.abs(offset) <= np.float32(p.paddle_reach)
    returned = rows[hit]
    if returned.size:
        plane = np.where(left[hit], np.float32(2 * p.left_plane),
                         np.float32(2 * p.right_plane))
        s.ball_x[returned] = plane - x[hit]
        s.ball_vx[returned] = -s.ball_vx[returned]
        limit = np.float32(p.max_ball_vy)
        s.ball_vy[returned] = np.clip(
            s.ball_vy[returned] + offset[hit] * np.float32(p.spin), -limit, limit)
    return rows[~hit]


def score_points(s: State, rows: np.ndarray, reward: np.ndarray, terminated: np.ndarray,
                 p: PongParams) -> None:
    """A missed ball is a point for the other side (+1 reward when the agent scores, -1 when
    the CPU does); reaching ``points_to_win`` ends the game."""
    agent_scored = s.ball_x[rows] > np.float32(p.right_plane)
    reward[rows] = np.where(agent_scored, np.float32(1), np.float32(-1))
    s.score_left[rows] += agent_scored
    s.score_right[rows] += ~agent_scored
    terminated[rows] = np.maximum(s.score_left[rows], s.score_right[rows]) >= p.points_to_win


def serve(s: State, rows: np.ndarray | slice, rng: BatchRandom, p: PongParams) -> None:
    """The ball restarts from the centre column at a row uniform in the middle half of the
    court, towards a random side, with vy uniform in [-serve_vy, serve_vy]."""
    u = rng.random((3,))  # per row: side, row, vy (float64, cast once to float32)
    s.ball_x[rows] = p.width / 2
    s.ball_y[rows] = (p.height / 4 + u[:, 1] * (p.top_wall / 2)).astype(np.float32)
    s.ball_vx[rows] = np.where(u[:, 0] < 0.5, np.float32(-p.ball_speed),
                               np.float32(p.ball_speed))
    s.ball_vy[rows] = ((2 * u[:, 2] - 1) * p.serve_vy).astype(np.float32)
