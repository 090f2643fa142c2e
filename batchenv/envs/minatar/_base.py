"""What the five MinAtar games share: spaces, sticky actions, the random words of a step,
rendering with MinAtar's palette, and the ``MinAtarEnv`` base class.

Reference: MinAtar 1.0.15 (Young & Tian, 2019), ``minatar/environment.py`` (``Environment``:
sticky actions, 6 actions), ``minatar/gym.py`` (Gymnasium ids, the ``rgb_array`` palette)
and ``minatar/gui.py``. Each game is one module with its rules written once, as per-env
kernels (``reset_env``, ``step_env``, ``observe_env``: the rules of one env, row ``i``, as
MinAtar's ``act()`` reads; :mod:`batchenv.perenv` compiles them into one loop over the
batch); this module holds only the rule functions they share and the plumbing.

**Random words.** Every random decision of a MinAtar game is a function of one 64-bit word
of the env's own stream (:func:`batchenv.perenv.bits`: the words
:class:`batchenv.random.BatchRandom` gives that row). The conversions, which
``tests/minatar_parity.py`` reimplements to drive the reference:

* ``rand()`` (uniform in [0, 1)) is ``(word >> 11) * 2**-53`` (:func:`batchenv.perenv.random`),
  so ``rand() < p`` is the same comparison as MinAtar's;
* ``randint(low, high)`` is ``low + word % (high - low)`` (:func:`batchenv.perenv.integers`).

A step draws its sticky-action word first, then the words of the step's events in the
reference's order; a draw that the reference makes only on an event (a spawn, a crossing)
is made only then (Seaquest alone draws a fixed block every step). A row's stream depends
on its own history only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar, Generic, TypeVar

import numpy as np
from gymnasium import spaces

from batchenv import perenv
from batchenv.core import BatchEnv
from batchenv.rendering import render_tiled
from batchenv.state import Field, Range, State

__all__ = ["MinAtarEnv", "MinAtarState", "ACTIONS", "GRID", "LAST", "Coordinate", "Heading",
           "cubehelix_palette", "minatar_palette", "sticky_action_env", "clear_board",
           "paint_table_row"]

#: MinAtar's six actions, in its ``action_map`` order (``minatar/environments/*.py``).
ACTIONS = ("n", "l", "u", "r", "d", "f")
NOOP, LEFT, UP, RIGHT, DOWN, FIRE = range(6)
GRID = 10  # the 10 x 10 board of every game
LAST = GRID - 1  # the last row and column of the board
ROW_BITS = GRID  # a board row as a row mask: bit x is column x
ROW_MASKS = 1 << ROW_BITS  # the row masks of a board row, 0 to 1023 (an index of row tables)

# Field types the games' states share, with their valid ranges (batchenv.state.Range).
#: A board row or column, 0-9: the kernels index the observation with it.
Coordinate = Annotated[Field[np.int8], Range(0, LAST)]
#: A heading along one axis: -1 or +1 (0 is in the range as a value the rules survive, a
#: thing that stays put; each game's check_state refuses it where MinAtar has none).
Heading = Annotated[Field[np.int8], Range(-1, 1)]


# ---------------------------------------------------------------- rules every game calls
@perenv.rule
def sticky_action_env(p: Any, s: Any, i: int, action: int) -> int:
    """MinAtar's ``Environment.act`` for row ``i``: the agent's action through the action
    set, then the sticky draw (step word 0, drawn whatever the probability): ``if rand() <
    sticky_action_prob: a = last_action``, then ``last_action = a``. Returns the MinAtar
    action applied (an index into :data:`ACTIONS`)."""
    a = p.action_set[action]
    if perenv.random(s, i) < p.sticky_action_prob:
        a = s.last_action[i]
    s.last_action[i] = a
    return a


# An env's observation (10, 10, C) bools written as uint64 words of 8 cells (perenv.words):
# an observe_env clears a board in 10 * C / 8 stores per row, and copies rows from tables of
# row images (games whose board row of 10 * C cells is a multiple of 8 bytes).
@perenv.rule
def clear_board(obs: np.ndarray) -> None:
    """Every cell of one env's observation to False, a word of 8 cells at a time (a board of
    a multiple of 8 cells and channels: Freeway's 700 clears with ``obs[:] = False``).
    Compiled, its size is read from ``obs``, and the loop is a call of memset: a board
    painted row by row from a module-level table (:func:`paint_table_row`) is a few stores
    per row instead, and no call in the compiled step (Asterix and Breakout paint theirs so:
    docs/performance.md, "Per-env kernels: the step around the rules", "Views without
    calls")."""
    words = perenv.words(obs)
    for k in range(len(words)):
        words[k] = 0


@perenv.rule
def paint_table_row(obs: np.ndarray, y: int, table: np.ndarray, code: np.uint64) -> None:
    """Board row ``y`` of one env's observation set to row ``code`` of ``table`` (a table
    of row images, ``(codes, words per board row)`` uint64: the row's cells as uint64
    words). ``code`` must be a row of the table (the state's ranges see to it; unsigned:
    no wraparound). For a module-level table the width is a constant of the compiled code:
    a few stores, where a loop over a width read from ``obs`` becomes a call of memset."""
    words = perenv.words(obs)
    width = table.shape[1]
    first = y * width
    for k in range(width):
        words[first + k] = table[code, k]


# ---------------------------------------------------------------- rendering
def cubehelix_palette(n_colors: int) -> np.ndarray:
    """``seaborn.color_palette("cubehelix", n_colors)`` as an ``(n_colors, 3)`` float array,
    computed without seaborn: seaborn samples matplotlib's ``cubehelix`` colormap at
    ``linspace(0, 1, n + 2)[1:-1]``; that colormap is a 256-entry table of Green's cubehelix
    (D. A. Green, "A colour scheme for the display of astronomical intensity images", Bull.
    Astr. Soc. India 39, 289, 2011) with matplotlib's defaults gamma=1, s=0.5, r=-1.5, h=1
    (``matplotlib._cm._cubehelix``).
    ``tests/test_minatar_env.py::test_palette_is_seaborns_cubehelix`` checks it against
    seaborn."""
    x = np.linspace(0, 1, n_colors + 2)[1:-1]
    t = np.minimum((x * 256).astype(int), 255) / 255.0  # the colormap's table entry
    amp = t * (1 - t) / 2
    phi = 2 * np.pi * (0.5 / 3 - 1.5 * t)
    cos, sin = np.cos(phi), np.sin(phi)
    rgb = np.stack([t + amp * (-0.14861 * cos + 1.78277 * sin),
                    t + amp * (-0.29227 * cos - 0.90649 * sin),
                    t + amp * (1.97294 * cos)], axis=1)
    return np.clip(rgb, 0, 1)


def minatar_palette(n_channels: int) -> np.ndarray:
    """MinAtar's display palette as uint8 RGB, ``(n_channels + 1, 3)``: black for an empty
    cell, then channel c's cubehelix colour (``minatar/gym.py``, ``render_mode="rgb_array"``:
    a cell shows the colour of its highest set channel)."""
    colours = np.vstack([np.zeros((1, 3)), cubehelix_palette(n_channels)])
    return np.round(colours * 255).astype(np.uint8)


class MinAtarState(State):
    """The field every MinAtar game's state has (a game's typed state subclasses this).

    Each field declares its valid range (:class:`~batchenv.state.Range`): ``set_state``
    refuses anything outside, and any state inside the ranges (and the game's
    ``check_state``) is safe to step, and steps to a state inside them again."""

    # the action applied last step (MinAtar's Environment.last_action; 0 before any step):
    # an index into ACTIONS (SpaceInvaders and Seaquest look their moves up by it)
    last_action: Annotated[Field[np.int8], Range(0, len(ACTIONS) - 1)]


S = TypeVar("S", bound=MinAtarState)


# ---------------------------------------------------------------- the base class
class MinAtarEnv(BatchEnv[S], Generic[S]):
    """Base of the MinAtar games: spaces, sticky actions, the minimal action set and
    rendering. A game sets :attr:`game`, :attr:`channels`, :attr:`minimal_actions`,
    :attr:`step_words`, :attr:`reset_words` and its state (a :class:`MinAtarState`
    subclass as ``state_type``, its fields' ranges declared), and writes its rules as
    per-env kernels ``reset_env``, ``step_env``, ``observe_env`` (:mod:`batchenv.perenv`;
    they read :attr:`kernel_params`, and ``step_env`` calls :func:`sticky_action_env`
    first).

    Args:
        num_envs: envs in the batch.
        difficulty_ramping: MinAtar's ``difficulty_ramping`` (default True; games without
            a ramp ignore it).
        sticky_action_prob: probability that an env repeats its last applied action
            instead of the given one (MinAtar's ``sticky_action_prob``, default 0.1).
        minimal_action_set: actions are indices into MinAtar's ``minimal_action_set()``
            (the ``-v1`` ids) instead of its 6 actions (``-v0``).
        render_scale: pixels per board cell of ``rgb_array`` frames (default 8).
        kernels: ``"numba"`` (the game's per-env kernels compiled by
            :mod:`batchenv.perenv` into one loop over the batch; needs ``pip install
            "batchenv[fast]"``), ``"python"`` (the same kernels as a Python loop: the same
            results, slow, debuggable) or ``"auto"`` (default: numba when it is installed,
            else the Python loop, with a warning). The first env of a game in a process
            compiles its loops (seconds). ``env.kernels`` tells which one runs;
            ``num_threads=`` (a :class:`~batchenv.BatchEnv` option) runs the compiled loop
            on threads. A game's rules are written once, in this form: ``"numpy"`` is a
            ValueError.
        **kwargs: :class:`~batchenv.BatchEnv` options.
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array", "ansi"], "render_fps": 10}
    observe_fills_out = True
    #: MinAtar's module name (``minatar/environments/<game>.py``).
    game: ClassVar[str]
    #: Channel names in MinAtar's order (its ``self.channels``).
    channels: ClassVar[tuple[str, ...]]
    #: MinAtar's ``minimal_action_set()``: indices into :data:`ACTIONS`.
    minimal_actions: ClassVar[tuple[int, ...]]
    #: Random words a row draws each step (word 0: the sticky-action draw) and per reset,
    #: for the docs and ``tests/minatar_parity.py``.
    step_words: ClassVar[int] = 1
    reset_words: ClassVar[int] = 0
    #: The words drawn only on a game's events, for the docs.
    event_words: ClassVar[str] = ""
    #: One character per channel for ``ansi`` frames (a cell shows its highest channel).
    ansi_chars: ClassVar[str] = "123456789"
    #: What the per-env kernels read as ``p.<name>`` (:mod:`batchenv.perenv`); a game adds
    #: its own.
    kernel_params: ClassVar[tuple[str, ...]] = ("action_set", "sticky_action_prob",
                                                "difficulty_ramping")

    def __init__(self, num_envs: int | None = None, *, difficulty_ramping: bool = True,
                 sticky_action_prob: float = 0.1, minimal_action_set: bool = False,
                 render_scale: int = 8, kernels: str = "auto", **kwargs: Any) -> None:
        if not isinstance(sticky_action_prob, (int, float, np.floating)) or isinstance(
                sticky_action_prob, bool) or not 0.0 <= sticky_action_prob <= 1.0:
            raise ValueError(f"sticky_action_prob must be a number in [0, 1], got "
                             f"{sticky_action_prob!r}")
        if not isinstance(render_scale, (int, np.integer)) or render_scale < 1:
            raise ValueError(f"render_scale must be a positive int, got {render_scale!r}")
        self.difficulty_ramping = bool(difficulty_ramping)
        self.sticky_action_prob = float(sticky_action_prob)
        self.minimal_action_set = bool(minimal_action_set)
        self.render_scale = int(render_scale)
        self.action_set = np.array(self.minimal_actions if minimal_action_set else range(6),
                                   dtype=np.int8)
        n_channels = len(self.channels)
        self.single_action_space = spaces.Discrete(len(self.action_set))
        self.single_observation_space = spaces.Box(0, 1, (GRID, GRID, n_channels), bool)
        super().__init__(num_envs, kernels=kernels, **kwargs)
        self.palette = minatar_palette(n_channels)

    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: Mapping[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """As :meth:`BatchEnv.reset`. MinAtar keeps ``last_action`` across episodes (its
        ``reset`` does not touch it), and so do we; an env given a seed here starts afresh
        (``last_action`` 0, as a new MinAtar ``Environment``), so that a seed alone decides
        an episode."""
        obs, info = super().reset(seed=seed, options=options)
        if seed is not None:
            fresh = np.ones(self.num_envs, dtype=bool)
            if not isinstance(seed, (int, np.integer)):
                fresh = np.array([x is not None for x in seed], dtype=bool)
            if options is not None and "reset_mask" in options:
                fresh &= options["reset_mask"]
            self.state.last_action[fresh] = 0
        return obs, info

    # ------------------------------------------------------------ rendering
    def render_envs(self, s: S) -> np.ndarray | list[str]:
        """``rgb_array``: ``(len(s), 10 * render_scale, 10 * render_scale, 3)`` uint8 frames
        in MinAtar's palette; ``ansi``: one string per env."""
        if self.render_mode == "ansi":
            return self.ansi(s)
        return self.frames(s)

    def _observations(self, s: S) -> np.ndarray:
        out = np.empty((len(s), GRID, GRID, len(self.channels)), dtype=bool)
        self.observe(s, out)
        return out

    def labels(self, s: S | None = None) -> np.ndarray:
        """``(len(s), 10, 10)`` cell labels: 0 empty, else 1 + the highest set channel
        (MinAtar's ``numerical_state``)."""
        s = self.state if s is None else s
        obs = self._observations(s)
        weights = np.arange(1, len(self.channels) + 1, dtype=np.uint8)
        return (obs * weights).max(axis=-1)

    def frames(self, s: S | None = None) -> np.ndarray:
        """RGB frames of the rows of ``s`` (default: every env) in MinAtar's palette."""
        k = self.render_scale
        img = self.palette[self.labels(s)]
        return img.repeat(k, axis=1).repeat(k, axis=2) if k > 1 else img

    def ansi(self, s: S | None = None) -> list[str]:
        """Text frames: a character per cell for its highest channel (``.`` empty) and a
        legend line."""
        chars = np.array(["."] + list(self.ansi_chars[:len(self.channels)]))[self.labels(s)]
        legend = " ".join(f"{c}={name}" for c, name in zip(self.ansi_chars, self.channels))
        return ["\n".join("".join(row) for row in frame) + "\n" + legend + "\n"
                for frame in chars]

    def render_tiled(self, k: int | None = None, cols: int | None = None,
                     gap: int = 4) -> np.ndarray:
        """One RGB image of the first ``k`` envs (default: all, at most 64) on a grid of
        ``cols`` columns, ``gap`` black pixels apart. Works with any ``render_mode``."""
        return render_tiled(self, self.frames, k, cols, gap)

