"""Play BatchPong with the keyboard, for visual debugging: ``python -m batchenv play pong``.

Needs pygame (``pip install "batchenv[play]"`` or ``pip install pygame``). Keys: W/S or the
arrow keys move your (left) paddle against the CPU; in ``two_player`` and ``rally`` modes
W/S move the left paddle and the arrow keys the right one. Esc or closing the window quits;
P pauses.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from batchenv.envs.pong import DOWN, NOOP, UP, BatchPong

__all__ = ["play_pong", "actions_from_keys", "PongSession"]


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
    frame = session.frame()
    pygame.init()
    try:
        screen = pygame.display.set_mode((frame.shape[1], frame.shape[0]))
        clock = pygame.time.Clock()
        names = {pygame.K_w: "w", pygame.K_s: "s", pygame.K_UP: "up", pygame.K_DOWN: "down"}
        paused, count = False, 0
        while steps is None or count < steps:
            for event in pygame.event.get():
                if event.type == pygame.QUIT or (event.type == pygame.KEYDOWN
                                                 and event.key == pygame.K_ESCAPE):
                    return 0
                if event.type == pygame.KEYDOWN and event.key == pygame.K_p:
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
