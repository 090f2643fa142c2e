"""The keyboard-play window (batchenv/play.py), headless: pygame's dummy video driver, a few
frames of each game through the one window loop."""

from __future__ import annotations

import numpy as np
import pytest

from batchenv import play


@pytest.mark.parametrize("game", ["pong", "minatar-breakout", "minigrid-doorkey", "crafter"])
def test_window_loop_steps_the_session_and_quits(monkeypatch, game):
    pytest.importorskip("pygame")  # the `play` extra, in the `test` extra
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    monkeypatch.setenv("SDL_AUDIODRIVER", "dummy")
    session_cls = {"pong": play.PongSession, "minatar-breakout": play.MinAtarSession,
                   "minigrid-doorkey": play.MiniGridSession, "crafter": play.CrafterSession}[game]
    seen: list[frozenset[str]] = []
    real_step = session_cls.step

    def step(self, pressed):
        seen.append(frozenset(pressed))
        frame = real_step(self, pressed)
        assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8
        return frame

    monkeypatch.setattr(session_cls, "step", step)
    if game == "pong":
        assert play.play_pong(fps=1000, steps=4, seed=0) == 0
    elif game == "minigrid-doorkey":
        assert play.play_minigrid(game, fps=1000, steps=4, seed=0) == 0
    elif game == "crafter":
        pytest.importorskip("crafter")  # (its textures)
        assert play.play_crafter(fps=1000, steps=4, seed=0) == 0
    else:
        assert play.play_minatar(game, fps=1000, steps=4, seed=0) == 0
    assert seen == [frozenset()] * 4  # four frames, no key held


def test_minigrid_session_steps_only_on_a_key():
    session = play.MiniGridSession("minigrid-doorkey", seed=0)
    s = session.env.state
    before = int(s.agent_dir[0])
    session.step(set())  # no key: the env waits
    assert s.step_count[0] == 0 and s.agent_dir[0] == before
    frame = session.step({"right"})
    assert s.step_count[0] == 1 and s.agent_dir[0] == (before + 1) % 4
    assert frame.shape == (8 * 32, 8 * 32, 3)
    assert play.minigrid_action({"space"}) == 5 and play.minigrid_action(set()) is None
    assert "use the key" in session.status()


def test_crafter_session_keys_are_crafters():
    """crafter's run_gui keymap, and the session steps the env with them."""
    pytest.importorskip("crafter")
    assert play.crafter_action({"space"}) == 5 and play.crafter_action(set()) == 0
    assert [play.crafter_action({k}) for k in "wasd"] == [3, 1, 4, 2]
    session = play.CrafterSession(scale=2, seed=0)
    frame = session.step({"a"})
    assert frame.shape == (128, 128, 3) and session.env.state.facing[0] == 0  # left
    assert "step 1" in session.status()
