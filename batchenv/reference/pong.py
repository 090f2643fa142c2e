"""Pong one game at a time, in plain Python: the references BatchPong is tested and measured
against.

* :class:`ReferencePong`: BatchPong's rules for one game with the same float32 arithmetic
  (numpy float32 scalars, the same operations in the same order), the same counter-based
  random stream (SplitMix64 over the row's key and counter, in Python ints), the same
  observations (state vector, tile map, pixels, rendered frames, text) drawn pixel by pixel
  with Python loops, and the base class's episode logic (time limit, the three auto-reset
  modes). Stepped side by side with a batch after ``set_state``, every field, reward, flag
  and observation must agree exactly. Slow (numpy scalars cost ~100 ns per operation): it
  is the oracle, not a baseline.
* :class:`PlainPong`: the same game against the CPU written as a plain-Python programmer
  would, with Python floats and the :mod:`random` module: the honest speed baseline for
  "how fast is one Pong in Python" (about a million steps per second).
"""

from __future__ import annotations

import random as _random
from typing import Any

import numpy as np

from batchenv.envs.pong import MODES, OBS_TYPES, PongParams
from batchenv.envs.pong.raster import (
    PALETTE,
    Layout,
    pixel_layout,
    render_layout,
    tile_layout,
)

__all__ = ["ReferencePong", "PlainPong", "CounterRandom", "seed_key", "mix64"]

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

    def __init__(self, *, params: PongParams | None = None, mode: str = "cpu",
                 obs_type: str | None = None, frameskip: int = 1,
                 repeat_action_probability: float = 0.0,
                 pixel_shape: tuple[int, int] = (84, 84), render_scale: int = 8,
                 max_episode_steps: int | None = 10_000, autoreset_mode: str = "NextStep",
                 **overrides: Any) -> None:
        import dataclasses

        self.params = p = dataclasses.replace(params or PongParams(), **overrides)
        assert mode in MODES
        self.mode = mode
        self.obs_type = obs_type or ("tiles" if mode == "rally" else "state")
        assert self.obs_type in OBS_TYPES
        self.frameskip = frameskip
        self.sticky = float(repeat_action_probability)
        self.max_episode_steps = max_episode_steps
        self.autoreset_mode = str(getattr(autoreset_mode, "value", autoreset_mode))
        court = (p.height, p.width)
        self.tile_layout = tile_layout(p.height, p.width, p.paddle_height)
        self.pixel_layout = pixel_layout(court, p.paddle_height, tuple(pixel_shape))
        self.render_layout = render_layout(court, p.paddle_height, render_scale)
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
        reward, terminated = self.step_game(action)
        self.elapsed_steps += 1
        truncated = (self.max_episode_steps is not None
                     and self.elapsed_steps >= self.max_episode_steps)
        if waiting:
            if frozen is not None:
                self._restore(frozen)
            else:
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
        left, right = given
        if self.sticky > 0:
            if self.rng.random() >= self.sticky:
                self.action_left = left
            left = self.action_left
            if right is not None:
                if self.rng.random() >= self.sticky:
                    self.action_right = right
                right = self.action_right
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

    def draw(self, lay: Layout) -> np.ndarray:
        """The image of ``lay``, drawn pixel by pixel: background and walls, the ball, then
        the paddles over it."""
        img = [[lay.background] * lay.width for _ in range(lay.height)]
        for r in list(range(lay.court_top)) + list(range(lay.court_top + lay.court_rows,
                                                          lay.height)):
            img[r] = [lay.wall] * lay.width

        def box(top: int, left: int, size: tuple[int, int], value: int) -> None:
            for r in range(top, top + size[0]):
                for c in range(left, left + size[1]):
                    img[r][c] = value

        ay, by = lay.ball_y_coef
        ax, bx = lay.ball_x_coef
        row = _clip(int(self.ball_y * ay + by), *lay.ball_rows)
        col = _clip(int(self.ball_x * ax + bx), *lay.ball_cols)
        box(row, col, lay.ball_size, lay.ball)
        py, pb = lay.paddle_y_coef
        for y, col, value in ((self.left_y, lay.paddle_cols[0], lay.left_paddle),
                              (self.right_y, lay.paddle_cols[1], lay.right_paddle)):
            box(_clip(int(y * py + pb), *lay.paddle_rows), col, lay.paddle_size, value)
        return np.array(img, dtype=np.uint8)

    def frame(self) -> np.ndarray:
        """The ``rgb_array`` frame."""
        return PALETTE[self.draw(self.render_layout)]

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
            left = self.x < 1.0
            offset = self.y - (self.left_y if left else self.right_y)
            if -2.5 <= offset <= 2.5:
                self.x = (2.0 if left else 76.0) - self.x
                self.vx = -self.vx
                vy = self.vy + 0.5 * offset
                self.vy = -3.0 if vy < -3.0 else (3.0 if vy > 3.0 else vy)
            else:
                if left:
                    self.score_right += 1
                    reward = -1.0
                else:
                    self.score_left += 1
                    reward = 1.0
                terminated = self.score_left >= 21 or self.score_right >= 21
                self.serve()
        self.steps += 1
        truncated = self.steps >= self.max_episode_steps
        obs = self.observe()
        if terminated or truncated:
            self.reset()
        return obs, reward, terminated, truncated, {}
