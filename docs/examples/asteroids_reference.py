"""Asteroids for one env in plain Python (lists and floats): the scalar reference.

The rules of ``asteroids_perenv.py`` (its docstring is the game's page) written a third time,
the way a single-env game is usually written, to test the two batched forms against
(``tests/test_example_asteroids.py``) and to time them against (docs/performance.md,
"A game written per-env from the docs"). A game loads from, and dumps to, one record of
``Asteroids.get_state()``; its random draws are the row's own stream (a ``BatchRandom`` of
one row over the record's key and counter), so it draws what the batched env's row draws.
"""

from __future__ import annotations

import numpy as np
from asteroids_perenv import (
    BULLET_LIFE,
    BULLET_SPEED,
    CRASH_DIST2,
    DIR_X,
    DIR_Y,
    DRAG,
    FIRE,
    FIRE_COOLDOWN,
    HALF,
    HIT_DIST2,
    LEFT,
    MAX_SPEED,
    N_DIRS,
    N_START,
    RIGHT,
    ROCK_SPEED,
    SAFE,
    THRUST,
    THRUST_POWER,
    WORLD,
    B,
    K,
)

from batchenv import BatchRandom

_DIR = [(float(x), float(y)) for x, y in zip(DIR_X, DIR_Y)]
_HIT2 = [float(d) for d in HIT_DIST2]
_CRASH2 = [float(d) for d in CRASH_DIST2]
_SPEED = [float(v) for v in ROCK_SPEED]


def wrap(x: float) -> float:
    if x < 0.0:
        x += WORLD
    if x >= WORLD:
        x -= WORLD
    return x


def delta(a: float, b: float) -> float:
    d = a - b
    if d > HALF:
        d -= WORLD
    if d < -HALF:
        d += WORLD
    return d


def distance2(a: list[float], b: list[float]) -> float:
    dx, dy = delta(a[0], b[0]), delta(a[1], b[1])
    return dx * dx + dy * dy


class AsteroidsGame:
    """One game. Ship, bullets and rocks are lists: ``[x, y, vx, vy]`` and a heading and
    cooldown; ``[x, y, vx, vy, life]`` per bullet slot; ``[x, y, vx, vy, size]`` per rock
    slot."""

    def __init__(self, key: int, counter: int, hit_reward: float = 1.0,
                 crash_reward: float = -1.0) -> None:
        self.rng = BatchRandom(np.array([key], np.uint64), np.array([counter], np.uint64))
        self.hit_reward, self.crash_reward = hit_reward, crash_reward

    def _integer(self, high: int) -> int:
        return int(self.rng.integers(0, high)[0])

    def _uniform(self, low: float, high: float) -> float:
        return float(self.rng.uniform(low, high)[0])

    def reset(self) -> None:
        self.ship, self.heading, self.cooldown = [HALF, HALF, 0.0, 0.0], 0, 0
        self.bullets = [[0.0, 0.0, 0.0, 0.0, 0] for _ in range(B)]
        self.rocks = [[0.0, 0.0, 0.0, 0.0, 0] for _ in range(K)]
        for k in range(N_START):
            x = wrap(HALF + self._uniform(SAFE, WORLD - SAFE))
            y = self._uniform(0.0, WORLD)
            dx, dy = _DIR[self._integer(N_DIRS)]
            self.rocks[k] = [x, y, _SPEED[3] * dx, _SPEED[3] * dy, 3]

    def step(self, action: int) -> tuple[float, bool]:
        # the ship turns, thrusts, drifts
        if action == LEFT:
            self.heading = (self.heading + 1) % N_DIRS
        elif action == RIGHT:
            self.heading = (self.heading - 1) % N_DIRS
        ship, (hx, hy) = self.ship, _DIR[self.heading]
        if action == THRUST:
            ship[2] += THRUST_POWER * hx
            ship[3] += THRUST_POWER * hy
        for v in (2, 3):
            ship[v] = min(max(ship[v] * DRAG, -MAX_SPEED), MAX_SPEED)
            ship[v - 2] = wrap(ship[v - 2] + ship[v])
        # bullets fly and age
        for bullet in self.bullets:
            if bullet[4] > 0:
                bullet[0], bullet[1] = wrap(bullet[0] + bullet[2]), wrap(bullet[1] + bullet[3])
                bullet[4] -= 1
        # the gun
        self.cooldown = max(self.cooldown - 1, 0)
        free = [bullet for bullet in self.bullets if bullet[4] == 0]
        if action == FIRE and self.cooldown == 0 and free:
            free[0][:] = [ship[0], ship[1], BULLET_SPEED * hx, BULLET_SPEED * hy, BULLET_LIFE]
            self.cooldown = FIRE_COOLDOWN
        # rocks drift
        for rock in self.rocks:
            if rock[4] > 0:
                rock[0], rock[1] = wrap(rock[0] + rock[2]), wrap(rock[1] + rock[3])
        # hits
        hits = 0
        for bullet in self.bullets:
            if bullet[4] == 0:
                continue
            for rock in self.rocks:
                if rock[4] > 0 and distance2(bullet, rock) < _HIT2[rock[4]]:
                    bullet[4] = 0
                    self._split(rock)
                    hits += 1
                    break
        reward = hits * self.hit_reward
        if any(rock[4] > 0 and distance2(ship, rock) < _CRASH2[rock[4]] for rock in self.rocks):
            return reward + self.crash_reward, True
        return reward, all(rock[4] == 0 for rock in self.rocks)

    def _split(self, rock: list) -> None:
        rock[4] -= 1
        if rock[4] == 0:
            return
        speed = _SPEED[rock[4]]
        (x1, y1), (x2, y2) = _DIR[self._integer(N_DIRS)], _DIR[self._integer(N_DIRS)]
        rock[2], rock[3] = speed * x1, speed * y1
        free = [other for other in self.rocks if other[4] == 0]
        if free:
            free[0][:] = [rock[0], rock[1], speed * x2, speed * y2, rock[4]]

    def observation(self) -> list[float]:
        ship, (hx, hy) = self.ship, _DIR[self.heading]
        obs = [*ship, hx, hy, float(self.cooldown)]
        for rock in self.rocks:
            obs += ([delta(rock[0], ship[0]), delta(rock[1], ship[1]), *rock[2:]]
                    if rock[4] > 0 else [0.0] * 5)
        for bullet in self.bullets:
            obs += ([delta(bullet[0], ship[0]), delta(bullet[1], ship[1]), bullet[4]]
                    if bullet[4] > 0 else [0.0] * 3)
        return obs

    # one record of Asteroids.get_state() in and out

    def load(self, record: np.void) -> None:
        self.rng.key[0], self.rng.counter[0] = record["rng_key"], record["rng_counter"]
        self.ship = [float(record[f]) for f in ("ship_x", "ship_y", "ship_vx", "ship_vy")]
        self.heading, self.cooldown = int(record["heading"]), int(record["cooldown"])
        self.bullets = [[float(record["bullet_" + f][j]) for f in ("x", "y", "vx", "vy")]
                        + [int(record["bullet_life"][j])] for j in range(B)]
        self.rocks = [[float(record["rock_" + f][k]) for f in ("x", "y", "vx", "vy")]
                      + [int(record["rock_size"][k])] for k in range(K)]

    def dump(self, record: np.void) -> None:
        record["rng_counter"] = self.rng.counter[0]
        for f, v in zip(("ship_x", "ship_y", "ship_vx", "ship_vy"), self.ship):
            record[f] = v
        record["heading"], record["cooldown"] = self.heading, self.cooldown
        for f, column in zip(("x", "y", "vx", "vy", "life"), zip(*self.bullets)):
            record["bullet_" + f] = column
        for f, column in zip(("x", "y", "vx", "vy", "size"), zip(*self.rocks)):
            record["rock_" + f] = column
