"""BatchPong's rendering (rgb_array, ansi, tiled images, RecordVideo), the play loop and the
command line."""

from __future__ import annotations

import importlib.util
import io
import os
import sys
import types

import gymnasium
import numpy as np
import pytest

from batchenv import BatchPong
from batchenv.__main__ import bench_pong, build_parser, main
from batchenv.envs.pong.raster import PALETTE
from batchenv.play import PongSession, actions_from_keys
from batchenv.reference import ReferencePong

#: Gymnasium's (major, minor): CI runs the suite on the newest and on the oldest supported.
GYM_VERSION = tuple(int(x) for x in gymnasium.__version__.split(".")[:2])


def stepped(n: int = 6, steps: int = 25, **kwargs) -> BatchPong:
    env = BatchPong(n, **kwargs)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        env.step(rng.integers(0, 3, env.action_space.shape))
    return env


def test_rgb_frames_shape_dtype_and_colours():
    env = stepped(render_mode="rgb_array")
    frames = env.render()
    assert isinstance(frames, tuple) and len(frames) == 6
    for f in frames:
        assert f.shape == (256, 320, 3) and f.dtype == np.uint8
        colours = {tuple(c) for c in f.reshape(-1, 3)}
        assert colours == {tuple(c) for c in PALETTE}  # background, walls, 2 paddles, ball
    small = stepped(render_mode="rgb_array", render_scale=2).render()[0]
    assert small.shape == (64, 80, 3)


@pytest.mark.parametrize("mode", ["cpu", "rally"])
def test_rgb_frames_match_the_reference(mode):
    env = stepped(render_mode="rgb_array", mode=mode)
    frames = env.render()
    for i, rec in enumerate(env.get_state()):
        ref = ReferencePong(mode=mode)
        ref.set_record(rec)
        np.testing.assert_array_equal(frames[i], ref.frame())


def test_ansi_frames_match_the_reference():
    env = stepped(render_mode="ansi", points_to_win=2, steps=200)
    texts = env.render()
    assert len(texts) == 6 and all(isinstance(t, str) for t in texts)
    for i, rec in enumerate(env.get_state()):
        ref = ReferencePong()
        ref.set_record(rec)
        assert texts[i] == ref.ansi()
        lines = texts[i].splitlines()
        assert len(lines) == 33 and all(len(line) == 42 for line in lines[1:])
        assert texts[i].count("o") == 1 and texts[i].count("#") == 10
        assert f"{rec['score_left']} : {rec['score_right']}" in lines[0]


def test_render_tiled_is_the_frames_in_order():
    env = stepped(n=7, render_mode="rgb_array")
    frames = np.stack(env.render())
    tiled = env.render_tiled(k=5, cols=3, gap=2)
    h, w = 256, 320
    assert tiled.shape == (2 * h + 2, 3 * w + 4, 3) and tiled.dtype == np.uint8
    for k in range(5):
        r, c = divmod(k, 3)
        np.testing.assert_array_equal(tiled[r * (h + 2):r * (h + 2) + h,
                                            c * (w + 2):c * (w + 2) + w], frames[k])
    assert not tiled[h:h + 2].any() and not tiled[h + 2:, 2 * (w + 2):].any()
    assert env.render_tiled().shape == (3 * h + 8, 3 * w + 8, 3)  # all 7, 3 columns


def test_render_tiled_without_render_mode_and_errors():
    env = BatchPong(4)
    with pytest.raises(ValueError):
        env.render_tiled()  # before reset
    env.reset(seed=0)
    assert env.render_tiled(k=4, cols=4, gap=0).shape == (256, 1280, 3)
    with pytest.raises(ValueError):
        env.render_tiled(k=5)
    with pytest.raises(ValueError):
        env.render_tiled(cols=0)


def _fake_moviepy(monkeypatch, written: list) -> None:
    class ImageSequenceClip:
        def __init__(self, frames, fps):
            self.frames, self.fps = list(frames), fps

        def write_videofile(self, path, logger=None):
            written.append((path, self.frames, self.fps))

        def close(self):
            pass

    names = ["moviepy", "moviepy.video", "moviepy.video.io",
             "moviepy.video.io.ImageSequenceClip"]
    for name in names:
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    sys.modules["moviepy.video.io.ImageSequenceClip"].ImageSequenceClip = ImageSequenceClip


def test_record_video(tmp_path, monkeypatch):
    """RecordVideo records the batch's frames tiled together; with moviepy installed the
    video file is written, without it a stand-in encoder receives the frames. Gymnasium
    has a vector RecordVideo from 1.2 on (docs/integrations.md)."""
    if GYM_VERSION < (1, 2):
        assert not hasattr(gymnasium.wrappers.vector, "RecordVideo")
        return
    from gymnasium.wrappers.vector import RecordVideo

    written: list = []
    real = importlib.util.find_spec("moviepy") is not None
    if not real:
        _fake_moviepy(monkeypatch, written)
    env = BatchPong(4, render_mode="rgb_array", render_scale=2, points_to_win=1)
    rec = RecordVideo(env, str(tmp_path), episode_trigger=lambda e: e == 0)
    rec.reset(seed=0)
    for _ in range(40):
        *_, te, tr, _ = rec.step(np.zeros(4, dtype=int))
    rec.close()
    assert rec.metadata["render_fps"] == 30
    if real:
        videos = [f for f in os.listdir(tmp_path) if f.endswith(".mp4")]
        assert videos and os.path.getsize(tmp_path / videos[0]) > 1000
    else:
        assert len(written) == 1
        _, frames, fps = written[0]
        assert fps == 30 and len(frames) >= 2
        assert frames[0].shape == (2 * 64, 2 * 80, 3)  # 4 envs on a 2 x 2 grid


def test_actions_from_keys():
    assert actions_from_keys(set()).tolist() == [0]
    assert actions_from_keys({"w"}).tolist() == [1]
    assert actions_from_keys({"down"}).tolist() == [2]
    assert actions_from_keys({"w", "s"}).tolist() == [0]
    assert actions_from_keys({"w", "down"}, "two_player").tolist() == [[1, 2]]
    assert actions_from_keys({"up"}, "rally").tolist() == [[0, 1]]


def test_play_session_moves_the_paddle_and_counts_games():
    session = PongSession(scale=4, points_to_win=1, seed=0)
    y0 = float(session.env.state.left_y[0])
    frame = session.step({"w"})
    assert frame.shape == (128, 160, 3)
    assert float(session.env.state.left_y[0]) == y0 - 2
    for _ in range(400):
        session.step(set())
    assert session.games >= 1 and "over" in session.message
    assert session.status().startswith("BatchPong (cpu)")


def test_cli_parser_and_bench_table():
    args = build_parser().parse_args(["bench", "pong", "--sizes", "4", "--no-ale"])
    assert args.command == "bench" and args.sizes == [4] and args.no_ale
    assert build_parser().parse_args(["play", "pong", "--mode", "rally"]).mode == "rally"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "tetris"])
    out = io.StringIO()
    rows = bench_pong(sizes=[8], block=0.005, repeats=1, ale=False, out=out)
    text = out.getvalue()
    assert len(rows) == 4 and "x PlainPong" in text and "pixels" in text
    assert all(r["env_steps_per_s"] > 0 and r["vs_plain"] > 0 for r in rows)


def test_cli_main_bench_runs(capsys):
    assert main(["bench", "pong", "--sizes", "2", "--block", "0.002", "--repeats", "1",
                 "--no-ale"]) == 0
    assert "M env-steps/s" in capsys.readouterr().out
