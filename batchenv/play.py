"""Play BatchPong, a MinAtar game, a MiniGrid env or Crafter with the keyboard, for visual
debugging: ``python -m batchenv play pong``, ``python -m batchenv play minatar-breakout``,
``python -m batchenv play minigrid-doorkey``, ``python -m batchenv play crafter``.

Needs pygame (``pip install "batchenv[play]"`` or ``pip install pygame``). Keys: W/S or the
arrow keys move your (left) paddle against the CPU; in ``two_player`` and ``rally`` modes
W/S move the left paddle and the arrow keys the right one. Esc or closing the window quits;
P pauses. MinAtar games: the arrow keys (or WASD) move, space fires; MinAtar's 6 actions.
MiniGrid envs (:data:`MINIGRID_GAMES`): ``minigrid``'s ``manual_control`` keys (left and
right turn, up goes forward, tab picks up, left shift drops, space toggles, enter is done);
the env steps only while a key is held. Crafter: crafter's own ``run_gui`` keys (WASD move,
space does, tab sleeps, R/T/F/P place stone/table/furnace/plant, 1-6 make the pickaxes and
swords; no key: noop), 5 steps a second; no pause key (P places a plant).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np

from batchenv.envs.pong import DOWN, NOOP, UP, BatchPong

__all__ = ["play_pong", "actions_from_keys", "PongSession", "play_minatar", "MinAtarSession",
           "minatar_action", "MINATAR_GAMES", "play_minigrid", "MiniGridSession",
           "minigrid_action", "MINIGRID_GAMES", "play_crafter", "CrafterSession",
           "crafter_action", "CRAFTER_KEYS"]

#: ``play`` names of the MinAtar games -> their env class names in batchenv.envs.minatar
MINATAR_GAMES = {"minatar-asterix": "BatchAsterix", "minatar-breakout": "BatchBreakout",
                 "minatar-freeway": "BatchFreeway", "minatar-seaquest": "BatchSeaquest",
                 "minatar-space-invaders": "BatchSpaceInvaders"}


#: ``play`` names of MiniGrid envs -> their ids
MINIGRID_GAMES = {"minigrid-doorkey": "MiniGrid-DoorKey-8x8-v0",
                  "minigrid-multiroom": "MiniGrid-MultiRoom-N6-v0",
                  "minigrid-keycorridor": "MiniGrid-KeyCorridorS3R3-v0",
                  "minigrid-dynamic-obstacles": "MiniGrid-Dynamic-Obstacles-8x8-v0",
                  "minigrid-fourrooms": "MiniGrid-FourRooms-v0"}


def _direction(up: bool, down: bool) -> int:
    return NOOP if up == down else (UP if up else DOWN)


def actions_from_keys(pressed: Collection[str], mode: str = "cpu") -> np.ndarray:
    """The batch action (one env) for the keys held down, named ``"w"``, ``"s"``, ``"up"``,
    ``"down"``: ``Discrete`` in ``cpu`` mode (either pair moves the paddle), ``MultiDiscrete``
    (left: W/S, right: arrows) otherwise."""
    if mode == "cpu":
        up = "w" in pressed or "up" in pressed
        down = "s" in pressed or "down" in pressed
        return np.array([_direction(up, down)])
    return np.array([[_direction("w" in pressed, "s" in pressed),
                      _direction("up" in pressed, "down" in pressed)]])


class PongSession:
    """The game loop without a window: one env, keys in, RGB frames and a status line out."""

    def __init__(self, mode: str = "cpu", scale: int = 12, points_to_win: int = 21,
                 seed: int | None = None) -> None:
        self.mode = mode
        self.env = BatchPong(1, mode=mode, render_mode="rgb_array", render_scale=scale,
                             points_to_win=points_to_win)
        self.env.reset(seed=seed)
        self.games = 0
        self.returns = 0.0
        self.message = ""

    def step(self, pressed: Collection[str]) -> np.ndarray:
        """Advance one step with the keys held down; returns the new frame (H, W, 3)."""
        _, reward, terminated, truncated, _ = self.env.step(actions_from_keys(pressed,
                                                                              self.mode))
        self.returns += float(reward[0])
        if terminated[0] or truncated[0]:
            self.games += 1
            self.message = f"game {self.games} over, return {self.returns:+.0f}"
            self.returns = 0.0
        return self.frame()

    def frame(self) -> np.ndarray:
        frames = self.env.render()
        assert frames is not None  # render_mode="rgb_array"
        return frames[0]

    def status(self) -> str:
        s = self.env.state
        score = f"{int(s.score_left[0])} : {int(s.score_right[0])}"
        if self.mode == "rally":
            score = f"rally {int(s.elapsed_steps[0])}"
        return f"BatchPong ({self.mode})  {score}  {self.message}".rstrip()


def play_pong(mode: str = "cpu", fps: int = 30, scale: int = 12, points_to_win: int = 21,
              seed: int | None = None, steps: int | None = None) -> int:
    """Open a window and play; returns 0 (a process exit code)."""
    try:
        import pygame
    except ImportError:
        raise SystemExit('playing needs pygame: pip install "batchenv[play]" '
                         "(or pip install pygame)") from None
    session = PongSession(mode, scale, points_to_win, seed)
    return _window_loop(pygame, session, {pygame.K_w: "w", pygame.K_s: "s",
                                          pygame.K_UP: "up", pygame.K_DOWN: "down"},
                        fps, steps)


def _window_loop(pygame: Any,
                 session: PongSession | MinAtarSession | MiniGridSession | CrafterSession,
                 names: dict[int, str], fps: int, steps: int | None,
                 pause: bool = True) -> int:
    """The pygame loop every game shares: the keys of ``names`` held down go to
    ``session.step`` each frame (P pauses unless ``pause`` is False, Esc or closing the
    window quits); returns 0."""
    frame = session.frame()
    pygame.init()
    try:
        screen = pygame.display.set_mode((frame.shape[1], frame.shape[0]))
        clock = pygame.time.Clock()
        paused, count = False, 0
        while steps is None or count < steps:
            for event in pygame.event.get():
                if event.type == pygame.QUIT or (event.type == pygame.KEYDOWN
                                                 and event.key == pygame.K_ESCAPE):
                    return 0
                if pause and event.type == pygame.KEYDOWN and event.key == pygame.K_p:
                    paused = not paused
            if not paused:
                keys = pygame.key.get_pressed()
                frame = session.step({name for key, name in names.items() if keys[key]})
                count += 1
            pygame.surfarray.blit_array(screen, frame.transpose(1, 0, 2))
            pygame.display.set_caption(session.status() + ("  [paused]" if paused else ""))
            pygame.display.flip()
            clock.tick(fps)
    finally:
        pygame.quit()
    return 0


def minatar_action(pressed: Collection[str]) -> int:
    """MinAtar's action (0 n, 1 l, 2 u, 3 r, 4 d, 5 f) for the keys held down, named
    ``"left"``, ``"up"``, ``"right"``, ``"down"`` (or ``"a"``, ``"w"``, ``"d"``, ``"s"``) and
    ``"space"``; fire wins over a move, and a move over nothing."""
    if "space" in pressed:
        return 5
    for action, keys in ((1, ("left", "a")), (3, ("right", "d")), (2, ("up", "w")),
                         (4, ("down", "s"))):
        if any(k in pressed for k in keys):
            return action
    return 0


class MinAtarSession:
    """A MinAtar game loop without a window: one env, keys in, RGB frames out."""

    def __init__(self, game: str, scale: int = 40, seed: int | None = None,
                 sticky_action_prob: float = 0.0) -> None:
        import batchenv.envs.minatar as minatar

        names = [name for name in MINATAR_GAMES if hasattr(minatar, MINATAR_GAMES[name])]
        if game not in names:
            raise ValueError(f"game must be one of {names}, got {game!r}")
        cls = getattr(minatar, MINATAR_GAMES[game])
        self.game = game
        self.env = cls(1, render_mode="rgb_array", render_scale=scale,
                       sticky_action_prob=sticky_action_prob)
        self.env.reset(seed=seed)
        self.returns = 0.0
        self.games = 0
        self.message = ""

    def step(self, pressed: Collection[str]) -> np.ndarray:
        _, reward, terminated, truncated, _ = self.env.step(np.array([minatar_action(pressed)]))
        self.returns += float(reward[0])
        if terminated[0] or truncated[0]:
            self.games += 1
            self.message = f"game {self.games} over, return {self.returns:.0f}"
            self.returns = 0.0
        return self.frame()

    def frame(self) -> np.ndarray:
        return self.env.render()[0]

    def status(self) -> str:
        return f"{self.game}  return {self.returns:.0f}  {self.message}".rstrip()


def play_minatar(game: str, fps: int = 8, scale: int = 40, seed: int | None = None,
                 steps: int | None = None, sticky_action_prob: float = 0.0) -> int:
    """Open a window and play a MinAtar game; returns 0 (a process exit code)."""
    try:
        import pygame
    except ImportError:
        raise SystemExit('playing needs pygame: pip install "batchenv[play]" '
                         "(or pip install pygame)") from None
    session = MinAtarSession(game, scale, seed, sticky_action_prob)
    names = {pygame.K_LEFT: "left", pygame.K_RIGHT: "right", pygame.K_UP: "up",
             pygame.K_DOWN: "down", pygame.K_a: "a", pygame.K_d: "d", pygame.K_w: "w",
             pygame.K_s: "s", pygame.K_SPACE: "space"}
    return _window_loop(pygame, session, names, fps, steps)


def minigrid_action(pressed: Collection[str]) -> int | None:
    """``minigrid``'s action for the keys held down, as its ``manual_control``: ``"left"``,
    ``"right"`` turn, ``"up"`` forward, ``"tab"`` pickup, ``"shift"`` drop, ``"space"``
    toggle, ``"enter"`` done; None when no key is held (the env waits)."""
    for action, key in ((0, "left"), (1, "right"), (2, "up"), (3, "tab"), (4, "shift"),
                        (5, "space"), (6, "enter")):
        if key in pressed:
            return action
    return None


class MiniGridSession:
    """A MiniGrid env without a window: one env, keys in, RGB frames (minigrid's tiles)
    out; it steps only while a key is held."""

    def __init__(self, game: str, seed: int | None = None) -> None:
        if game not in MINIGRID_GAMES:
            raise ValueError(f"game must be one of {list(MINIGRID_GAMES)}, got {game!r}")
        from batchenv.envs.minigrid import BatchMiniGrid
        from batchenv.factory import make

        self.game = game
        env = make(MINIGRID_GAMES[game], 1, render_mode="rgb_array")
        assert isinstance(env, BatchMiniGrid)
        self.env: BatchMiniGrid = env
        self.actions = int(getattr(env.single_action_space, "n", 7))
        self.env.reset(seed=seed)
        self.returns = 0.0
        self.message = ""

    def step(self, pressed: Collection[str]) -> np.ndarray:
        action = minigrid_action(pressed)
        if action is None or action >= self.actions:
            return self.frame()
        _, reward, terminated, truncated, _ = self.env.step(np.array([action]))
        self.returns += float(reward[0])
        if terminated[0] or truncated[0]:
            self.message = f"episode over, return {self.returns:.2f}"
            self.returns = 0.0
        return self.frame()

    def frame(self) -> np.ndarray:
        frames = self.env.render()
        assert frames is not None
        return np.asarray(frames[0])

    def status(self) -> str:
        return f"{self.env.missions()[0]}  return {self.returns:.2f}  {self.message}".rstrip()


def play_minigrid(game: str, fps: int = 5, seed: int | None = None,
                  steps: int | None = None) -> int:
    """Open a window and play a MiniGrid env; returns 0 (a process exit code)."""
    try:
        import pygame
    except ImportError:
        raise SystemExit('playing needs pygame: pip install "batchenv[play]" '
                         "(or pip install pygame)") from None
    session = MiniGridSession(game, seed)
    names = {pygame.K_LEFT: "left", pygame.K_RIGHT: "right", pygame.K_UP: "up",
             pygame.K_TAB: "tab", pygame.K_LSHIFT: "shift", pygame.K_SPACE: "space",
             pygame.K_RETURN: "enter"}
    return _window_loop(pygame, session, names, fps, steps)


#: crafter's ``run_gui.py`` keymap: key name -> action (data.ACTIONS' index)
CRAFTER_KEYS = {"a": 1, "d": 2, "w": 3, "s": 4, "space": 5, "tab": 6, "r": 7, "t": 8, "f": 9,
                "p": 10, "1": 11, "2": 12, "3": 13, "4": 14, "5": 15, "6": 16}


def crafter_action(pressed: Collection[str]) -> int:
    """Crafter's action for the keys held down (:data:`CRAFTER_KEYS`; noop without one)."""
    for key, action in CRAFTER_KEYS.items():
        if key in pressed:
            return action
    return 0


class CrafterSession:
    """BatchCrafter without a window: one env, keys in, its 64 x 64 image scaled out, the
    inventory and achievements in the status line."""

    def __init__(self, scale: int = 9, seed: int | None = None) -> None:
        from batchenv.envs.crafter import BatchCrafter

        self.scale = scale
        self.env = BatchCrafter(1)
        self.obs, _ = self.env.reset(seed=seed)
        self.returns = 0.0
        self.message = ""

    def step(self, pressed: Collection[str]) -> np.ndarray:
        self.obs, reward, terminated, truncated, _ = self.env.step(
            np.array([crafter_action(pressed)]))
        self.returns += float(reward[0])
        if terminated[0] or truncated[0]:
            self.message = f"episode over, return {self.returns:.1f}"
            self.returns = 0.0
        return self.frame()

    def frame(self) -> np.ndarray:
        return np.repeat(np.repeat(self.obs[0], self.scale, axis=0), self.scale, axis=1)

    def status(self) -> str:
        from batchenv.envs.crafter import ACHIEVEMENTS

        s = self.env.state
        done = sum(int(s.achievements[0, k] > 0) for k in range(len(ACHIEVEMENTS)))
        return (f"Crafter  step {int(s.step[0])}  return {self.returns:.1f}  achievements "
                f"{done}/{len(ACHIEVEMENTS)}  {self.message}").rstrip()


def play_crafter(fps: int = 5, scale: int = 9, seed: int | None = None,
                 steps: int | None = None) -> int:
    """Open a window and play Crafter; returns 0 (a process exit code)."""
    try:
        import pygame
    except ImportError:
        raise SystemExit('playing needs pygame: pip install "batchenv[play]" '
                         "(or pip install pygame)") from None
    session = CrafterSession(scale, seed)
    names = {getattr(pygame, f"K_{key.upper() if len(key) > 1 else key}"): key
             for key in CRAFTER_KEYS}
    return _window_loop(pygame, session, names, fps, steps, pause=False)
