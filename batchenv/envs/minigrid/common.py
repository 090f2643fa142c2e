"""MiniGrid's objects, actions, view and rules for one env, as scalar code over arrays.

Shared by every MiniGrid family (one module per family holds its generator). The rules are
written in the per-env kernel form: ``step_env(p, s, i, action)`` advances row ``i`` of the
state ``s`` (one array per field over the batch), ``observe_partial(p, s, i, obs)`` writes
row ``i``'s 7x7x3 egocentric view into ``obs``. They follow ``minigrid`` 3.x
(``minigrid/core/grid.py``, ``world_object.py``, ``minigrid_env.py``) word for word; the
parity tests (``tests/test_minigrid.py``) compare them with ``minigrid`` at every step.

Grid storage is ``minigrid``'s encoding: ``grid[i, x, y] = (type, colour, state)`` with
``minigrid``'s indices (``OBJECT_TO_IDX``, ``COLOR_TO_IDX``; door state 0 open, 1 closed,
2 locked), an empty cell being ``(EMPTY, 0, 0)``, so that the observation is a copy of
cells. A box's contents live in ``contains[i, x, y] = (type, colour)`` (type 0: nothing).
"""

from __future__ import annotations

import numpy as np

from batchenv import perenv

# minigrid/core/constants.py
UNSEEN, EMPTY, WALL, FLOOR, DOOR, KEY, BALL, BOX, GOAL, LAVA, AGENT = range(11)
RED, GREEN, BLUE, PURPLE, YELLOW, GREY = range(6)
COLOR_NAMES = ("red", "green", "blue", "purple", "yellow", "grey")
OBJECT_NAMES = ("unseen", "empty", "wall", "floor", "door", "key", "ball", "box", "goal",
                "lava", "agent")
OPEN, CLOSED, LOCKED = 0, 1, 2
#: minigrid's DIR_TO_VEC: 0 right (+x), 1 down (+y), 2 left, 3 up
DIR_DX = np.array([1, 0, -1, 0], dtype=np.int64)
DIR_DY = np.array([0, 1, 0, -1], dtype=np.int64)
#: minigrid's ``COLOR_NAMES`` (sorted by name: blue, green, grey, purple, red, yellow) as
#: colour indices: what ``_rand_color`` and ``_rand_elem(COLOR_NAMES)`` pick from
SORTED_COLORS = np.array([BLUE, GREEN, GREY, PURPLE, RED, YELLOW], dtype=np.int64)
# Actions (minigrid's Actions enum)
LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE, DONE = range(7)
VIEW = 7  # agent_view_size, minigrid's default

# --------------------------------------------------------------------------- random draws
# Row i's stream, word for word as BatchRandom draws it (batchenv.perenv): ``integers(s, i,
# low, high)`` is minigrid's ``_rand_int(low, high)``, uniform in [low, high).
bits = perenv.bits
integers = perenv.integers


@perenv.rule
def rand_color(s, i):  # type: ignore[no-untyped-def]
    """minigrid's ``_rand_color()``: one of ``COLOR_NAMES``, as a colour index."""
    return SORTED_COLORS[integers(s, i, 0, 6)]


# --------------------------------------------------------------------------- objects
@perenv.rule
def can_overlap(t, st):  # type: ignore[no-untyped-def]
    """minigrid's ``WorldObj.can_overlap``: empty, floor, goal, lava and open doors."""
    return t == EMPTY or t == FLOOR or t == GOAL or t == LAVA or (t == DOOR and st == OPEN)


@perenv.rule
def can_pickup(t):  # type: ignore[no-untyped-def]
    return t == KEY or t == BALL or t == BOX


@perenv.rule
def see_behind(t, st):  # type: ignore[no-untyped-def]
    """Walls and closed or locked doors block the view."""
    return not (t == WALL or (t == DOOR and st != OPEN))


@perenv.rule
def clear_grid(s, i):  # type: ignore[no-untyped-def]
    s.grid[i, :, :, 0] = EMPTY
    s.grid[i, :, :, 1] = 0
    s.grid[i, :, :, 2] = 0
    s.contains[i] = 0
    s.carry[i] = 0
    s.step_count[i] = 0


@perenv.rule
def put(s, i, x, y, t, c, st):  # type: ignore[no-untyped-def]
    s.grid[i, x, y, 0] = t
    s.grid[i, x, y, 1] = c
    s.grid[i, x, y, 2] = st


@perenv.rule
def wall_rect(s, i, x0, y0, w, h):  # type: ignore[no-untyped-def]
    """``Grid.wall_rect``: the outline of a rectangle in grey walls."""
    for x in range(x0, x0 + w):
        put(s, i, x, y0, WALL, GREY, 0)
        put(s, i, x, y0 + h - 1, WALL, GREY, 0)
    for y in range(y0, y0 + h):
        put(s, i, x0, y, WALL, GREY, 0)
        put(s, i, x0 + w - 1, y, WALL, GREY, 0)


@perenv.rule
def vert_wall(s, i, x, y0, length):  # type: ignore[no-untyped-def]
    for y in range(y0, y0 + length):
        put(s, i, x, y, WALL, GREY, 0)


@perenv.rule
def horz_wall(s, i, x0, y, length):  # type: ignore[no-untyped-def]
    for x in range(x0, x0 + length):
        put(s, i, x, y, WALL, GREY, 0)


@perenv.rule
def try_place_obj(s, i, width, height, x0, y0, w, h, max_tries):  # type: ignore[no-untyped-def]
    """``MiniGridEnv.place_obj``'s search: draw x then y in the rectangle (its top clamped to
    the grid) until an empty cell that is not the agent's; returns the cell as
    ``x * 65536 + y`` (the caller writes the object), or -1 when ``max_tries + 1`` draws
    failed (minigrid raises then; ``max_tries < 0``: no limit, minigrid's default)."""
    x0 = max(x0, 0)
    y0 = max(y0, 0)
    tries = 0
    while True:
        if max_tries >= 0 and tries > max_tries:
            return -1
        tries += 1
        x = integers(s, i, x0, min(x0 + w, width))
        y = integers(s, i, y0, min(y0 + h, height))
        if s.grid[i, x, y, 0] != EMPTY:
            continue
        if x == s.agent_x[i] and y == s.agent_y[i]:
            continue
        return x * 65536 + y


@perenv.rule
def place_obj(s, i, width, height, x0, y0, w, h):  # type: ignore[no-untyped-def]
    """``MiniGridEnv.place_obj`` without a limit of tries: the cell as ``x * 65536 + y``."""
    return try_place_obj(s, i, width, height, x0, y0, w, h, -1)


@perenv.rule
def place_obj_not_next_to_agent(s, i, width, height, x0, y0, w, h):  # type: ignore[no-untyped-def]
    """``place_obj`` with ``roomgrid.reject_next_to``: not within Manhattan distance 1 of
    the agent."""
    while True:
        xy = place_obj(s, i, width, height, x0, y0, w, h)
        if abs(s.agent_x[i] - xy // 65536) + abs(s.agent_y[i] - xy % 65536) >= 2:
            return xy


@perenv.rule
def place_agent(s, i, width, height, x0, y0, w, h):  # type: ignore[no-untyped-def]
    """``MiniGridEnv.place_agent``: an empty cell, then a direction in [0, 4)."""
    s.agent_x[i] = -1
    s.agent_y[i] = -1
    xy = place_obj(s, i, width, height, x0, y0, w, h)
    s.agent_x[i] = xy // 65536
    s.agent_y[i] = xy % 65536
    s.agent_dir[i] = integers(s, i, 0, 4)


# --------------------------------------------------------------------------- rules
@perenv.rule
def step_env(p, s, i, action):  # type: ignore[no-untyped-def]
    """``MiniGridEnv.step`` for row ``i``: returns ``(reward, terminated)``."""
    s.step_count[i] += 1
    reward = 0.0
    terminated = False
    d = s.agent_dir[i]
    fx = s.agent_x[i] + DIR_DX[d]
    fy = s.agent_y[i] + DIR_DY[d]
    if action == LEFT:
        s.agent_dir[i] = (d + 3) % 4
    elif action == RIGHT:
        s.agent_dir[i] = (d + 1) % 4
    elif action == FORWARD:
        reward, terminated = forward(p, s, i, fx, fy)
    elif action == PICKUP:
        pickup(s, i, fx, fy)
    elif action == DROP:
        drop(s, i, fx, fy)
    elif action == TOGGLE:
        toggle(s, i, fx, fy)
    return reward, terminated


@perenv.rule
def forward(p, s, i, fx, fy):  # type: ignore[no-untyped-def]
    """``Actions.forward``: into the cell ahead ``(fx, fy)`` if it can be overlapped; a
    goal ends the episode with ``1 - 0.9 * step_count / max_steps``, lava with 0.
    Returns ``(reward, terminated)``."""
    t = s.grid[i, fx, fy, 0]
    if can_overlap(t, s.grid[i, fx, fy, 2]):
        s.agent_x[i] = fx
        s.agent_y[i] = fy
    if t == GOAL:
        return 1.0 - 0.9 * (s.step_count[i] / p.max_steps), True
    return 0.0, t == LAVA


@perenv.rule
def pickup(s, i, fx, fy):  # type: ignore[no-untyped-def]
    """``Actions.pickup``: an object ahead that can be picked up goes into empty hands
    (with what it contains) and leaves its cell empty."""
    t = s.grid[i, fx, fy, 0]
    if can_pickup(t) and s.carry[i, 0] == 0:
        s.carry[i, 0] = t
        s.carry[i, 1] = s.grid[i, fx, fy, 1]
        s.carry[i, 2] = s.grid[i, fx, fy, 2]
        s.carry[i, 3] = s.contains[i, fx, fy, 0]
        s.carry[i, 4] = s.contains[i, fx, fy, 1]
        put(s, i, fx, fy, EMPTY, 0, 0)
        s.contains[i, fx, fy, 0] = 0
        s.contains[i, fx, fy, 1] = 0


@perenv.rule
def drop(s, i, fx, fy):  # type: ignore[no-untyped-def]
    """``Actions.drop``: what the agent carries goes into the empty cell ahead."""
    if s.grid[i, fx, fy, 0] == EMPTY and s.carry[i, 0] != 0:
        put(s, i, fx, fy, s.carry[i, 0], s.carry[i, 1], s.carry[i, 2])
        s.contains[i, fx, fy, 0] = s.carry[i, 3]
        s.contains[i, fx, fy, 1] = s.carry[i, 4]
        s.carry[i] = 0


@perenv.rule
def toggle(s, i, fx, fy):  # type: ignore[no-untyped-def]
    """``Actions.toggle`` on the cell ahead: ``Door.toggle`` (a locked door opens for a key
    of its colour; an unlocked one opens or closes) and ``Box.toggle`` (the box is replaced
    by its contents, or nothing)."""
    t = s.grid[i, fx, fy, 0]
    st = s.grid[i, fx, fy, 2]
    if t == DOOR:
        if st == LOCKED:
            if s.carry[i, 0] == KEY and s.carry[i, 1] == s.grid[i, fx, fy, 1]:
                s.grid[i, fx, fy, 2] = OPEN
        else:
            s.grid[i, fx, fy, 2] = CLOSED if st == OPEN else OPEN
    elif t == BOX:
        ct = s.contains[i, fx, fy, 0]
        if ct == 0:
            put(s, i, fx, fy, EMPTY, 0, 0)
        else:
            put(s, i, fx, fy, ct, s.contains[i, fx, fy, 1], 0)
        s.contains[i, fx, fy, 0] = 0
        s.contains[i, fx, fy, 1] = 0


@perenv.rule
def observe_partial(p, s, i, obs):  # type: ignore[no-untyped-def]
    """``MiniGridEnv.gen_obs()["image"]``: the 7x7x3 egocentric view, indexed ``[x, y]``
    of the view (the agent at ``(3, 6)`` facing up), with ``see_through_walls=False``
    occlusion (``Grid.process_vis``) and the carried object in the agent's cell."""
    gather_view(p, s, i, obs)  # obs doubles as the view grid: gather, then mask in place
    hide_unseen(obs, visible_cells(p, obs))
    show_carried(s, i, obs)


@perenv.rule
def gather_view(p, s, i, obs):  # type: ignore[no-untyped-def]
    """``Grid.slice`` + ``rotate_left``: the cells of the view into ``obs``, outside the
    grid as grey wall."""
    d = s.agent_dir[i]
    fdx = DIR_DX[d]
    fdy = DIR_DY[d]
    rdx = -fdy  # the agent's right
    rdy = fdx
    ax = s.agent_x[i]
    ay = s.agent_y[i]
    for vx in range(VIEW):
        for vy in range(VIEW):
            ahead = VIEW - 1 - vy
            side = vx - VIEW // 2
            wx = ax + fdx * ahead + rdx * side
            wy = ay + fdy * ahead + rdy * side
            if 0 <= wx < p.width and 0 <= wy < p.height:
                obs[vx, vy, 0] = s.grid[i, wx, wy, 0]
                obs[vx, vy, 1] = s.grid[i, wx, wy, 1]
                obs[vx, vy, 2] = s.grid[i, wx, wy, 2]
            else:  # Grid.slice: outside the grid is wall
                obs[vx, vy, 0] = WALL
                obs[vx, vy, 1] = GREY
                obs[vx, vy, 2] = 0


@perenv.rule
def visible_cells(p, obs):  # type: ignore[no-untyped-def]
    """``Grid.process_vis``: the cells of the view the agent sees, as a mask packed in one
    int (bit ``x * 7 + y``); light spreads from the agent's cell, row by row away from it,
    through cells that can be seen behind."""
    mask = 1 << ((VIEW // 2) * VIEW + VIEW - 1)
    if p.see_through_walls:  # minigrid then shows the whole view
        mask = (1 << (VIEW * VIEW)) - 1
    for j in range(VIEW - 1, -1, -1):
        for x in range(VIEW - 1):
            mask = spread_visibility(obs, mask, x, j, x + 1)
        for x in range(VIEW - 1, 0, -1):
            mask = spread_visibility(obs, mask, x, j, x - 1)
    return mask


@perenv.rule
def spread_visibility(obs, mask, x, j, nx):  # type: ignore[no-untyped-def]
    """One step of ``Grid.process_vis``: a visible cell ``(x, j)`` that can be seen behind
    makes its neighbour ``(nx, j)`` visible, and on the row beyond, ``(nx, j - 1)`` and
    ``(x, j - 1)``. Returns the mask."""
    if not (mask >> (x * VIEW + j)) & 1:
        return mask
    if not see_behind(obs[x, j, 0], obs[x, j, 2]):
        return mask
    mask |= 1 << (nx * VIEW + j)
    if j > 0:
        mask |= 1 << (nx * VIEW + j - 1)
        mask |= 1 << (x * VIEW + j - 1)
    return mask


@perenv.rule
def hide_unseen(obs, mask):  # type: ignore[no-untyped-def]
    """The cells outside ``mask`` (:func:`visible_cells`) become ``(UNSEEN, 0, 0)``."""
    for x in range(VIEW):
        for j in range(VIEW):
            if not (mask >> (x * VIEW + j)) & 1:
                obs[x, j, 0] = UNSEEN
                obs[x, j, 1] = 0
                obs[x, j, 2] = 0


@perenv.rule
def show_carried(s, i, obs):  # type: ignore[no-untyped-def]
    """The agent's cell of the view shows what it carries (or nothing)."""
    c = VIEW // 2
    if s.carry[i, 0] != 0:
        obs[c, VIEW - 1, 0] = s.carry[i, 0]
        obs[c, VIEW - 1, 1] = s.carry[i, 1]
        obs[c, VIEW - 1, 2] = s.carry[i, 2]
    else:
        obs[c, VIEW - 1, 0] = EMPTY
        obs[c, VIEW - 1, 1] = 0
        obs[c, VIEW - 1, 2] = 0


@perenv.rule
def observe_full(p, s, i, obs):  # type: ignore[no-untyped-def]
    """``FullyObsWrapper``'s image: the whole grid encoded, the agent's cell
    ``(AGENT, red, dir)``."""
    for x in range(p.width):
        for y in range(p.height):
            obs[x, y, 0] = s.grid[i, x, y, 0]
            obs[x, y, 1] = s.grid[i, x, y, 1]
            obs[x, y, 2] = s.grid[i, x, y, 2]
    obs[s.agent_x[i], s.agent_y[i], 0] = AGENT
    obs[s.agent_x[i], s.agent_y[i], 1] = RED
    obs[s.agent_x[i], s.agent_y[i], 2] = s.agent_dir[i]


@perenv.rule
def observe_env(p, s, i, obs):  # type: ignore[no-untyped-def]
    """The observation the env was made with: ``ImgObsWrapper``'s image (``p.full_view``
    False) or ``FullyObsWrapper``'s."""
    if p.full_view:
        observe_full(p, s, i, obs)
    else:
        observe_partial(p, s, i, obs)
