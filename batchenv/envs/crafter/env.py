"""BatchCrafter: crafter 1.8.3 (Hafner, 2021), batched."""

from __future__ import annotations

from collections import namedtuple
from typing import Annotated, Any, ClassVar

import numpy as np
from gymnasium import spaces

from batchenv.core import BatchEnv
from batchenv.envs.crafter import render, rules, worldgen
from batchenv.envs.crafter.data import (
    ACHIEVEMENTS,
    ACTIONS,
    AREA,
    CHUNK,
    COW,
    DOWN,
    GRASS,
    HEALTH,
    ITEM_INITIAL,
    ITEM_MAX,
    ITEMS,
    KINDS,
    LENGTH,
    MATERIALS,
    N_CHUNKS,
    PATH,
    SKELETON,
    ZOMBIE,
)
from batchenv.envs.crafter.world import CAPACITY, chunk_of, enter_chunk
from batchenv.state import Field, Range, State

__all__ = ["BatchCrafter", "CrafterState", "OBS_TYPES"]

OBS_TYPES = ("pixels", "symbolic")
#: the instance attributes the kernels read as p.<name>
_PARAMS = ("pixels", "reward", "night_noise", "tiles", "item_tiles", "day_tiles",
           "day_level", "vignette")
_Params = namedtuple("_Params", _PARAMS)  # type: ignore[misc]  # render_envs' p
_CHUNKS = N_CHUNKS * N_CHUNKS


_CELLS = CHUNK * CHUNK  # a chunk's cells (the last chunks have fewer)
_BIG = 2**31 - 2  # a count or clock's bound (one more step stays an int32)


class CrafterState(State):
    """One crafter world per row (``BatchCrafter.state_dtype`` is made from these
    annotations). Cells are indexed ``[x, y]`` as crafter's maps are (x to the right, y
    down). Every field's :class:`~batchenv.state.Range` is what the kernels are written
    for (any value inside is safe to step); the rules between fields (the object map and
    the slots, the census) are :meth:`BatchCrafter.check_state`'s."""

    # the world (engine.World)
    mat: Annotated[Field[np.uint8], (AREA, AREA), Range(0, len(MATERIALS) - 1)]  # material
    #                                    id per cell (data.MATERIALS)
    occ: Annotated[Field[np.uint8], (AREA, AREA), Range(0, CAPACITY + 1)]  # who is on a
    #                                    cell: 0 nobody, 1 the player, 2 + k object slot k
    #                                    (World._obj_map)
    noise_perm: Annotated[Field[np.uint8], (256,)]  # the world's OpenSimplex permutation
    #                                    (noise.init_perm of its seed: what worldgen read)
    # objects other than the player, in crafter's order (World._objects): slots 0 .. n-1
    n_objects: Annotated[Field[np.int16], Range(0, CAPACITY)]  # slots in use
    kind: Annotated[Field[np.uint8], (CAPACITY,), Range(0, len(KINDS) - 1)]  # data.KINDS;
    #                                    0 free (removed)
    obj_x: Annotated[Field[np.uint8], (CAPACITY,), Range(0, AREA - 1)]  # cell
    obj_y: Annotated[Field[np.uint8], (CAPACITY,), Range(0, AREA - 1)]
    obj_health: Annotated[Field[np.int8], (CAPACITY,), Range(0, 5)]  # hit points (cow 3,
    #                                    zombie 5, skeleton 3, plant 1, arrow 0)
    obj_timer: Annotated[Field[np.int32], (CAPACITY,), Range(0, _BIG)]  # steps: a zombie's
    #                                    cooldown (0-5), a skeleton's reload (0-4), a
    #                                    plant's age (grown)
    obj_dir: Annotated[Field[np.uint8], (CAPACITY,), Range(0, 3)]  # an arrow's direction:
    #                                    0 left, 1 right, 2 up, 3 down
    # chunks (12 x 12 cells; chunk (cx, cy) is 6 cx + cy) in the order crafter's dict has
    # them: the order balancing visits them
    chunk_order: Annotated[Field[np.uint8], (_CHUNKS,), Range(0, _CHUNKS - 1)]
    n_chunks: Annotated[Field[np.uint8], Range(0, _CHUNKS)]
    # each chunk's census, what balancing counts (crafter counts its chunks' object sets
    # and material cells each time): kept up to date by every change of the world
    census: Annotated[Field[np.int16], (_CHUNKS, 3), Range(0, _CELLS)]  # zombies,
    #                                    skeletons, cows
    grass: Annotated[Field[np.int16], (_CHUNKS,), Range(0, _CELLS)]  # grass cells
    path: Annotated[Field[np.int16], (_CHUNKS,), Range(0, _CELLS)]  # path cells
    # the player (objects.Player)
    player_x: Annotated[Field[np.uint8], Range(0, AREA - 1)]  # cell
    player_y: Annotated[Field[np.uint8], Range(0, AREA - 1)]
    facing: Annotated[Field[np.uint8], Range(0, 3)]  # 0 left, 1 right, 2 up, 3 down
    sleeping: Field[np.bool_]
    inventory: Annotated[Field[np.int8], (len(ITEMS),), Range(0, ITEM_MAX)]  # counts,
    #                                    data.ITEMS' order (health, food, drink, energy
    #                                    first)
    achievements: Annotated[Field[np.int32], (len(ACHIEVEMENTS),), Range(0, _BIG)]  # the
    #                                    episode's unlocks, data.ACHIEVEMENTS' (sorted) order
    hunger: Annotated[Field[np.float32], Range(0, 25)]  # steps (halves asleep) since food
    #                                    last dropped
    thirst: Annotated[Field[np.float32], Range(0, 20)]  # likewise for drink
    fatigue: Annotated[Field[np.int8], Range(-10, 30)]  # steps awake (+) or asleep (-)
    recover: Annotated[Field[np.float32], Range(-15, 25)]  # recovery (+) or decay (-)
    #                                    toward a health point, halves while asleep
    last_health: Annotated[Field[np.int8], Range(0, ITEM_MAX)]  # health after the player's
    #                                    last update (Player._last_health: waking when hurt)
    # the clock and the night's noise (Env)
    step: Annotated[Field[np.int32], Range(0, _BIG)]  # crafter's Env._step: steps since
    #                                    the world was made
    noise_key: Field[np.uint64]  # this step's night noise word (0 by day): render.py


class BatchCrafter(BatchEnv[CrafterState]):
    """## Description

    Crafter (Hafner, "Benchmarking the Spectrum of Agent Capabilities", ICLR 2022; the
    ``crafter`` package 1.8.3) for thousands of worlds at once: an open-world survival game
    on a 64 x 64 grid made from simplex noise (grassland with trees, lakes, sand, mountains
    of stone with caves, tunnels, coal, iron, diamonds and lava), a day-night cycle, cows,
    zombies (more at night), skeletons shooting arrows in the tunnels, and 22
    achievements from collecting wood to a diamond. The player must keep its health, food,
    drink and energy up. Every rule is crafter's (``objects.py``, ``env.py``,
    ``worldgen.py``, ``data.yaml``), written once as per-env kernels (``rules.py``,
    ``worldgen.py``); ``tests/test_crafter.py`` compares them with the ``crafter`` package
    step by step from injected states and random draws, and compares worlds and episodes
    as statistics. What differs from crafter, and why, is in ``docs/crafter.md``.

    ## Action Space

    ``Discrete(17)``, crafter's actions: 0 noop, 1-4 move left/right/up/down, 5 do
    (collect, attack, eat, drink), 6 sleep, 7-10 place stone/table/furnace/plant, 11-16 make
    wood/stone/iron pickaxe, wood/stone/iron sword.

    ## Observation Space

    ``obs_type="pixels"`` (default): ``Box(0, 255, (64, 64, 3), uint8)``, crafter's image
    pixel for pixel (``render.py``: the 9 x 7 cells around the player, lit by the time of
    day with crafter's night noise, greyed while asleep, and the inventory below). It uses
    crafter's textures, read from the installed ``crafter`` package (``pip install
    "batchenv[crafter]"``; without it this raises ImportError).
    ``obs_type="symbolic"``: ``Box(0, 1, (1156,), float32)``: per cell of the same 9 x 7
    view (row by row) a one-hot of its material (12) and of its object (cow, zombie,
    skeleton, arrow, plant, ripe plant), then the inventory / 9 (16), the facing (4), the
    daylight and whether asleep (``render.symbolic_layout()``). Needs no textures.

    ## Rewards

    As crafter's: +1 on the step where any achievement is unlocked for the first time in
    the episode (once, however many), plus (change in health) / 10.
    ``CrafterNoReward-v1`` (``reward=False``): always 0.

    ## Starting State

    A new world as crafter's ``worldgen.generate_world`` makes it, drawn from the env's own
    stream: the player in the middle (32, 32) on grass, facing down, with 9 health, food,
    drink and energy; cows on the grass, zombies, skeletons in the tunnels.

    ## Episode End

    Terminated when the player's health reaches 0; truncated after 10,000 steps (crafter's
    ``length``; ``max_episode_steps=``).

    ## Info

    ``info["achievements"]``: int32 ``(num_envs, 22)``, the episode's unlock counts in
    ``sorted(crafter.constants.achievements)`` order; ``info["inventory"]`` int8
    ``(num_envs, 16)`` (health, food, drink, energy first). On the step that ends an
    episode they hold that episode's values.

    ## Arguments

    ``BatchCrafter(num_envs, *, obs_type="pixels", reward=True, night_noise=True,
    **BatchEnv options)``. ``night_noise=False`` darkens nights without the noise.

    ## Version History

    * v1: crafter 1.8.3's rules (crafter's own ``CrafterReward-v1`` /
      ``CrafterNoReward-v1``).
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 10}
    state_type = CrafterState
    single_action_space = spaces.Discrete(len(ACTIONS))
    default_max_episode_steps: ClassVar[int | None] = LENGTH
    kernel_params: ClassVar[tuple[str, ...]] = _PARAMS
    info_fields: ClassVar[dict[str, str]] = {"achievements": "achievements",
                                             "inventory": "inventory"}

    def __init__(self, num_envs: int | None = None, *, obs_type: str = "pixels",
                 reward: bool = True, night_noise: bool = True, **kwargs: Any) -> None:
        if obs_type not in OBS_TYPES:
            raise ValueError(f"obs_type must be one of {OBS_TYPES}, got {obs_type!r}")
        self.obs_type = obs_type
        self.reward = bool(reward)
        self.night_noise = bool(night_noise)
        self.pixels = obs_type == "pixels"
        if self.pixels or kwargs.get("render_mode") == "rgb_array":
            t = render.tables()
            self.tiles, self.item_tiles, self.vignette = t.tiles, t.item_tiles, t.vignette
            self.day_tiles, self.day_level = t.day_tiles, t.day_level
        else:  # (the kernels' pixel branch is never taken: empty tables of the same types)
            self.tiles = np.zeros((0,) * 5, np.uint8)
            self.item_tiles = np.zeros((0,) * 5, np.uint8)
            self.day_tiles = np.zeros((0,) * 7, np.uint8)
            self.day_level = np.zeros(0, np.bool_)
            self.vignette = np.zeros((0, 0))
        if self.pixels:
            self.single_observation_space = spaces.Box(0, 255, (64, 64, 3), np.uint8)
        else:
            self.single_observation_space = spaces.Box(0.0, 1.0, (render.SYMBOLIC_SIZE,),
                                                       np.float32)
        super().__init__(num_envs, **kwargs)
        self.observe_fills_out = True

    # ------------------------------------------------------------------ per-env kernels
    @staticmethod
    def reset_env(p: Any, s: Any, i: int) -> None:
        """``Env.reset``: a new world with the player in its middle."""
        s.step[i] = 0
        s.noise_key[i] = 0
        s.occ[i] = 0
        s.n_objects[i] = 0
        s.kind[i] = 0
        s.obj_x[i] = 0
        s.obj_y[i] = 0
        s.obj_health[i] = 0
        s.obj_timer[i] = 0
        s.obj_dir[i] = 0
        s.chunk_order[i] = 0
        s.n_chunks[i] = 0
        s.census[i] = 0
        c = worldgen.CENTER
        s.player_x[i] = c
        s.player_y[i] = c
        s.facing[i] = DOWN
        s.sleeping[i] = False
        for k in range(len(ITEM_INITIAL)):
            s.inventory[i, k] = ITEM_INITIAL[k]
        s.achievements[i] = 0
        s.hunger[i] = 0
        s.thirst[i] = 0
        s.fatigue[i] = 0
        s.recover[i] = 0
        s.last_health[i] = ITEM_INITIAL[HEALTH]
        enter_chunk(s, i, chunk_of(c, c))  # (the player's cell: generate_world)
        worldgen.generate_world(s, i)

    @staticmethod
    def step_env(p: Any, s: Any, i: int, action: int) -> tuple[float, bool]:
        """``Env.step``: the world's step, then the reward and whether the player died."""
        health = s.inventory[i, HEALTH]
        unlocked = 0
        for k in range(len(ACHIEVEMENTS)):
            if s.achievements[i, k] > 0:
                unlocked += 1
        rules.step_world(s, i, action)
        reward = (s.inventory[i, HEALTH] - health) / 10
        for k in range(len(ACHIEVEMENTS)):
            if s.achievements[i, k] > 0:
                unlocked -= 1
        if unlocked < 0:  # an achievement unlocked for the first time this episode
            reward += 1.0
        dead = s.inventory[i, HEALTH] <= 0
        if not p.reward:
            return 0.0, dead
        return reward, dead

    @staticmethod
    def observe_env(p: Any, s: Any, i: int, obs: np.ndarray) -> None:
        """The image or the symbolic vector (``render.py``)."""
        render.observe(p, s, i, obs)

    # ------------------------------------------------------------------ the rest
    def check_state(self, states: np.ndarray) -> dict[str, np.ndarray]:
        """The rules between fields (each field's range is checked before): the object map
        names the player at its cell and slot k at slot k's cell, nothing else; the slots
        below ``n_objects`` hold objects; the chunk list has no chunk twice; the census is
        the objects' and the material map's."""
        n = len(states)
        problems = {name: np.zeros(n, dtype=bool) for name in (
            "occ is not the player's and the objects' cells",
            "a slot below n_objects is free", "chunk_order names a chunk twice",
            "census, grass or path is not the chunks' count")}
        chunk = (np.arange(AREA)[:, None] // CHUNK) * N_CHUNKS + np.arange(AREA)[None, :] \
            // CHUNK
        for r, rec in enumerate(states):
            k = int(rec["n_objects"])
            kind, x, y = rec["kind"][:k], rec["obj_x"][:k].astype(int), rec["obj_y"][:k]
            occ = np.zeros((AREA, AREA), dtype=np.int64)
            occ[x, y] = np.arange(k) + 2
            occ[rec["player_x"], rec["player_y"]] = 1
            clash = len({(a, b) for a, b in zip(x.tolist(), y.tolist())}
                        | {(int(rec["player_x"]), int(rec["player_y"]))}) != k + 1
            problems["occ is not the player's and the objects' cells"][r] = clash or not \
                np.array_equal(occ, rec["occ"])
            problems["a slot below n_objects is free"][r] = bool((kind == 0).any())
            order = rec["chunk_order"][:int(rec["n_chunks"])]
            problems["chunk_order names a chunk twice"][r] = len(set(order.tolist())) \
                != len(order)
            census = np.zeros((_CHUNKS, 3), dtype=np.int64)
            for column, counted in enumerate((ZOMBIE, SKELETON, COW)):
                np.add.at(census[:, column], chunk[x, y][kind == counted], 1)
            problems["census, grass or path is not the chunks' count"][r] = not (
                np.array_equal(census, rec["census"])
                and np.array_equal(np.bincount(chunk[rec["mat"] == GRASS], minlength=_CHUNKS),
                                   rec["grass"])
                and np.array_equal(np.bincount(chunk[rec["mat"] == PATH], minlength=_CHUNKS),
                                   rec["path"]))
        return problems

    def render_envs(self, s: Any) -> list[np.ndarray]:
        """``rgb_array``: each env's image (crafter's ``render()``), whatever ``obs_type``."""
        out = np.zeros((len(s), 64, 64, 3), np.uint8)
        if self.pixels:
            self.kernel_form.observe(self, s, out)
        else:  # (the pixel kernel as plain Python: slow, for watching)
            p = _Params(*(getattr(self, name) for name in self.kernel_params))
            with np.errstate(over="ignore"):
                for i in range(len(s)):
                    render.observe_pixels(p, s, i, out[i])
        return list(out)
