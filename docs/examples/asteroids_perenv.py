"""Asteroids on a small torus, written as per-env kernels (the rules of one env, row ``i``).

A worked example of ``docs/writing_envs.md``, section 7: a game with slots (up to ``K`` rocks
and ``B`` bullets per env) and a branch at every turn, written as plain scalar code for one
env and compiled by numba into one loop over the batch. The same rules as numpy kernels are
``docs/examples/asteroids_numpy.py`` (``NumpyAsteroids``, a subclass: one state schema), and
as a plain-Python loop for one env ``docs/examples/asteroids_reference.py``;
``tests/test_example_asteroids.py`` holds the three equal step by step.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

import batchenv
from batchenv import perenv

# The world: a torus of WORLD x WORLD cells.
WORLD = 32.0
HALF = WORLD / 2
K = 8                     # rock slots per env
B = 4                     # bullet slots per env
N_START = 3               # rocks of size 3 at the start (3 -> 6 -> 12 pieces: K runs out)
SAFE = 6.0                # start rocks at least this far from the ship along x

# Actions.
NOOP, LEFT, RIGHT, THRUST, FIRE = range(5)

# The ship.
N_DIRS = 16
ANGLES = 2 * np.pi * np.arange(N_DIRS) / N_DIRS
DIR_X, DIR_Y = np.cos(ANGLES), np.sin(ANGLES)      # unit vector of each heading
THRUST_POWER = 0.05       # cells per step, added along the heading per thrust
DRAG = 0.98               # velocity kept per step
MAX_SPEED = 0.5           # per axis, cells per step
SHIP_RADIUS = 0.5

# Bullets.
BULLET_SPEED = 1.0
BULLET_LIFE = 12          # steps: a bullet flies 12 cells, less than the world's width
FIRE_COOLDOWN = 3

# Rocks, by size (index 0: an empty slot).
ROCK_SPEED = np.array([0.0, 0.4, 0.25, 0.15])
ROCK_RADIUS = np.array([0.0, 0.75, 1.5, 2.5])
# Tables the rules read, made once.
THRUST_X, THRUST_Y = THRUST_POWER * DIR_X, THRUST_POWER * DIR_Y
BULLET_VX, BULLET_VY = BULLET_SPEED * DIR_X, BULLET_SPEED * DIR_Y
ROCK_VX = ROCK_SPEED[:, None] * DIR_X              # [size, direction]
ROCK_VY = ROCK_SPEED[:, None] * DIR_Y
HIT_DIST2 = ROCK_RADIUS**2                         # a bullet inside the rock
CRASH_DIST2 = (ROCK_RADIUS + SHIP_RADIUS) ** 2     # the ship touching the rock

OBS_SIZE = 7 + 5 * K + 3 * B
ROCKS_AT, BULLETS_AT = 7, 7 + 5 * K                 # where each slot block starts in obs

ASTEROIDS_STATE = np.dtype([
    ("ship_x", np.float64),          # [0, WORLD)
    ("ship_y", np.float64),          # [0, WORLD)
    ("ship_vx", np.float64),         # cells per step, [-MAX_SPEED, MAX_SPEED]
    ("ship_vy", np.float64),
    ("heading", np.int8),            # [0, N_DIRS): angle heading * 360 / N_DIRS degrees
    ("cooldown", np.int8),           # steps until the gun fires again, [0, FIRE_COOLDOWN]
    ("bullet_x", np.float64, (B,)),  # [0, WORLD)
    ("bullet_y", np.float64, (B,)),
    ("bullet_vx", np.float64, (B,)),
    ("bullet_vy", np.float64, (B,)),
    ("bullet_life", np.int8, (B,)),  # steps to live, [0, BULLET_LIFE]; 0: a free slot
    ("rock_x", np.float64, (K,)),    # [0, WORLD)
    ("rock_y", np.float64, (K,)),
    ("rock_vx", np.float64, (K,)),   # cells per step, ROCK_SPEED[size] along a heading
    ("rock_vy", np.float64, (K,)),
    ("rock_size", np.int8, (K,)),    # 3 big, 2, 1 small; 0: an empty slot
])


@perenv.rule
def wrap(x):
    """x back onto [0, WORLD) after a move of less than WORLD (two ifs, not elif: a tiny
    negative x plus WORLD rounds to WORLD itself)."""
    if x < 0.0:
        x += WORLD
    if x >= WORLD:
        x -= WORLD
    return x


@perenv.rule
def torus_delta(a, b):
    """a - b the shortest way round the torus, in [-HALF, HALF]."""
    d = a - b
    if d > HALF:
        d -= WORLD
    if d < -HALF:
        d += WORLD
    return d


@perenv.rule
def distance2(ax, ay, bx, by):
    dx, dy = torus_delta(ax, bx), torus_delta(ay, by)
    return dx * dx + dy * dy


@perenv.rule
def steer_ship(s, i, action):
    if action == LEFT:
        s.heading[i] = (s.heading[i] + 1) % N_DIRS
    elif action == RIGHT:
        s.heading[i] = (s.heading[i] + N_DIRS - 1) % N_DIRS
    h = s.heading[i]
    vx, vy = s.ship_vx[i], s.ship_vy[i]
    if action == THRUST:
        vx += THRUST_X[h]
        vy += THRUST_Y[h]
    s.ship_vx[i] = min(max(vx * DRAG, -MAX_SPEED), MAX_SPEED)
    s.ship_vy[i] = min(max(vy * DRAG, -MAX_SPEED), MAX_SPEED)
    s.ship_x[i] = wrap(s.ship_x[i] + s.ship_vx[i])
    s.ship_y[i] = wrap(s.ship_y[i] + s.ship_vy[i])


@perenv.rule
def move_bullets(s, i):
    for j in range(B):
        if s.bullet_life[i, j] > 0:
            s.bullet_x[i, j] = wrap(s.bullet_x[i, j] + s.bullet_vx[i, j])
            s.bullet_y[i, j] = wrap(s.bullet_y[i, j] + s.bullet_vy[i, j])
            s.bullet_life[i, j] -= 1


@perenv.rule
def fire(s, i, action):
    if s.cooldown[i] > 0:
        s.cooldown[i] -= 1
    if action != FIRE or s.cooldown[i] > 0:
        return
    for j in range(B):                    # the first free bullet slot, if any
        if s.bullet_life[i, j] == 0:
            h = s.heading[i]
            s.bullet_x[i, j], s.bullet_y[i, j] = s.ship_x[i], s.ship_y[i]
            s.bullet_vx[i, j], s.bullet_vy[i, j] = BULLET_VX[h], BULLET_VY[h]
            s.bullet_life[i, j] = BULLET_LIFE
            s.cooldown[i] = FIRE_COOLDOWN
            return


@perenv.rule
def move_rocks(s, i):
    for k in range(K):
        if s.rock_size[i, k] > 0:
            s.rock_x[i, k] = wrap(s.rock_x[i, k] + s.rock_vx[i, k])
            s.rock_y[i, k] = wrap(s.rock_y[i, k] + s.rock_vy[i, k])


@perenv.rule
def split_rock(s, i, k):
    """Rock k is hit: it shrinks by one size, or is gone at size 1. A rock that shrinks flies
    off in a new direction, and a second piece of its size leaves in another, from the same
    place, into the first free slot (none: no second piece). Both directions are drawn."""
    size = s.rock_size[i, k] - 1
    s.rock_size[i, k] = size
    if size == 0:
        return
    d1 = perenv.integers(s, i, 0, N_DIRS)
    d2 = perenv.integers(s, i, 0, N_DIRS)
    s.rock_vx[i, k], s.rock_vy[i, k] = ROCK_VX[size, d1], ROCK_VY[size, d1]
    for free in range(K):
        if s.rock_size[i, free] == 0:
            s.rock_x[i, free], s.rock_y[i, free] = s.rock_x[i, k], s.rock_y[i, k]
            s.rock_vx[i, free], s.rock_vy[i, free] = ROCK_VX[size, d2], ROCK_VY[size, d2]
            s.rock_size[i, free] = size
            return


@perenv.rule
def shoot_rocks(s, i):
    """Each flying bullet, in slot order, destroys the first rock (in slot order) it is
    inside, and is spent. Returns the number of hits."""
    hits = 0
    for j in range(B):
        if s.bullet_life[i, j] == 0:
            continue
        for k in range(K):
            size = s.rock_size[i, k]
            if size > 0 and distance2(s.bullet_x[i, j], s.bullet_y[i, j],
                                      s.rock_x[i, k], s.rock_y[i, k]) < HIT_DIST2[size]:
                s.bullet_life[i, j] = 0
                split_rock(s, i, k)
                hits += 1
                break
    return hits


@perenv.rule
def ship_crashed(s, i):
    for k in range(K):
        size = s.rock_size[i, k]
        if size > 0 and distance2(s.ship_x[i], s.ship_y[i],
                                  s.rock_x[i, k], s.rock_y[i, k]) < CRASH_DIST2[size]:
            return True
    return False


@perenv.rule
def cleared(s, i):
    for k in range(K):
        if s.rock_size[i, k] > 0:
            return False
    return True


class Asteroids(batchenv.BatchEnv):
    """Asteroids on a small torus: a ship, up to ``K`` rocks and ``B`` bullets in slots.

    ## Description

    A ship floats on a ``WORLD x WORLD`` torus (what leaves one edge comes back at the opposite
    one) among rocks. It turns in ``N_DIRS`` steps of 22.5 degrees, thrusts along its heading
    (drag slows it, its speed is capped) and fires bullets that live ``BULLET_LIFE`` steps. A
    bullet that touches a rock destroys it; a rock of size 3 or 2 splits into two rocks one size
    smaller, flying off in random directions (the second piece only if a rock slot is free).
    After Atari's *Asteroids* (1979), much simplified: no saucers, no hyperspace, one life.

    ## Action Space

    ``Discrete(5)``: 0 nothing, 1 turn left (counter-clockwise), 2 turn right, 3 thrust, 4 fire
    (ignored while the gun cools down, ``FIRE_COOLDOWN`` steps, or when all ``B`` bullets fly).

    ## Observation Space

    ``Box(-WORLD, WORLD, (7 + 5 K + 3 B,), float32)``: the ship's ``x, y, vx, vy``, its heading
    as a unit vector and the gun's cooldown; for each rock slot the rock's offset from the ship
    (the shortest way round the torus), its velocity and size (zeros for an empty slot); for
    each bullet slot its offset from the ship and steps to live (zeros for a free slot).

    ## Rewards

    ``hit_reward`` (1.0) per rock hit; ``crash_reward`` (-1.0) added on a crash.

    ## Starting State

    The ship at the centre, still, heading along +x; ``N_START`` rocks of size 3 at uniform
    positions at least ``SAFE`` cells from the ship along x, each flying in a uniform direction.

    ## Episode End

    Terminated when the ship touches a rock (a crash) or when no rock is left (cleared);
    truncated after ``max_episode_steps`` (default 500).

    ## Arguments

    ``hit_reward``, ``crash_reward``, and the base class's (``num_envs``, ``autoreset_mode``,
    ``max_episode_steps``, ``kernels``, ``num_threads``, ``debug``, ...).

    ## Version History

    * v0: first version (2026-12-02).
    """

    state_dtype = ASTEROIDS_STATE
    single_action_space = spaces.Discrete(5)
    single_observation_space = spaces.Box(-WORLD, WORLD, (OBS_SIZE,), np.float32)
    default_max_episode_steps = 500
    kernel_params = ("hit_reward", "crash_reward")

    def __init__(self, num_envs: int | None = None, *, hit_reward: float = 1.0,
                 crash_reward: float = -1.0, **kwargs: Any) -> None:
        self.hit_reward, self.crash_reward = float(hit_reward), float(crash_reward)
        super().__init__(num_envs, **kwargs)

    @staticmethod
    def reset_env(p, s, i):
        s.ship_x[i], s.ship_y[i] = HALF, HALF
        s.ship_vx[i], s.ship_vy[i] = 0.0, 0.0
        s.heading[i], s.cooldown[i] = 0, 0
        for j in range(B):
            s.bullet_x[i, j], s.bullet_y[i, j] = 0.0, 0.0
            s.bullet_vx[i, j], s.bullet_vy[i, j] = 0.0, 0.0
            s.bullet_life[i, j] = 0
        for k in range(K):
            s.rock_x[i, k], s.rock_y[i, k] = 0.0, 0.0
            s.rock_vx[i, k], s.rock_vy[i, k] = 0.0, 0.0
            s.rock_size[i, k] = 0
        for k in range(N_START):
            s.rock_x[i, k] = wrap(HALF + perenv.uniform(s, i, SAFE, WORLD - SAFE))
            s.rock_y[i, k] = perenv.uniform(s, i, 0.0, WORLD)
            d = perenv.integers(s, i, 0, N_DIRS)
            s.rock_vx[i, k], s.rock_vy[i, k] = ROCK_VX[3, d], ROCK_VY[3, d]
            s.rock_size[i, k] = 3

    @staticmethod
    def step_env(p, s, i, action):
        steer_ship(s, i, action)
        move_bullets(s, i)
        fire(s, i, action)
        move_rocks(s, i)
        reward = shoot_rocks(s, i) * p.hit_reward
        if ship_crashed(s, i):
            return reward + p.crash_reward, True
        return reward, cleared(s, i)

    @staticmethod
    def observe_env(p, s, i, obs):
        x, y = s.ship_x[i], s.ship_y[i]
        h = s.heading[i]
        obs[0], obs[1], obs[2], obs[3] = x, y, s.ship_vx[i], s.ship_vy[i]
        obs[4], obs[5], obs[6] = DIR_X[h], DIR_Y[h], s.cooldown[i]
        for k in range(K):
            at = ROCKS_AT + 5 * k
            if s.rock_size[i, k] > 0:
                obs[at] = torus_delta(s.rock_x[i, k], x)
                obs[at + 1] = torus_delta(s.rock_y[i, k], y)
                obs[at + 2], obs[at + 3] = s.rock_vx[i, k], s.rock_vy[i, k]
                obs[at + 4] = s.rock_size[i, k]
            else:
                obs[at:at + 5] = 0.0
        for j in range(B):
            at = BULLETS_AT + 3 * j
            if s.bullet_life[i, j] > 0:
                obs[at] = torus_delta(s.bullet_x[i, j], x)
                obs[at + 1] = torus_delta(s.bullet_y[i, j], y)
                obs[at + 2] = s.bullet_life[i, j]
            else:
                obs[at:at + 3] = 0.0
