"""Pong one game at a time, in plain Python: the references BatchPong is tested and measured
against.

* :class:`ReferencePong`: BatchPong's rules for one game with the same float32 arithmetic
  (numpy float32 scalars, the same operations in the same order), the same counter-based
  random stream (SplitMix64 over the row's key and counter, in Python ints), the same
  observations (state vector, tile map, pixels, rendered frames, text) drawn pixel by pixel
  with Python loops, and the base class's episode logic (time limit, the three auto-reset
  modes). Stepped side by side with a batch after ``set_state``, every field, reward, flag
  and observation must agree exactly. Slow (every operation is on numpy scalars): it
  is the oracle, not a baseline.
* :class:`PlainPong`: the same game against the CPU written as a plain-Python programmer
  would, with Python floats and the :mod:`random` module: the honest speed baseline for
  "how fast is one Pong in Python" (its speed beside BatchPong's: ``benchmarks/test_bench_pong.py``;
  docs/pong.md, "Speed").

The reference owns its constants: the rules (:class:`Rules`), the image geometry
(:func:`tile_geometry`, :func:`pixel_geometry`, :func:`render_geometry`), the grey levels and
the render colours are written here from the documented rules (docs/pong.md, "The rules",
"Observation types", "Rendering"; the seed's court, paddles and speeds), and nothing is
imported from :mod:`batchenv.envs`: a wrong default in the env makes the two disagree
(``tests/test_pong_reference.py`` pins the env's defaults to these).
"""

from __future__ import annotations

import dataclasses
import random as _random
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ReferencePong", "PlainPong", "CounterRandom", "Rules", "Geometry", "seed_key",
           "mix64", "MODES", "OBS_TYPES", "PIXEL_LEVELS", "RENDER_COLOURS", "tile_geometry",
           "pixel_geometry", "render_geometry"]

# ---------------------------------------------------------------- the documented constants
#: Game modes and observation types (docs/pong.md, "Modes", "Observation types").
MODES = ("cpu", "two_player", "rally")
OBS_TYPES = ("state", "tiles", "pixels")

#: Grey levels of the pixel observation: ALE Pong's (docs/pong.md, "Observation types"):
#: background 87, walls 236, left paddle 147, right paddle 148, ball 236.
PIXEL_LEVELS = (87, 236, 147, 148, 236)

#: ``rgb_array`` colours (docs/pong.md, "Rendering": grey walls, green left paddle, orange
#: right paddle, white ball, on a dark blue-grey court), in the label order of the frames:
#: background, wall, left paddle, right paddle, ball.
RENDER_COLOURS = np.array([(20, 24, 36), (200, 200, 200), (80, 200, 120), (230, 120, 60),
                           (255, 255, 255)], dtype=np.uint8)
_BACKGROUND, _WALL, _LEFT, _RIGHT, _BALL = range(5)


@dataclass(frozen=True)
class Rules:
    """Pong's constants as docs/pong.md states them ("The rules"): the seed's 40 x 30 court,
    5-cell paddles moving 2 cells per action, |vx| = 1, spin ``(y - centre) / 2`` bounded by
    3; the CPU paddle's 1 cell per step, the serve's vy in [-1, 1] and the 21-point game are
    this project's additions. ``ReferencePong`` takes these fields as keywords, like
    ``PongParams``."""

    width: int = 40
    height: int = 30
    paddle_height: int = 5
    paddle_speed: float = 2.0
    cpu_speed: float = 1.0
    ball_speed: float = 1.0
    max_ball_vy: float = 3.0
    spin: float = 0.5
    serve_vy: float = 1.0
    points_to_win: int = 21

    # geometry, in court cells (x to the right, y downwards, cell centres)
    @property
    def top_wall(self) -> float:  # the ball reflects off y = 0 and y = height - 1
        return float(self.height - 1)

    @property
    def paddle_min(self) -> float:  # a paddle's top cell is at most row 0
        return (self.paddle_height - 1) / 2

    @property
    def paddle_max(self) -> float:
        return self.height - 1 - self.paddle_min

    @property
    def paddle_reach(self) -> float:  # returned when |ball_y - centre| <= reach
        return self.paddle_height / 2

    @property
    def left_plane(self) -> float:  # paddles in columns 0 and width - 1
        return 1.0

    @property
    def right_plane(self) -> float:
        return float(self.width - 2)


@dataclass(frozen=True)
class Geometry:
    """Where the court and its three boxes land in an image (docs/pong.md, "Observation
    types"): walls fill the rows above and below the court; a box of ``size`` pixels for a
    thing at court position ``u`` starts at pixel ``trunc(u * scale + (origin + scale / 2 -
    size / 2 + 1/2))`` (the nearest pixel to its continuous start; float32), clipped so that
    the box stays on the court."""

    height: int
    width: int
    court_top: int  # = wall thickness
    court_rows: int
    scale_y: float
    scale_x: float
    ball_size: tuple[int, int]
    paddle_size: tuple[int, int]
    court_cells: tuple[int, int]
    values: tuple[int, int, int, int, int]  # background, wall, left, right, ball

    def _coef(self, scale: float, origin: int, size: int) -> tuple[np.float32, np.float32]:
        return f32(scale), f32(origin + scale / 2 - size / 2 + 0.5)

    def ball_start(self, x: np.float32, y: np.float32) -> tuple[int, int]:
        """(row, col) of the ball's top-left pixel."""
        ay, by = self._coef(self.scale_y, self.court_top, self.ball_size[0])
        ax, bx = self._coef(self.scale_x, 0, self.ball_size[1])
        row = _clip(int(y * ay + by), self.court_top,
                    self.court_top + self.court_rows - self.ball_size[0])
        return row, _clip(int(x * ax + bx), 0, self.width - self.ball_size[1])

    def paddle_start(self, y: np.float32, column: int) -> tuple[int, int]:
        """(row, col) of the top-left pixel of a paddle centred at ``y`` in court column
        ``column``."""
        ay, by = self._coef(self.scale_y, self.court_top, self.paddle_size[0])
        ax, bx = self._coef(self.scale_x, 0, self.paddle_size[1])
        row = _clip(int(y * ay + by), self.court_top,
                    self.court_top + self.court_rows - self.paddle_size[0])
        return row, _clip(int(f32(column) * ax + bx), 0, self.width - self.paddle_size[1])


def _box_size(scale: float, cells: float) -> int:
    return max(1, int(round(scale * cells)))


def tile_geometry(rules: Rules) -> Geometry:
    """The seed's tile map: one pixel per cell, no walls; 0 empty, 1 paddle, 2 ball."""
    h, w = rules.height, rules.width
    return Geometry(h, w, 0, h, 1.0, 1.0, (1, 1), (rules.paddle_height, 1), (h, w),
                    (0, 0, 1, 1, 2))


def pixel_geometry(rules: Rules, shape: tuple[int, int] = (84, 84)) -> Geometry:
    """The Atari-like grey frame: walls of ``max(1, rows // 42)`` pixels, boxes of the
    nearest whole number of pixels (3 x 2 ball, 13 x 2 paddles at 84x84), ALE's grey
    levels (:data:`PIXEL_LEVELS`)."""
    rows, cols = shape
    wall = max(1, rows // 42)
    court_rows = rows - 2 * wall
    sy, sx = court_rows / rules.height, cols / rules.width
    return Geometry(rows, cols, wall, court_rows, sy, sx, (_box_size(sy, 1), _box_size(sx, 1)),
                    (_box_size(sy, rules.paddle_height), _box_size(sx, 1)),
                    (rules.height, rules.width), PIXEL_LEVELS)


def render_geometry(rules: Rules, scale: int = 8) -> Geometry:
    """Frames for people: ``scale`` pixels per cell, walls one cell thick; values are
    indices into :data:`RENDER_COLOURS`."""
    h, w = rules.height, rules.width
    return Geometry((h + 2) * scale, w * scale, scale, h * scale, float(scale), float(scale),
                    (scale, scale), (rules.paddle_height * scale, scale), (h, w),
                    (_BACKGROUND, _WALL, _LEFT, _RIGHT, _BALL))


# ---------------------------------------------------------------- the random stream
#: SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
#: OOPSLA 2014; the constants of Java's SplittableRandom): the increment, the finaliser's
#: multipliers. batchenv.random documents the same stream (docs/writing_envs.md).
_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1, _MIX2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_SEED_SALT = 0x5851F42D4C957F2D
f32 = np.float32
_DIRECTION = (f32(0.0), f32(-1.0), f32(1.0))  # NOOP, UP, DOWN


def mix64(x: int) -> int:
    """SplitMix64's finaliser on a Python int (mod 2**64)."""
    x ^= x >> 30
    x = (x * _MIX1) & _MASK
    x ^= x >> 27
    x = (x * _MIX2) & _MASK
    return x ^ (x >> 31)


def seed_key(seed: int) -> int:
    """The stream key of an integer seed (as :func:`batchenv.random.seed_keys`)."""
    return mix64(mix64((seed * _GOLDEN + _SEED_SALT) & _MASK))


class CounterRandom:
    """One row's random stream: word j is ``mix64(key + (counter + j) * golden)``."""

    def __init__(self, key: int, counter: int = 0) -> None:
        self.key, self.counter = int(key), int(counter)

    def random(self) -> float:
        """Uniform float in [0, 1) from 53 bits of the next word."""
        x = mix64((self.key + self.counter * _GOLDEN) & _MASK)
        self.counter = (self.counter + 1) & _MASK
        return (x >> 11) * 2.0**-53


def _clip(v, lo, hi):
    return lo if v < lo else (hi if v > hi else v)


class ReferencePong:
    """One BatchPong game (one row), with the episode logic of :class:`~batchenv.BatchEnv`.

    Same constructor options as :class:`~batchenv.BatchPong` (``mode``, ``obs_type``,
    ``frameskip``, ``repeat_action_probability``, ``pixel_shape``, ``render_scale``,
    ``max_episode_steps``, ``autoreset_mode``, ``params`` and its fields). Use
    :meth:`set_record` / :meth:`record` with rows of ``BatchPong.get_state()``.
    """

    def __init__(self, *, params: Any = None, mode: str = "cpu",
                 obs_type: str | None = None, frameskip: int = 1,
                 repeat_action_probability: float = 0.0,
                 pixel_shape: tuple[int, int] = (84, 84), render_scale: int = 8,
                 max_episode_steps: int | None = 10_000, autoreset_mode: str = "NextStep",
                 **overrides: Any) -> None:
        if params is not None:  # any object with Rules' fields (e.g. a PongParams)
            overrides = {f.name: getattr(params, f.name) for f in dataclasses.fields(Rules)
                         } | overrides
        self.params = p = Rules(**overrides)
        assert mode in MODES
        self.mode = mode
        self.obs_type = obs_type or ("tiles" if mode == "rally" else "state")
        assert self.obs_type in OBS_TYPES
        self.frameskip = frameskip
        self.sticky = float(repeat_action_probability)
        self.max_episode_steps = max_episode_steps
        self.autoreset_mode = str(getattr(autoreset_mode, "value", autoreset_mode))
        self.tile_layout = tile_geometry(p)
        self.pixel_layout = pixel_geometry(p, (int(pixel_shape[0]), int(pixel_shape[1])))
        self.render_layout = render_geometry(p, render_scale)
        mid = p.top_wall / 2
        centre = [(p.width - 1) / 2, mid, 0, 0, mid, mid]
        half = [(p.width - 1) / 2, mid, p.ball_speed, p.max_ball_vy, mid, mid]
        self._obs_scale = [f32(1 / h) for h in half]
        self._obs_offset = [f32(-c / h) for c, h in zip(centre, half)]
        self.ball_x = self.ball_y = self.ball_vx = self.ball_vy = f32(0)
        self.left_y = self.right_y = f32(0)
        self.score_left = self.score_right = 0
        self.action_left = self.action_right = 0
        self.elapsed_steps = 0
        self.rng = CounterRandom(0, 0)
        self.awaiting_reset = False

    # ------------------------------------------------------------- state in and out
    _FLOATS = ("ball_x", "ball_y", "ball_vx", "ball_vy", "left_y", "right_y")
    _INTS = ("score_left", "score_right", "action_left", "action_right", "elapsed_steps")

    def set_record(self, rec: np.void) -> None:
        """Take the state of one row of ``BatchPong.get_state()``."""
        for name in self._FLOATS:
            setattr(self, name, f32(rec[name]))
        for name in self._INTS:
            setattr(self, name, int(rec[name]))
        self.rng = CounterRandom(int(rec["rng_key"]), int(rec["rng_counter"]))
        self.awaiting_reset = bool(rec["awaiting_reset"])

    def record(self) -> dict[str, Any]:
        """The state as a dict keyed like ``BatchPong.full_state_dtype``."""
        d: dict[str, Any] = {name: getattr(self, name) for name in self._FLOATS + self._INTS}
        d.update(rng_key=self.rng.key, rng_counter=self.rng.counter,
                 awaiting_reset=self.awaiting_reset)
        return d

    # ------------------------------------------------------------- episode logic
    def reset(self, seed: int | None = None) -> np.ndarray:
        if seed is not None:
            self.rng = CounterRandom(seed_key(seed), 0)
        self._start_game()
        return self.observe()

    def _start_game(self) -> None:
        p = self.params
        self.score_left = self.score_right = 0
        self.left_y = self.right_y = f32(p.top_wall / 2)
        self.action_left = self.action_right = 0
        if self.mode == "rally":
            u = self.rng.random()
            self.ball_x, self.ball_y = f32(p.width / 2), f32(p.top_wall / 2)
            self.ball_vx = f32(-p.ball_speed) if u < 0.5 else f32(p.ball_speed)
            self.ball_vy = f32(0.0)
        else:
            self._serve()
        self.elapsed_steps = 0
        self.awaiting_reset = False

    def step(self, action) -> tuple[np.ndarray, float, bool, bool, np.ndarray | None]:
        """``(obs, reward, terminated, truncated, final_obs)``; ``final_obs`` is the
        terminal observation in SAME_STEP mode when the episode ended, else None."""
        waiting = self.awaiting_reset
        frozen = self.record() if waiting and self.autoreset_mode == "Disabled" else None
        counter = self.rng.counter  # a discarded step's draws are given back (NEXT_STEP)
        reward, terminated = self.step_game(action)
        self.elapsed_steps += 1
        truncated = (self.max_episode_steps is not None
                     and self.elapsed_steps >= self.max_episode_steps)
        if waiting:
            if frozen is not None:
                self._restore(frozen)
            else:
                self.rng.counter = counter
                self._start_game()
            reward, terminated, truncated = 0.0, False, False
        final_obs = None
        if self.autoreset_mode == "SameStep":
            if terminated or truncated:
                final_obs = self.observe()
                self._start_game()
        else:
            self.awaiting_reset = self.awaiting_reset or terminated or truncated
        return self.observe(), float(reward), bool(terminated), bool(truncated), final_obs

    def _restore(self, d: dict[str, Any]) -> None:
        for name in self._FLOATS + self._INTS:
            setattr(self, name, d[name])
        self.rng = CounterRandom(d["rng_key"], d["rng_counter"])
        self.awaiting_reset = d["awaiting_reset"]

    # ------------------------------------------------------------- the rules
    def step_game(self, action) -> tuple[float, bool]:
        """``frameskip`` physics sub-steps (stopping at the end of the episode); returns the
        summed reward and whether the episode ended."""
        if self.mode == "cpu":
            given = (int(action), None)
        else:
            given = (int(action[0]), int(action[1]))
        reward = f32(0)
        for _ in range(self.frameskip):
            r, ended = self._substep(given)
            reward += r
            if ended:
                return float(reward), True
        return float(reward), False

    def _substep(self, given: tuple[int, int | None]) -> tuple[np.float32, bool]:
        p = self.params
        left, right = self._sticky(given)
        lo, hi = f32(p.paddle_min), f32(p.paddle_max)
        self.left_y = _clip(self.left_y + _DIRECTION[left] * f32(p.paddle_speed), lo, hi)
        if right is None:  # the CPU follows the ball
            speed = f32(p.cpu_speed)
            self.right_y = _clip(self.right_y + _clip(self.ball_y - self.right_y, -speed, speed),
                                 lo, hi)
        else:
            self.right_y = _clip(self.right_y + _DIRECTION[right] * f32(p.paddle_speed), lo, hi)
        self.ball_x = self.ball_x + self.ball_vx
        self.ball_y = self.ball_y + self.ball_vy
        top = f32(p.top_wall)
        if self.ball_y < 0:
            self.ball_y, self.ball_vy = -self.ball_y, -self.ball_vy
        elif self.ball_y > top:
            self.ball_y, self.ball_vy = (top + top) - self.ball_y, -self.ball_vy
        reward = f32(1) if self.mode == "rally" else f32(0)
        left_side = self.ball_x < f32(p.left_plane)
        if not (left_side or self.ball_x > f32(p.right_plane)):
            return reward, False
        return self._at_goal_line(left_side, reward)

    def _sticky(self, given: tuple[int, int | None]) -> tuple[int, int | None]:
        """The actions that apply: with probability ``sticky`` each paddle repeats its last
        action instead of the one given (one draw per controlled paddle)."""
        left, right = given
        if self.sticky > 0:
            if self.rng.random() >= self.sticky:
                self.action_left = left
            left = self.action_left
            if right is not None:
                if self.rng.random() >= self.sticky:
                    self.action_right = right
                right = self.action_right
        return left, right

    def _at_goal_line(self, left_side: bool, reward: np.float32) -> tuple[np.float32, bool]:
        """The ball past a paddle's plane: returned with spin if the paddle reaches it,
        else a point (a new serve) or, in a rally, the end. Returns ``(reward, ended)``."""
        p = self.params
        offset = self.ball_y - (self.left_y if left_side else self.right_y)
        if abs(offset) <= f32(p.paddle_reach):  # returned
            plane = f32(2 * p.left_plane) if left_side else f32(2 * p.right_plane)
            self.ball_x, self.ball_vx = plane - self.ball_x, -self.ball_vx
            limit = f32(p.max_ball_vy)
            self.ball_vy = _clip(self.ball_vy + offset * f32(p.spin), -limit, limit)
            return reward, False
        if self.mode == "rally":  # a miss ends the rally and earns nothing
            return f32(0), True
        if self.ball_x > f32(p.right_plane):
            self.score_left += 1
            reward = f32(1)
        else:
            self.score_right += 1
            reward = f32(-1)
        ended = max(self.score_left, self.score_right) >= p.points_to_win
        self._serve()
        return reward, ended

    def _serve(self) -> None:
        p = self.params
        side, row, vy = self.rng.random(), self.rng.random(), self.rng.random()
        self.ball_x = f32(p.width / 2)
        self.ball_y = f32(p.height / 4 + row * (p.top_wall / 2))
        self.ball_vx = f32(-p.ball_speed) if side < 0.5 else f32(p.ball_speed)
        self.ball_vy = f32((2 * vy - 1) * p.serve_vy)

    # ------------------------------------------------------------- observations
    def observe(self) -> np.ndarray:
        if self.obs_type == "state":
            return self.state_obs()
        if self.obs_type == "tiles":
            return self.draw(self.tile_layout)
        return self.draw(self.pixel_layout)

    def state_obs(self) -> np.ndarray:
        raw = [getattr(self, name) for name in self._FLOATS]
        return np.array([v * a + b for v, a, b in zip(raw, self._obs_scale, self._obs_offset)],
                        dtype=np.float32)

    def draw(self, lay: Geometry) -> np.ndarray:
        """The image of ``lay``, drawn pixel by pixel: background and walls, the ball, then
        the paddles over it."""
        background, wall, left, right, ball = lay.values
        img = [[background] * lay.width for _ in range(lay.height)]
        for r in list(range(lay.court_top)) + list(range(lay.court_top + lay.court_rows,
                                                          lay.height)):
            img[r] = [wall] * lay.width

        def box(start: tuple[int, int], size: tuple[int, int], value: int) -> None:
            for r in range(start[0], start[0] + size[0]):
                for c in range(start[1], start[1] + size[1]):
                    img[r][c] = value

        box(lay.ball_start(self.ball_x, self.ball_y), lay.ball_size, ball)
        last_column = lay.court_cells[1] - 1
        for y, column, value in ((self.left_y, 0, left), (self.right_y, last_column, right)):
            box(lay.paddle_start(y, column), lay.paddle_size, value)
        return np.array(img, dtype=np.uint8)

    def frame(self) -> np.ndarray:
        """The ``rgb_array`` frame."""
        return RENDER_COLOURS[self.draw(self.render_layout)]

    def ansi(self) -> str:
        p = self.params
        tiles = self.draw(self.tile_layout)
        wall = "+" + "-" * p.width + "+"
        rows = ["|" + "".join(" #o"[v] for v in r) + "|" for r in tiles.tolist()]
        head = f" {self.score_left:>3} : {self.score_right:<3}".center(p.width + 2)
        return "\n".join([head, wall, *rows, wall]) + "\n"


class PlainPong:
    """BatchPong's game against the CPU (default rules), one game, in plain Python floats and
    the :mod:`random` module: what a Python programmer would write. The speed baseline.

    ``step(action)`` returns ``(obs, reward, terminated, truncated, info)`` as Gymnasium does,
    with ``obs`` the 6-float state list of BatchPong; it checks the action, as BatchPong
    does, and starts a new game by itself when one ends.
    """

    def __init__(self, seed: int | None = None, max_episode_steps: int = 10_000) -> None:
        self.rand = _random.Random(seed).random
        self.max_episode_steps = max_episode_steps
        self.reset()

    def reset(self) -> list[float]:
        self.left_y = self.right_y = 14.5
        self.score_left = self.score_right = 0
        self.steps = 0
        self.serve()
        return self.observe()

    def serve(self) -> None:
        rand = self.rand
        self.vx = -1.0 if rand() < 0.5 else 1.0
        self.x, self.y = 20.0, 7.5 + rand() * 14.5
        self.vy = 2.0 * rand() - 1.0

    def observe(self) -> list[float]:
        return [self.x / 19.5 - 1.0, self.y / 14.5 - 1.0, self.vx, self.vy / 3.0,
                self.left_y / 14.5 - 1.0, self.right_y / 14.5 - 1.0]

    def step(self, action: int) -> tuple[list[float], float, bool, bool, dict]:
        if action not in (0, 1, 2):
            raise ValueError(f"action must be 0, 1 or 2, got {action!r}")
        # agent paddle
        y = self.left_y + (0.0, -2.0, 2.0)[action]
        self.left_y = 2.0 if y < 2.0 else (27.0 if y > 27.0 else y)
        # CPU paddle follows the ball at one cell per step
        d = self.y - self.right_y
        y = self.right_y + (-1.0 if d < -1.0 else (1.0 if d > 1.0 else d))
        self.right_y = 2.0 if y < 2.0 else (27.0 if y > 27.0 else y)
        # ball, walls
        self.x += self.vx
        self.y += self.vy
        if self.y < 0.0:
            self.y, self.vy = -self.y, -self.vy
        elif self.y > 29.0:
            self.y, self.vy = 58.0 - self.y, -self.vy
        reward, terminated = 0.0, False
        if self.x < 1.0 or self.x > 38.0:
            reward, terminated = self.goal_line()
        self.steps += 1
        truncated = self.steps >= self.max_episode_steps
        obs = self.observe()
        if terminated or truncated:
            self.reset()
        return obs, reward, terminated, truncated, {}

    def goal_line(self) -> tuple[float, bool]:
        """The ball past a paddle's plane: returned with spin if the paddle reaches it,
        else a point and a new serve. Returns ``(reward, terminated)``."""
        left = self.x < 1.0
        offset = self.y - (self.left_y if left else self.right_y)
        if -2.5 <= offset <= 2.5:
            self.x = (2.0 if left else 76.0) - self.x
            self.vx = -self.vx
            vy = self.vy + 0.5 * offset
            self.vy = -3.0 if vy < -3.0 else (3.0 if vy > 3.0 else vy)
            return 0.0, False
        if left:
            self.score_right += 1
            reward = -1.0
        else:
            self.score_left += 1
            reward = 1.0
        self.serve()
        return reward, self.score_left >= 21 or self.score_right >= 21
