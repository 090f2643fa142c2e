"""BatchPong: the seed's numpy Pong, batched: vs a scripted CPU paddle, two players, or the
seed's rally game; state, tile-map or Atari-like pixel observations. The rules are in
:mod:`batchenv.envs.pong.rules` (and, as per-env kernels, :mod:`batchenv.envs.pong.per_env`),
the drawing in :mod:`batchenv.envs.pong.raster`."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from batchenv.core import BatchEnv, field_outside
from batchenv.envs.pong import per_env
from batchenv.envs.pong.raster import (
    PALETTE,
    Layout,
    Raster,
    ansi_frames,
    pixel_layout,
    render_layout,
    tile_layout,
)
from batchenv.envs.pong.rules import (
    BALL_FIELDS,
    DOWN,
    INT_FIELDS,
    NOOP,
    OBS_FIELDS,
    PADDLE_FIELDS,
    UP,
    PongParams,
    PongState,
    ball_off_court,
    end_rally,
    fill_fields,
    keep_on_court,
    move_ball,
    move_paddle,
    put_fields,
    reflect_off_walls,
    return_balls,
    score_points,
    serve,
    serve_balls,
    serve_straight,
    sticky_draw,
    take_fields,
    track_ball,
)
from batchenv.random import BatchRandom
from batchenv.rendering import render_tiled
from batchenv.state import fields_view, put_rows, take_rows
from batchenv.validation import is_int

__all__ = ["BatchPong", "PongParams", "NOOP", "UP", "DOWN", "MODES", "OBS_TYPES",
           "CHANNEL_AXES"]


def _check_arguments(mode: str, obs_type: str, frameskip: int,
                     repeat_action_probability: float, channel_axis: str | None,
                     render_scale: int) -> None:
    """Refuse BatchPong's own arguments outside their forms (``obs_type`` given or
    defaulted)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if obs_type not in OBS_TYPES:
        raise ValueError(f"obs_type must be one of {OBS_TYPES}, got {obs_type!r}")
    if not is_int(frameskip) or frameskip < 1:
        raise ValueError(f"frameskip must be an int >= 1, got {frameskip!r}")
    if not 0.0 <= repeat_action_probability <= 1.0:
        raise ValueError(f"repeat_action_probability must be in [0, 1], got "
                         f"{repeat_action_probability!r}")
    if channel_axis not in CHANNEL_AXES:
        raise ValueError(f"channel_axis must be one of {CHANNEL_AXES}, got {channel_axis!r}")
    if channel_axis is not None and obs_type == "state":
        raise ValueError("channel_axis applies to image observations (obs_type='tiles' "
                         "or 'pixels'), not to obs_type='state'")
    if not is_int(render_scale) or render_scale < 1:
        raise ValueError(f"render_scale must be an int >= 1, got {render_scale!r}")


class BatchPong(BatchEnv[PongState]):
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

    Each (sub-)step applies the rules of :mod:`batchenv.envs.pong.rules` in order:
    :func:`move_paddle` (agent, or both players), :func:`track_ball` (CPU),
    :func:`keep_on_court`, :func:`move_ball`, :func:`reflect_off_walls`,
    :func:`return_balls`, then :func:`score_points` and :func:`serve_balls` after a point
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
    * ``kernels``: ``"numpy"`` (the vectorized rules of :mod:`~batchenv.envs.pong.rules`),
      ``"numba"`` (the per-env rules of :mod:`~batchenv.envs.pong.per_env`, compiled into
      one loop with the base class's per-step work; ``num_threads=`` splits it), ``"python"``
      (the same per-env rules as a Python loop: slow, for a debugger) or ``"auto"``
      (default: ``"numpy"``; ``"numba"`` is the faster form for the state observation and
      for images with the default copy, but not for ``copy=False`` images, and compiles its
      loops in the first process on a machine, see docs/pong.md, "Kernels"). Every form
      gives the same results, bit for bit: states, random streams, observations, rewards,
      flags.
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
    state_type = PongState
    default_max_episode_steps = 10_000
    single_action_space = spaces.Discrete(3)
    #: The per-env kernels read ``p.constants`` and ``p.image_constants``
    #: (:func:`per_env.kernel_constants`, :func:`per_env.image_layout_constants`).
    kernel_params = ("constants", "image_constants")
    reset_env = staticmethod(per_env.reset_env)
    step_env = staticmethod(per_env.step_env)
    observe_env = staticmethod(per_env.observe_env)

    def __init__(self, num_envs: int | None = None, *, params: PongParams | None = None,
                 mode: str = "cpu", obs_type: str | None = None, frameskip: int = 1,
                 repeat_action_probability: float = 0.0,
                 pixel_shape: tuple[int, int] = (84, 84), channel_axis: str | None = None,
                 render_scale: int = 8, **kwargs: Any) -> None:
        overrides = {k: kwargs.pop(k) for k in list(kwargs) if k in _PARAM_NAMES}
        self.params = dataclasses.replace(params or PongParams(), **overrides)
        if obs_type is None:
            obs_type = "tiles" if mode == "rally" else "state"
        _check_arguments(mode, obs_type, frameskip, repeat_action_probability, channel_axis,
                         render_scale)
        self.mode, self.obs_type, self.channel_axis = mode, obs_type, channel_axis
        self.frameskip = int(frameskip)
        self.repeat_action_probability = float(repeat_action_probability)
        self.render_scale = int(render_scale)
        self._set_observation_scale()
        self._set_observation_space(pixel_shape)
        if mode != "cpu":
            self.single_action_space = spaces.MultiDiscrete([3, 3])  # type: ignore[assignment]
        self.constants = per_env.kernel_constants(self)
        self.image_constants = per_env.image_layout_constants(self)
        if kwargs.get("kernels", "auto") == "auto":
            # the numpy kernels: the per-env ones are faster for the state observation and
            # for images with a copy, not everywhere, and the first process on a machine
            # compiles them (docs/pong.md, "Kernels"); kernels="numba" asks for them
            kwargs["kernels"] = "numpy"
        super().__init__(num_envs, **kwargs)
        self._allocate_step_buffers()

    def _set_observation_scale(self) -> None:
        """The state observation's affine map, ``raw * scale + offset``: each variable's
        range onto [-1, 1]."""
        p = self.params
        mid = p.top_wall / 2
        centre = np.array([(p.width - 1) / 2, mid, 0, 0, mid, mid])
        half_range = np.array([(p.width - 1) / 2, mid, p.ball_speed, p.max_ball_vy, mid, mid])
        self._obs_scale = (1 / half_range).astype(np.float32)
        self._obs_offset = (-centre / half_range).astype(np.float32)
        self._obs_scale_col = self._obs_scale[:, None]
        self._obs_offset_col = self._obs_offset[:, None]

    def _set_observation_space(self, pixel_shape: tuple[int, int]) -> None:
        """``single_observation_space`` of ``obs_type``, and the image ``layout`` (None for
        the state observation)."""
        p = self.params
        self.layout: Layout | None = None
        if self.obs_type == "state":
            raw_low = np.array([0, 0, -p.ball_speed, -p.max_ball_vy, p.paddle_min,
                                p.paddle_min], dtype=np.float32)
            raw_high = np.array([p.width - 1, p.top_wall, p.ball_speed, p.max_ball_vy,
                                 p.paddle_max, p.paddle_max], dtype=np.float32)
            self.single_observation_space = spaces.Box(
                self._scale(raw_low), self._scale(raw_high), dtype=np.float32)
            return
        if self.obs_type == "tiles":
            self.layout = tile_layout(p.height, p.width, p.paddle_height)
            high = 2
        else:
            shape = tuple(int(v) for v in pixel_shape)
            if len(shape) != 2:
                raise ValueError(f"pixel_shape must be (rows, cols), got {pixel_shape!r}")
            self.layout = pixel_layout((p.height, p.width), p.paddle_height, shape)
            high = 255
        image = (self.layout.height, self.layout.width)
        self._image_shape = image
        shape = {None: image, "last": (*image, 1), "first": (1, *image)}[self.channel_axis]
        self.single_observation_space = spaces.Box(0, high, shape, dtype=np.uint8)

    def _allocate_step_buffers(self) -> None:
        """The arrays the numpy kernels reuse every step, for ``num_envs`` envs."""
        n = self.num_envs
        self._obs_tmp = self._obs_scale_rows = np.empty((6, 0), np.float32)  # "state" only
        # tiles and pixels: drawn incrementally by the numpy kernels, whole by the per-env ones
        self.observe_fills_out = self.obs_type == "state" or self.kernels != "numpy"
        self._step_reward = np.zeros(n)  # step_envs' results, reused every step
        self._step_terminated = np.zeros(n, dtype=np.bool_)
        if self.obs_type == "state":
            self._obs_tmp = np.zeros((6, n), dtype=np.float32)
            # the scales as whole rows: a plain multiply beats a broadcast one
            # (docs/performance.md)
            self._obs_scale_rows = np.repeat(self._obs_scale_col, n, axis=1)
        self._raster = None if self.layout is None else Raster(self.layout, n)
        if self._raster is not None and not self.copy:
            self._obs.flags.writeable = False  # the canvas: read-only for the caller
        self._ended = np.zeros(n if self.frameskip > 1 else 0, dtype=np.bool_)  # frameskip
        self._render_raster: Raster | None = None

    @property
    def ball_x_low(self) -> float:
        """Smallest ball x of any state: a ball in play is between the paddles' planes
        (``left_plane <= x <= right_plane``), and the step that ends a game moves its missed
        ball on in each of its frames, up to ``frameskip * ball_speed`` past a plane (0 and
        width-1 by default)."""
        return self.params.left_plane - self.frameskip * self.params.ball_speed

    @property
    def ball_x_high(self) -> float:
        return self.params.right_plane + self.frameskip * self.params.ball_speed

    def check_state(self, states: np.ndarray) -> dict[str, np.ndarray]:
        """What :meth:`set_state` refuses besides NaN/inf and the schema's ranges (the court,
        the speeds, the scores, the sticky actions): in a game not awaiting its reset, a
        ball outside the paddles' planes (``ball_x`` outside ``[left_plane,
        right_plane]``: the schema's range also holds a game's final state, whose missed
        ball may be past them) or a score of ``points_to_win`` (its next step could score
        past it)."""
        p = self.params
        playing = ~states["awaiting_reset"]
        where, off = field_outside(states, "ball_x", p.left_plane, p.right_plane)
        won = (states["score_left"] >= p.points_to_win) | (states["score_right"] >= p.points_to_win)
        return {f"{where} in a game not awaiting its reset": off & playing,
                f"a score of points_to_win={p.points_to_win} in a game not awaiting its "
                f"reset": won & playing}

    def _scale(self, raw: np.ndarray) -> np.ndarray:
        return raw * self._obs_scale + self._obs_offset

    # ---------------------------------------------------------------- kernels
    def reset_envs(self, s: PongState, rng: BatchRandom) -> None:
        self.reset_rows(s, slice(None), rng)

    def reset_rows(self, s: PongState, rows: np.ndarray | slice, rng: BatchRandom) -> None:
        """Start states at ``rows`` of ``s``, written in place (the base class's sparse
        reset path): scores 0-0, last actions NOOP, paddles centred, and a serve."""
        p = self.params
        fill_fields(s, INT_FIELDS, rows, 0)
        fill_fields(s, PADDLE_FIELDS, rows, p.top_wall / 2)
        if self.mode == "rally":
            serve_straight(s, rows, rng, p)
        else:
            serve(s, rows, rng, p)

    def step_envs(self, s: PongState, action: np.ndarray, rng: BatchRandom
                  ) -> tuple[np.ndarray, np.ndarray]:
        reward, terminated = self._step_reward, self._step_terminated
        reward.fill(0.0)
        terminated.fill(False)
        if self.frameskip == 1:
            self._substep(s, action, rng, reward, terminated)
        else:
            self._skip_frames(s, action, rng, reward, terminated)
        return reward, terminated

    def _substep(self, s: PongState, action: np.ndarray, rng: BatchRandom, reward: np.ndarray,
                 terminated: np.ndarray) -> np.ndarray | None:
        """One physics step of every row; returns the rows that missed the ball (or None)."""
        p = self.params
        left, right = self._applied_actions(s, action, rng)
        move_paddle(s.left_y, left, p)
        if right is None:
            track_ball(s.right_y, s.ball_y, p)
        else:
            move_paddle(s.right_y, right, p)
        keep_on_court(fields_view(s, PADDLE_FIELDS), p)
        move_ball(s)
        if self.mode == "rally":
            reward += p.f32.one
        # walls and paddles, on the few rows whose ball left the open court: one gather of
        # their fields, the rules on that block, one scatter back
        rows = ball_off_court(s, p)
        if not rows.size:
            return None
        bodies = take_fields(s, OBS_FIELDS, rows)
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
                bodies[:4, lost] = serve_balls(rng.at(missed), p)  # served in the block
        put_fields(s, BALL_FIELDS, rows, bodies[:4])
        return missed if missed.size else None

    def _applied_actions(self, s: PongState, action: np.ndarray, rng: BatchRandom
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

    def _skip_frames(self, s: PongState, action: np.ndarray, rng: BatchRandom,
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

    def observe(self, s: PongState, out: np.ndarray) -> None:
        if self._raster is None:
            # scale in the fields' (contiguous) order, then shift with one strided write into
            # out: the fastest order (docs/performance.md)
            if len(s) == self.num_envs:
                tmp = np.multiply(fields_view(s, OBS_FIELDS), self._obs_scale_rows,
                                  out=self._obs_tmp)
            else:
                tmp = np.multiply(fields_view(s, OBS_FIELDS), self._obs_scale_col)
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
    def render_envs(self, s: PongState) -> Sequence[Any] | np.ndarray:
        """``rgb_array``: an array of ``len(s)`` frames (uint8 (H, W, 3)); ``ansi``: one
        string per env."""
        if self.render_mode == "ansi":
            return ansi_frames(s, self.params)
        return self.frames(s)

    def frames(self, s: PongState | None = None) -> np.ndarray:
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
        return render_tiled(self, self.frames, k, cols, gap)

    # ------------------------------------------------------------------ multi-agent
    # batchenv's multi-agent protocol (batchenv.adapters.pettingzoo): the agents' names, each
    # agent's view of the batch's observations and rewards, and the keywords that make the
    # env multi-agent when an adapter is given its id.

    #: ``parallel_env("batchenv/Pong-v0")``'s default: both paddles controlled.
    multi_agent_kwargs: ClassVar[dict[str, Any]] = {"mode": "two_player"}

    @property
    def possible_agents(self) -> tuple[str, ...]:
        """``("left", "right")`` when both paddles are controlled (``two_player``,
        ``rally``): agent k's action is column k of the ``MultiDiscrete([3, 3])`` action.
        Empty against the CPU (one agent: a plain env)."""
        return () if self.mode == "cpu" else ("left", "right")

    def agent_observations(self, obs: np.ndarray) -> tuple[np.ndarray, ...]:
        """Each agent's view of a batch of observations: the left player's as they are,
        the right player's mirrored (:meth:`mirror_obs`), so both see themselves on the left
        and one policy can play either side."""
        return obs, self.mirror_obs(obs, self.obs_type, self.channel_axis)

    def agent_rewards(self, reward: np.ndarray) -> tuple[np.ndarray, ...]:
        """Each agent's rewards: zero-sum in ``two_player`` (the left side's reward, and
        its negation), the shared rally reward in ``rally``."""
        if self.mode == "two_player":
            return reward, np.negative(reward) + 0.0  # (+ 0.0: no -0.0 for a 0 reward)
        return reward, reward.copy()

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

