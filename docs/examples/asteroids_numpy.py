"""Asteroids' rules as numpy kernels: every env at once, one numpy call per rule.

The same game as ``asteroids_perenv.py`` (its docstring is the game's page) over the same
state schema: ``NumpyAsteroids`` subclasses ``Asteroids`` and adds ``reset_envs``,
``step_envs`` and ``observe``, so it has both forms; it runs its numpy kernels by default
(``kernels="numpy"``). Random draws are the per-env form's, word for word: a row draws the
same values in the same order (``rng.at(rows)`` for the rows a rule concerns).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from asteroids_perenv import (
    BULLET_LIFE,
    BULLET_VX,
    BULLET_VY,
    BULLETS_AT,
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
    ROCK_VX,
    ROCK_VY,
    ROCKS_AT,
    SAFE,
    THRUST,
    THRUST_X,
    THRUST_Y,
    WORLD,
    Asteroids,
    B,
    K,
)

from batchenv.entities import first_free


def wrap(x: np.ndarray) -> None:
    """x back onto [0, WORLD), in place (the per-env ``wrap``'s two ifs, as two masks)."""
    np.add(x, WORLD, out=x, where=x < 0.0)
    np.subtract(x, WORLD, out=x, where=x >= WORLD)


def torus_delta(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = a - b
    np.subtract(d, WORLD, out=d, where=d > HALF)
    np.add(d, WORLD, out=d, where=d < -HALF)
    return d


def distance2(ax, ay, bx, by) -> np.ndarray:
    dx, dy = torus_delta(ax, bx), torus_delta(ay, by)
    return dx * dx + dy * dy


def steer_ship(s, action: np.ndarray) -> None:
    turning_left, turning_right = action == LEFT, action == RIGHT
    s.heading[turning_left] = (s.heading[turning_left] + 1) % N_DIRS
    s.heading[turning_right] = (s.heading[turning_right] + N_DIRS - 1) % N_DIRS
    thrusting = action == THRUST
    np.add(s.ship_vx, THRUST_X[s.heading], out=s.ship_vx, where=thrusting)
    np.add(s.ship_vy, THRUST_Y[s.heading], out=s.ship_vy, where=thrusting)
    for v in (s.ship_vx, s.ship_vy):
        v *= DRAG
        np.clip(v, -MAX_SPEED, MAX_SPEED, out=v)
    s.ship_x += s.ship_vx
    s.ship_y += s.ship_vy
    wrap(s.ship_x)
    wrap(s.ship_y)


def move_bullets(s) -> None:
    flying = s.bullet_life > 0
    np.add(s.bullet_x, s.bullet_vx, out=s.bullet_x, where=flying)
    np.add(s.bullet_y, s.bullet_vy, out=s.bullet_y, where=flying)
    wrap(s.bullet_x)
    wrap(s.bullet_y)
    np.subtract(s.bullet_life, 1, out=s.bullet_life, where=flying)


def fire(s, action: np.ndarray) -> None:
    np.subtract(s.cooldown, 1, out=s.cooldown, where=s.cooldown > 0)
    slot, has_free = first_free(s.bullet_life > 0)
    rows = ((action == FIRE) & (s.cooldown == 0) & has_free).nonzero()[0]
    j, h = slot[rows], s.heading[rows]
    s.bullet_x[rows, j], s.bullet_y[rows, j] = s.ship_x[rows], s.ship_y[rows]
    s.bullet_vx[rows, j], s.bullet_vy[rows, j] = BULLET_VX[h], BULLET_VY[h]
    s.bullet_life[rows, j] = BULLET_LIFE
    s.cooldown[rows] = FIRE_COOLDOWN


def move_rocks(s) -> None:
    present = s.rock_size > 0
    np.add(s.rock_x, s.rock_vx, out=s.rock_x, where=present)
    np.add(s.rock_y, s.rock_vy, out=s.rock_y, where=present)
    wrap(s.rock_x)
    wrap(s.rock_y)


def split_rocks(s, rows: np.ndarray, k: np.ndarray, rng) -> None:
    """Rock ``k[r]`` of each row ``rows[r]`` is hit (the per-env ``split_rock``, row by row)."""
    size = s.rock_size[rows, k] - 1
    s.rock_size[rows, k] = size
    shrinking = size > 0
    rows, k, size = rows[shrinking], k[shrinking], size[shrinking]
    d = rng.at(rows).integers(0, N_DIRS, (2,))          # the two directions, in order
    s.rock_vx[rows, k], s.rock_vy[rows, k] = ROCK_VX[size, d[:, 0]], ROCK_VY[size, d[:, 0]]
    free, has_free = first_free(s.rock_size[rows] > 0)
    rows, k, size, free, d2 = (a[has_free] for a in (rows, k, size, free, d[:, 1]))
    s.rock_x[rows, free], s.rock_y[rows, free] = s.rock_x[rows, k], s.rock_y[rows, k]
    s.rock_vx[rows, free], s.rock_vy[rows, free] = ROCK_VX[size, d2], ROCK_VY[size, d2]
    s.rock_size[rows, free] = size


def shoot_rocks(s, rng) -> np.ndarray:
    """Bullet slot by bullet slot (a later bullet sees the pieces of an earlier hit): each
    flying bullet destroys the first rock it is inside. Returns the hits per row."""
    hits = np.zeros(len(s), dtype=np.int64)
    for j in range(B):
        inside = ((s.rock_size > 0) & (s.bullet_life[:, j, None] > 0)
                  & (distance2(s.bullet_x[:, j, None], s.bullet_y[:, j, None],
                               s.rock_x, s.rock_y) < HIT_DIST2[s.rock_size]))
        rows = inside.any(axis=1).nonzero()[0]
        if not rows.size:
            continue
        s.bullet_life[rows, j] = 0
        split_rocks(s, rows, inside[rows].argmax(axis=1), rng)
        hits[rows] += 1
    return hits


def ship_crashed(s) -> np.ndarray:
    touching = distance2(s.ship_x[:, None], s.ship_y[:, None], s.rock_x, s.rock_y)
    return ((s.rock_size > 0) & (touching < CRASH_DIST2[s.rock_size])).any(axis=1)


class NumpyAsteroids(Asteroids):
    """``Asteroids`` (see its docstring) with its rules as numpy kernels, run by default."""

    def __init__(self, num_envs: int | None = None, *, kernels: str = "numpy",
                 **kwargs: Any) -> None:
        super().__init__(num_envs, kernels=kernels, **kwargs)

    def reset_envs(self, s, rng) -> None:
        s.ship_x[:], s.ship_y[:] = HALF, HALF
        for name in ("ship_vx", "ship_vy", "heading", "cooldown", "bullet_x", "bullet_y",
                     "bullet_vx", "bullet_vy", "bullet_life", "rock_x", "rock_y",
                     "rock_vx", "rock_vy", "rock_size"):
            getattr(s, name)[:] = 0
        for k in range(N_START):                 # per rock: x, y, direction (as reset_env)
            x = HALF + rng.uniform(SAFE, WORLD - SAFE)
            wrap(x)
            s.rock_x[:, k] = x
            s.rock_y[:, k] = rng.uniform(0.0, WORLD)
            d = rng.integers(0, N_DIRS)
            s.rock_vx[:, k], s.rock_vy[:, k] = ROCK_VX[3, d], ROCK_VY[3, d]
            s.rock_size[:, k] = 3

    def step_envs(self, s, action, rng):
        steer_ship(s, action)
        move_bullets(s)
        fire(s, action)
        move_rocks(s)
        reward = shoot_rocks(s, rng) * self.hit_reward
        crashed = ship_crashed(s)
        reward[crashed] += self.crash_reward
        return reward, crashed | (s.rock_size == 0).all(axis=1)

    def observe(self, s, out) -> None:
        out[:, 0], out[:, 1], out[:, 2], out[:, 3] = s.ship_x, s.ship_y, s.ship_vx, s.ship_vy
        out[:, 4], out[:, 5], out[:, 6] = DIR_X[s.heading], DIR_Y[s.heading], s.cooldown
        present = s.rock_size > 0
        rocks = out[:, ROCKS_AT:BULLETS_AT].reshape(len(s), K, 5)     # views of out
        rocks[..., 0] = torus_delta(s.rock_x, s.ship_x[:, None]) * present
        rocks[..., 1] = torus_delta(s.rock_y, s.ship_y[:, None]) * present
        rocks[..., 2], rocks[..., 3] = s.rock_vx * present, s.rock_vy * present
        rocks[..., 4] = s.rock_size
        flying = s.bullet_life > 0
        bullets = out[:, BULLETS_AT:].reshape(len(s), B, 3)
        bullets[..., 0] = torus_delta(s.bullet_x, s.ship_x[:, None]) * flying
        bullets[..., 1] = torus_delta(s.bullet_y, s.ship_y[:, None]) * flying
        bullets[..., 2] = s.bullet_life
