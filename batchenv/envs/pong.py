"""BatchPong: the seed's numpy Pong, batched: vs a scripted CPU paddle, two players, or the
seed's rally game; state, tile-map or Atari-like pixel observations."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

try:  # np.clip's ufunc, without np.clip's Python wrapper (1.3 µs saved per call)
    from numpy._core.umath import clip as _clip
except ImportError:  # numpy < 2
    from numpy.core.umath import clip as _clip

from batchenv.core import BatchEnv, StepBeforeResetError
from batchenv.envs._pong_raster import (
    PALETTE,
    Layout,
    Raster,
    pixel_layout,
    render_layout,
    tile_layout,
)
from batchenv.random import BatchRandom
from batchenv.state import State, fields_view, put_rows, take_rows

__all__ = ["BatchPong", "PongParams", "NOOP", "UP", "DOWN", "MODES", "OBS_TYPES",
           "CHANNEL_AXES"]

NOOP, UP, DOWN = 0, 1, 2  # actions; y grows downwards, so UP moves a paddle to smaller y
_DIRECTION = np.array([0.0, -1.0, 1.0], dtype=np.float32)  # paddle direction per action
_S11 = np.array(11, dtype=np.uint64)  # serve(): a word's top 53 bits
_SERVE_ORDER = np.array([1, 0, 2])  # serve(): draws (side, row, vy) to fields (y, vx, vy)
_OBS_FIELDS = ("ball_x", "ball_y", "ball_vx", "ball_vy", "left_y", "right_y")


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

    @functools.cached_property
    def f32(self) -> _Float32Constants:
        """The constants the kernels use, as float32 scalars (computed once)."""
        return _Float32Constants(self)


class _Float32Constants:
    """PongParams' numbers as float32 0-d arrays, made once: a ufunc call with a 0-d array
    operand costs 0.3-1 µs less than with a numpy scalar (and converting a Python float on
    every call costs 0.2 µs more)."""

    def __init__(self, p: PongParams) -> None:
        def f(v: float) -> np.ndarray:
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


class BatchPong(BatchEnv):
    """## Description

    Pong for thousands of games at once, on the 40 x 30 court of the *batch_pong_poc* seed:
    the ball moves one column per step, reflects off the top and bottom walls, and a paddle
    that returns it adds spin (``vy += 0.5 * (ball_y - paddle centre)``, bounded by 3).
    Three modes (``mode=``):

    * ``"cpu"`` (default): the agent's paddle (left) against a scripted CPU paddle (right)
      that follows the ball at one cell per step, slower than the ball can go: it is
      beatable.
    * ``"two_player"``: both paddles controlled (self-play); zero-sum reward from the left
      player's side. :meth:`mirror_obs` gives the right player's view.
    * ``"rally"``: the seed's game: both paddles controlled, the ball served straight from
      the centre, reward +1 for every step of rally and 0 on the step that ends it (the
      miss); one miss ends the episode. Tile-map observation by default.

    Each (sub-)step applies the rules in order: :func:`move_paddle` (agent, or both players),
    :func:`track_ball` (CPU), :func:`move_ball`, :func:`bounce_off_walls`,
    :func:`bounce_off_paddles`, then :func:`score_points` and :func:`serve` after a point
    (``cpu``, ``two_player``) or :func:`end_rally` (``rally``).

    ## Action Space

    ``"cpu"``: ``Discrete(3)``: 0 NOOP, 1 UP (towards row 0), 2 DOWN; the paddle moves
    ``paddle_speed`` = 2 cells and stays within the court. ``"two_player"`` and ``"rally"``:
    ``MultiDiscrete([3, 3])``, the actions of the left and the right paddle.

    With ``repeat_action_probability=p`` (sticky actions, as ALE v5), at every sub-step each
    paddle repeats the action it applied last with probability ``p`` instead of the one given
    (draws from the env's own random stream; after a reset the last action is NOOP).

    ## Observation Space

    ``obs_type="state"`` (default for ``cpu`` and ``two_player``): ``Box(float32, (6,))``,
    every entry scaled to about [-1, 1]:

    | index | quantity | raw range (cells, cells/step) | scaling |
    |---|---|---|---|
    | 0 | ball x | [0, width-1] | 2x/(width-1) - 1 |
    | 1 | ball y | [0, height-1] | 2y/(height-1) - 1 |
    | 2 | ball vx | [-ball_speed, ball_speed] | vx / ball_speed |
    | 3 | ball vy | [-max_ball_vy, max_ball_vy] | vy / max_ball_vy |
    | 4 | left (agent) paddle centre y | [2, height-3] | as ball y |
    | 5 | right (CPU) paddle centre y | [2, height-3] | as ball y |

    The space's bounds are the scaled raw ranges, computed in float32.

    ``obs_type="tiles"`` (default for ``rally``): the seed's tile map, ``Box(uint8, (height,
    width))`` = (30, 40): 0 empty, 1 paddle, 2 ball, one cell per ball/paddle cell (the ball
    in the cell nearest its centre; paddles drawn over the ball), clipped to the court.

    ``obs_type="pixels"``: an Atari-DQN-like grayscale frame, ``Box(uint8, pixel_shape)``,
    default (84, 84): walls above and below the court, paddles and ball as boxes, in the gray
    levels of ALE's Pong (background 87, walls and ball 236, paddles 147 and 148), so a CNN
    written for preprocessed Atari Pong takes it unchanged.

    ``channel_axis`` (tiles and pixels): ``None`` (default) gives ``(H, W)`` images with no
    channel axis, like ALE's ``obs_type="grayscale"`` and Gymnasium's
    ``AtariPreprocessing``; ``"last"`` gives ``(H, W, 1)``, the channel-last grayscale
    frame of SB3's ``AtariWrapper`` and ``AtariPreprocessing(grayscale_newaxis=True)``, which
    SB3's ``VecFrameStack`` stacks to ``(H, W, k)`` and ``VecTransposeImage`` turns into
    ``(k, H, W)``; ``"first"`` gives ``(1, H, W)``, PyTorch's and EnvPool's channel-first
    layout (EnvPool's Pong: ``(4, 84, 84)`` stacks). The same pixels in every layout.

    Tiles and pixels are updated in place (only the ball and paddles are redrawn); with
    ``copy=False`` the returned array is the env's read-only canvas.

    ## Rewards

    ``cpu`` and ``two_player``: +1 when the left paddle's side wins a point (the ball passes
    the right paddle), -1 when the right side does, 0 otherwise. ``rally``: +1 per step of
    rally, 0 on the step of the miss. With ``frameskip=k`` the rewards of the sub-steps are
    summed.

    ## Starting State

    Scores 0-0, both paddles centred. ``cpu``/``two_player``: the ball served from the
    centre column at a row uniform in the middle half of the court, towards a random side,
    with vy uniform in [-1, 1] (from the env's own random stream); the same serve follows
    every point. ``rally``: the ball at the centre of the court, vy = 0, towards a random
    side (so two idle paddles return it forever).

    ## Episode End

    Terminated when either side reaches ``points_to_win`` (21), or (``rally``) at the first
    miss. Truncated after ``max_episode_steps`` (default 10,000; random play ends a game
    in about 1,400 steps).

    ## Arguments

    ``BatchPong(num_envs, *, mode="cpu", obs_type=None, frameskip=1,
    repeat_action_probability=0.0, pixel_shape=(84, 84), channel_axis=None,
    render_scale=8, params=PongParams(...), **overrides, **BatchEnv options)``:

    * ``frameskip``: physics sub-steps per action (the action, made sticky or not, applies
      to each), rewards summed; an episode that ends at a sub-step stops there.
    * any field of :class:`PongParams` may be given as a keyword (``points_to_win=5``);
    * ``autoreset_mode``, ``max_episode_steps``, ``copy``, ``validate``, ``render_mode``
      (``"rgb_array"``: one (H, W, 3) frame per env, ``render_scale`` pixels per cell;
      ``"ansi"``: one string per env) as in :class:`~batchenv.BatchEnv`.
      :meth:`render_tiled` draws the first k envs in one image.

    Also ``gymnasium.make_vec("batchenv/Pong-v0", num_envs=N, mode=..., obs_type=...)``.

    ## Version History

    * v0: initial version (vs CPU, state observation); modes, tile and pixel observations,
      frameskip, sticky actions, rendering and ``channel_axis`` added without changing the
      defaults (so no new version: ``channel_axis=None`` keeps the ``(H, W)`` images that
      existing code stacks and feeds to its networks).
    """

    metadata = {"render_modes": ["rgb_array", "ansi"], "render_fps": 30}
    state_dtype = np.dtype([
        ("ball_x", np.float32),  # column of the ball centre, [0, width-1]
        ("ball_y", np.float32),  # row of the ball centre, [0, height-1], y downwards
        ("ball_vx", np.float32),  # cells per step, +-ball_speed
        ("ball_vy", np.float32),  # cells per step, [-max_ball_vy, max_ball_vy]
        ("left_y", np.float32),  # agent paddle centre row, [paddle_min, paddle_max]
        ("right_y", np.float32),  # CPU paddle centre row
        ("score_left", np.int8),  # points won by the agent
        ("score_right", np.int8),  # points won by the CPU
        ("action_left", np.int8),  # last action applied to the left paddle (sticky actions)
        ("action_right", np.int8),  # same, right paddle (two_player, rally)
    ])
    default_max_episode_steps = 10_000
    single_action_space = spaces.Discrete(3)

    def __init__(self, num_envs: int | None = None, *, params: PongParams | None = None,
                 mode: str = "cpu", obs_type: str | None = None, frameskip: int = 1,
                 repeat_action_probability: float = 0.0,
                 pixel_shape: tuple[int, int] = (84, 84), channel_axis: str | None = None,
                 render_scale: int = 8, **kwargs: Any) -> None:
        overrides = {k: kwargs.pop(k) for k in list(kwargs) if k in _PARAM_NAMES}
        self.params = dataclasses.replace(params or PongParams(), **overrides)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if obs_type is None:
            obs_type = "tiles" if mode == "rally" else "state"
        if obs_type not in OBS_TYPES:
            raise ValueError(f"obs_type must be one of {OBS_TYPES}, got {obs_type!r}")
        if isinstance(frameskip, bool) or not isinstance(frameskip, (int, np.integer)) \
                or frameskip < 1:
            raise ValueError(f"frameskip must be an int >= 1, got {frameskip!r}")
        if not 0.0 <= repeat_action_probability <= 1.0:
            raise ValueError(f"repeat_action_probability must be in [0, 1], got "
                             f"{repeat_action_probability!r}")
        if channel_axis not in CHANNEL_AXES:
            raise ValueError(f"channel_axis must be one of {CHANNEL_AXES}, got "
                             f"{channel_axis!r}")
        if channel_axis is not None and obs_type == "state":
            raise ValueError("channel_axis applies to image observations (obs_type='tiles' "
                             "or 'pixels'), not to obs_type='state'")
        if isinstance(render_scale, bool) or not isinstance(render_scale, (int, np.integer)) \
                or render_scale < 1:
            raise ValueError(f"render_scale must be an int >= 1, got {render_scale!r}")
        self.mode, self.obs_type, self.channel_axis = mode, obs_type, channel_axis
        self.frameskip = int(frameskip)
        self.repeat_action_probability = float(repeat_action_probability)
        self.render_scale = int(render_scale)
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
        self._obs_scale_col = self._obs_scale[:, None]
        self._obs_offset_col = self._obs_offset[:, None]
        court = (p.height, p.width)
        self.layout: Layout | None = None
        if obs_type == "state":
            self.single_observation_space = spaces.Box(
                self._scale(raw_low), self._scale(raw_high), dtype=np.float32)
        else:
            if obs_type == "tiles":
                self.layout = tile_layout(p.height, p.width, p.paddle_height)
                high = 2
            else:
                shape = tuple(int(v) for v in pixel_shape)
                if len(shape) != 2:
                    raise ValueError(f"pixel_shape must be (rows, cols), got {pixel_shape!r}")
                self.layout = pixel_layout(court, p.paddle_height, shape)
                high = 255
            image = (self.layout.height, self.layout.width)
            self._image_shape = image
            shape = {None: image, "last": (*image, 1), "first": (1, *image)}[channel_axis]
            self.single_observation_space = spaces.Box(0, high, shape, dtype=np.uint8)
        if mode != "cpu":
            self.single_action_space = spaces.MultiDiscrete([3, 3])
        super().__init__(num_envs, **kwargs)
        n = self.num_envs
        self._obs_tmp = self._obs_scale_rows = None
        self.observe_fills_out = obs_type == "state"  # tiles and pixels: drawn incrementally
        self._served: tuple[np.ndarray, np.ndarray] | None = None  # see _serve_missed
        if obs_type == "state":
            self._obs_tmp = np.zeros((6, n), dtype=np.float32)
            # the scales as whole rows: a plain multiply runs ~2x faster than a broadcast
            self._obs_scale_rows = np.repeat(self._obs_scale_col, n, axis=1)
        self._raster = None if self.layout is None else Raster(self.layout, n)
        if self._raster is not None and not self.copy:
            self._obs.flags.writeable = False  # the canvas: read-only for the caller
        self._ended = np.zeros(n, dtype=np.bool_) if self.frameskip > 1 else None
        self._render_raster: Raster | None = None

    def _scale(self, raw: np.ndarray) -> np.ndarray:
        return raw * self._obs_scale + self._obs_offset

    # ---------------------------------------------------------------- kernels
    def reset_envs(self, s: State, rng: BatchRandom) -> None:
        self.reset_rows(s, slice(None), rng)

    def reset_rows(self, s: State, rows: np.ndarray | slice, rng: BatchRandom) -> None:
        """Start states at ``rows`` of ``s``, written in place (the base class's sparse
        reset path): scores 0-0, last actions NOOP, paddles centred, and a serve."""
        p = self.params
        _fill(s, _INT_FIELDS, rows, 0)
        _fill(s, _PADDLE_FIELDS, rows, p.top_wall / 2)
        prepared, self._served = self._served, None
        if self.mode == "rally":
            serve_straight(s, rows, rng, p)
        elif prepared is not None and prepared[0] is rows:  # drawn by this step's kernel
            _put(s, _BALL_FIELDS, rows, prepared[1])
        else:
            serve(s, rows, rng, p)

    def step_envs(self, s: State, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        reward, terminated = self.reward_buffer, self.terminated_buffer  # no copies
        self._served = None
        reward.fill(0.0)
        terminated.fill(False)
        if self.frameskip == 1:
            self._substep(s, action, rng, reward, terminated)
        else:
            self._skip_frames(s, action, rng, reward, terminated)
        return reward, terminated

    def _substep(self, s: State, action: np.ndarray, rng: BatchRandom, reward: np.ndarray,
                 terminated: np.ndarray) -> np.ndarray | None:
        """One physics step of every row; returns the rows that missed the ball (or None)."""
        p = self.params
        left, right = self._applied_actions(s, action, rng)
        move_paddle(s.left_y, left, p)
        if right is None:
            track_ball(s.right_y, s.ball_y, p)
        else:
            move_paddle(s.right_y, right, p)
        keep_on_court(fields_view(s, _PADDLE_FIELDS), p)
        move_ball(s)
        if self.mode == "rally":
            reward += p.f32.one
        # walls and paddles, on the few rows whose ball left the open court (one gather,
        # one scatter): the same rules as bounce_off_walls and bounce_off_paddles
        rows = ball_off_court(s, p)
        if not rows.size:
            return None
        bodies = _take(s, _OBS_FIELDS, rows)
        reflect_off_walls(bodies, p)
        lost = return_balls(bodies, p)  # positions in the block of the balls missed
        missed = rows[lost]
        if missed.size:
            if self.mode == "rally":
                end_rally(missed, reward, terminated)
            else:
                left_scored = bodies[0, lost] > p.f32.right_plane
                score_points(s, missed, left_scored, reward, terminated, p,
                             accumulate=self.frameskip > 1)  # else reward is 0 here
                bodies[:4, lost] = self._serve_missed(s, missed, rng)  # served in the block
        _put(s, _BALL_FIELDS, rows, bodies[:4])
        return missed if missed.size else None

    def _serve_missed(self, s: State, missed: np.ndarray, rng: BatchRandom) -> np.ndarray:
        """The serves of the rows ``missed``. When this step will also reset rows (the base
        class's :attr:`resetting`, NEXT_STEP) and none of them missed, their serves are
        drawn in the same call (one draw instead of two: the same words, since nothing
        else draws for those rows in between) and kept for :meth:`reset_rows`."""
        resetting = self.resetting if self.frameskip == 1 else None
        if resetting is None or np.count_nonzero(s.awaiting_reset[missed]):
            return serve_balls(rng.at(missed), self.params)
        balls = serve_balls(rng.at(np.concatenate((missed, resetting))), self.params)
        self._served = (resetting, balls[:, len(missed):])
        return balls[:, :len(missed)]

    def _applied_actions(self, s: State, action: np.ndarray, rng: BatchRandom
                         ) -> tuple[np.ndarray, np.ndarray | None]:
        """The actions applied this sub-step: the given ones, or (sticky actions) the last
        applied ones with probability ``repeat_action_probability``."""
        if self.mode == "cpu":
            left, right = action, None
        else:
            left, right = action[:, 0], action[:, 1]
        if self.repeat_action_probability > 0.0:
            fresh = sticky_draw(rng, self.repeat_action_probability, 1 if right is None else 2)
            np.copyto(s.action_left, left, casting="unsafe", where=fresh[:, 0])
            left = s.action_left
            if right is not None:
                np.copyto(s.action_right, right, casting="unsafe", where=fresh[:, 1])
                right = s.action_right
        return left, right

    def _skip_frames(self, s: State, action: np.ndarray, rng: BatchRandom,
                     reward: np.ndarray, terminated: np.ndarray) -> None:
        """``frameskip`` sub-steps; a row whose episode ends at a sub-step keeps the state
        and reward it had then (rare: restored sparsely at the end)."""
        ended = self._ended
        ended.fill(False)
        snapshots = []
        last = self.frameskip - 1
        for sub in range(self.frameskip):
            missed = self._substep(s, action, rng, reward, terminated)
            if missed is not None and sub < last:
                new = missed[terminated[missed] & ~ended[missed]]
                if new.size:
                    ended[new] = True
                    snapshots.append((new, take_rows(s, new), reward[new]))
        for rows, snapshot, rows_reward in snapshots:
            put_rows(s, rows, snapshot)
            reward[rows] = rows_reward

    def observe(self, s: State, out: np.ndarray) -> None:
        if self._raster is None:
            # scale in the fields' (contiguous) order, then shift with one strided write into
            # out: 2x faster than any other order (benchmarked at 4096 and 65536)
            if len(s) == self.num_envs:
                tmp = np.multiply(fields_view(s, _OBS_FIELDS), self._obs_scale_rows,
                                  out=self._obs_tmp)
            else:
                tmp = np.multiply(fields_view(s, _OBS_FIELDS), self._obs_scale_col)
            np.add(tmp, self._obs_offset_col, out=out.T)
        elif out is self._obs and s is self.state:
            if out.flags.writeable:
                self._raster.update(s, self._images(out))
            else:  # copy=False: the canvas is read-only for the caller
                out.flags.writeable = True
                try:
                    self._raster.update(s, self._images(out))
                finally:
                    out.flags.writeable = False
        else:
            self._raster.draw(s, self._images(out))

    def _images(self, out: np.ndarray) -> np.ndarray:
        """``out`` as ``(rows, H, W)`` images: with a channel axis of 1, a view without it
        (the buffers are C-contiguous, so the reshape copies nothing)."""
        if self.channel_axis is None:
            return out
        if not out.flags.c_contiguous:  # reshape would copy: the drawing would be lost
            raise ValueError("observe: image buffers must be C-contiguous")
        return out.reshape(len(out), *self._image_shape)

    def __setstate__(self, d: dict[str, Any]) -> None:
        super().__setstate__(d)
        if self._raster is not None:  # an unpickled buffer may not own its memory
            self._obs = np.array(self._obs, copy=True)
            self._obs.flags.writeable = self.copy

    # ---------------------------------------------------------------- rendering
    def render_envs(self, s: State) -> np.ndarray | list[str]:
        """``rgb_array``: an array of ``len(s)`` frames (uint8 (H, W, 3)); ``ansi``: one
        string per env."""
        if self.render_mode == "ansi":
            return ansi_frames(s, self.params)
        return self.frames(s)

    def frames(self, s: State | None = None) -> np.ndarray:
        """RGB frames of the rows of ``s`` (default: every env), ``(n, H, W, 3)`` uint8 with
        ``H = (height + 2) * render_scale``, ``W = width * render_scale``."""
        s = self.state if s is None else s
        if self._render_raster is None:
            p = self.params
            self._render_raster = Raster(
                render_layout((p.height, p.width), p.paddle_height, self.render_scale), 1)
        lay = self._render_raster.layout
        labels = np.empty((len(s), lay.height, lay.width), dtype=np.uint8)
        self._render_raster.draw(s, labels)
        return PALETTE[labels]

    def render_tiled(self, k: int | None = None, cols: int | None = None,
                     gap: int = 4) -> np.ndarray:
        """One RGB image of the first ``k`` envs (default: all, at most 64), laid out in
        env order row by row on a grid of ``cols`` columns (default: about square),
        separated by ``gap`` black pixels. Works with any ``render_mode``."""
        self._check_open()
        if self._needs_reset:
            raise StepBeforeResetError("render_tiled() called before reset()")
        k = min(self.num_envs, 64) if k is None else int(k)
        if not 1 <= k <= self.num_envs:
            raise ValueError(f"k must be in [1, num_envs={self.num_envs}], got {k}")
        cols = int(np.ceil(np.sqrt(k))) if cols is None else int(cols)
        if cols < 1:
            raise ValueError(f"cols must be >= 1, got {cols}")
        frames = self.frames(take_rows(self.state, np.arange(k)))
        return tile_images(frames, cols, gap)

    @staticmethod
    def mirror_obs(obs: np.ndarray, obs_type: str = "state",
                   channel_axis: str | None = None) -> np.ndarray:
        """The right player's view of observations (a batch): the court flipped left-right,
        so the right paddle appears as the left one (for self-play in ``two_player``). For
        pixels the two paddles' gray levels are swapped too. ``channel_axis``: as the env's
        (images with a channel axis last are flipped along the axis before it)."""
        if channel_axis not in CHANNEL_AXES:
            raise ValueError(f"channel_axis must be one of {CHANNEL_AXES}, got "
                             f"{channel_axis!r}")
        if channel_axis == "last" and obs_type != "state":
            return BatchPong.mirror_obs(obs[..., 0], obs_type)[..., None]
        if obs_type == "state":
            out = np.array(obs, dtype=np.float32, copy=True)
            out[..., 0] *= -1
            out[..., 2] *= -1
            out[..., 4], out[..., 5] = obs[..., 5], obs[..., 4]
            return out
        if obs_type == "pixels":
            return _SWAP_PADDLE_LEVELS[obs[..., ::-1]]
        if obs_type == "tiles":
            return np.ascontiguousarray(obs[..., ::-1])
        raise ValueError(f"obs_type must be one of {OBS_TYPES}, got {obs_type!r}")


MODES = ("cpu", "two_player", "rally")
_PIXEL_LEVELS = pixel_layout((30, 40), 5)
_SWAP_PADDLE_LEVELS = np.arange(256, dtype=np.uint8)
_SWAP_PADDLE_LEVELS[[_PIXEL_LEVELS.left_paddle, _PIXEL_LEVELS.right_paddle]] = [
    _PIXEL_LEVELS.right_paddle, _PIXEL_LEVELS.left_paddle]
OBS_TYPES = ("state", "tiles", "pixels")
#: Where image observations put their channel axis (of length 1): None, no channel axis
#: (ALE's grayscale frames, Gymnasium's AtariPreprocessing); "last", (H, W, 1) (SB3's
#: AtariWrapper, AtariPreprocessing(grayscale_newaxis=True)); "first", (1, H, W) (PyTorch,
#: EnvPool).
CHANNEL_AXES = (None, "last", "first")


_PARAM_NAMES = {f.name for f in dataclasses.fields(PongParams)}


# -------------------------------------------------------------------- the rules
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


def move_ball(s: State) -> None:
    """The ball moves by its velocity (x and y in one call: ``ball_x, ball_y`` and
    ``ball_vx, ball_vy`` are consecutive fields)."""
    position = fields_view(s, _BALL_POSITION)
    position += fields_view(s, _BALL_VELOCITY)


def ball_off_court(s: State, p: PongParams) -> np.ndarray:
    """Rows whose ball is past a wall (y < 0 or y > height-1) or has reached a paddle's
    plane (x < 1 or x > width-2): the rows :func:`reflect_off_walls` and
    :func:`return_balls` may change."""
    k = p.f32
    x, y = s.ball_x, s.ball_y
    return ((y < k.zero) | (y > k.top) | (x < k.left_plane) | (x > k.right_plane)).nonzero()[0]


def reflect_off_walls(bodies: np.ndarray, p: PongParams) -> None:
    """On a ``(4+, k)`` block of rows (x, y, vx, vy, ...): a ball past the top (y < 0) or
    bottom (y > height-1) wall is reflected back and its vy reversed."""
    k = p.f32
    y, vy = bodies[1], bodies[3]
    low, high = y < k.zero, y > k.top
    np.multiply(y, k.minus_one, out=y, where=low)  # (not np.negative: see _take)
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


def bounce_off_walls(s: State, p: PongParams) -> None:
    """A ball past the top (y < 0) or bottom (y > height-1) wall is reflected back
    (:func:`reflect_off_walls` on the state)."""
    k = p.f32
    rows = ((s.ball_y < k.zero) | (s.ball_y > k.top)).nonzero()[0]
    if rows.size:
        bodies = _take(s, _BALL_FIELDS, rows)
        reflect_off_walls(bodies, p)
        _put(s, _BALL_FIELDS, rows, bodies)


def ball_at_paddle_columns(s: State, p: PongParams) -> np.ndarray:
    """Rows whose ball has reached a paddle's plane (x < 1 or x > width-2) this step."""
    return (s.ball_x < p.f32.left_plane) | (s.ball_x > p.f32.right_plane)


def bounce_off_paddles(s: State, rows: np.ndarray, p: PongParams) -> np.ndarray:
    """Of ``rows`` (balls at a paddle plane), a paddle within reach returns the ball
    (:func:`return_balls` on the state). Returns the rows whose ball was missed."""
    bodies = _take(s, _OBS_FIELDS, rows)
    missed = rows[return_balls(bodies, p)]
    _put(s, _BALL_FIELDS, rows, bodies[:4])
    return missed


def score_points(s: State, rows: np.ndarray, left_scored: np.ndarray, reward: np.ndarray,
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
    scores = _take(s, _SCORE_FIELDS, rows)  # (2, k) int8
    scores[0] += left_scored
    scores[1] += ~left_scored
    _put(s, _SCORE_FIELDS, rows, scores)
    terminated[rows] = np.maximum(scores[0], scores[1]) >= p.points_to_win


def serve(s: State, rows: np.ndarray | slice, rng: BatchRandom, p: PongParams) -> None:
    """The ball restarts from the centre column at a row uniform in the middle half of the
    court, towards a random side, with vy uniform in [-serve_vy, serve_vy]
    (:func:`serve_balls` written into ``rows``)."""
    _put(s, _BALL_FIELDS, rows, serve_balls(rng, p))


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


# ------------------------------------------------------------------- kernel helpers
_BALL_FIELDS = _OBS_FIELDS[:4]
_BALL_POSITION, _BALL_VELOCITY = _BALL_FIELDS[:2], _BALL_FIELDS[2:]
_SCORE_FIELDS = ("score_left", "score_right")
_INT_FIELDS = ("score_left", "score_right", "action_left", "action_right")
_PADDLE_FIELDS = ("left_y", "right_y")


def _fill(s: State, names: list[str], rows: np.ndarray | slice, value: float) -> None:
    if isinstance(s, State):
        for field in fields_view(s, names):  # field by field: ~1.7x cheaper than 2-D
            field[rows] = value
    else:
        for name in names:
            getattr(s, name)[rows] = value


def _take(s: State, names: list[str], rows: np.ndarray | slice) -> np.ndarray:
    """Copies of fields ``names`` (consecutive, one dtype) at ``rows``, as one
    ``(len(names), k)`` array (one gather instead of one per field)."""
    if isinstance(s, State):
        # np.take gives C-contiguous rows (``view[:, rows]`` gives strided ones, and numpy
        # 2.4's in-place np.negative is wrong on 4-byte items with a 16-byte stride)
        return fields_view(s, names).take(rows, axis=1)  # the method: no Python wrapper
    return np.stack([getattr(s, name)[rows] for name in names])  # any object of fields


def _put(s: State, names: list[str], rows: np.ndarray | slice, values: np.ndarray) -> None:
    """Write ``values`` (``(len(names), k)``) into fields ``names`` at ``rows``."""
    if isinstance(s, State):
        view = fields_view(s, names)
        if values.dtype == view.dtype:  # field by field: ~2x cheaper than one 2-D scatter
            for field, v in zip(view, values):
                field[rows] = v
        else:  # casting: one 2-D scatter is cheaper
            view[:, rows] = values
    else:
        for name, v in zip(names, values):
            getattr(s, name)[rows] = v


def serve_straight(s: State, rows: np.ndarray | slice, rng: BatchRandom,
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


def ansi_frames(s: State, p: PongParams) -> list[str]:
    """Text frames: the tile map with ``o`` the ball, ``#`` paddles, walls of ``-``, and
    the score line on top."""
    tiles = np.empty((len(s), p.height, p.width), dtype=np.uint8)
    Raster(tile_layout(p.height, p.width, p.paddle_height), 1).draw(s, tiles)
    chars = np.array([" ", "#", "o"])[tiles]
    wall = "+" + "-" * p.width + "+"
    out = []
    for i in range(len(s)):
        rows = ["|" + "".join(r) + "|" for r in chars[i]]
        head = f" {int(s.score_left[i]):>3} : {int(s.score_right[i]):<3}".center(p.width + 2)
        out.append("\n".join([head, wall, *rows, wall]) + "\n")
    return out


def tile_images(frames: np.ndarray, cols: int, gap: int = 2) -> np.ndarray:
    """Lay ``frames`` ``(k, H, W, C)`` out row by row on a grid of ``cols`` columns,
    ``gap`` pixels (value 0) between them: ``(rows*H + (rows-1)*gap, cols*W + (cols-1)*gap,
    C)``."""
    k, h, w, c = frames.shape
    cols = min(cols, k)
    rows = -(-k // cols)
    grid = np.zeros((rows, h + gap, cols, w + gap, c), dtype=frames.dtype)
    padded = np.zeros((rows * cols, h, w, c), dtype=frames.dtype)
    padded[:k] = frames
    grid[:, :h, :, :w] = padded.reshape(rows, cols, h, w, c).transpose(0, 2, 1, 3, 4)
    return grid.reshape(rows * (h + gap), cols * (w + gap), c)[:rows * (h + gap) - gap,
                                                               :cols * (w + gap) - gap]
