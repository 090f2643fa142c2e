"""MinAtar games beyond parity: rendering in MinAtar's palette, ids, arguments, sticky-action
bookkeeping across resets, the board helpers of the observations (``_base.clear_board``,
``_base.paint_table_row``, compiled and as plain Python)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import batchenv
from batchenv.envs.minatar import (
    BatchAsterix,
    BatchBreakout,
    BatchFreeway,
    BatchSeaquest,
    BatchSpaceInvaders,
)
from batchenv.envs.minatar._base import clear_board, cubehelix_palette, paint_table_row

GAMES = [BatchAsterix, BatchBreakout, BatchFreeway, BatchSeaquest, BatchSpaceInvaders]


@pytest.mark.parametrize("n_colors", range(3, 11))
def test_palette_is_seaborns_cubehelix(n_colors):
    sns = pytest.importorskip("seaborn")
    np.testing.assert_allclose(cubehelix_palette(n_colors),
                               np.array(sns.color_palette("cubehelix", n_colors)), atol=1e-12)


@pytest.mark.parametrize("cls", GAMES)
def test_rgb_frames_are_minatars_rendering_of_the_observation(cls):
    sns = pytest.importorskip("seaborn")
    env = cls(6, render_mode="rgb_array", render_scale=3)
    obs, _ = env.reset(seed=0)
    for _ in range(30):
        obs, *_ = env.step(env.action_space.sample())
    frames = np.stack(env.render())
    # minatar/gym.py, render_mode="rgb_array": palette[amax(state * (channel + 1))]
    n_channels = obs.shape[-1]
    cmap = [(0, 0, 0), *sns.color_palette("cubehelix", n_channels)]
    numerical = np.amax(obs * np.reshape(np.arange(n_channels) + 1, (1, 1, 1, -1)), 3)
    expected = np.round(np.stack(cmap)[numerical] * 255).astype(np.uint8)
    assert frames.shape == (6, 30, 30, 3) and frames.dtype == np.uint8
    np.testing.assert_array_equal(frames[:, ::3, ::3], expected)
    np.testing.assert_array_equal(frames[:, 2::3, 1::3], expected)
    tiled = env.render_tiled(4, cols=2, gap=1)
    assert tiled.shape == (61, 61, 3)
    np.testing.assert_array_equal(tiled[31:, 31:], frames[3])


@pytest.mark.parametrize("cls", GAMES)
def test_ansi_frames_show_every_occupied_cell(cls):
    env = cls(3, render_mode="ansi")
    obs, _ = env.reset(seed=1)
    for _ in range(25):
        obs, *_ = env.step(env.action_space.sample())
    for text, o in zip(env.render(), obs):
        rows = text.splitlines()[:10]
        cells = np.array([list(r) for r in rows])
        np.testing.assert_array_equal(cells != ".", o.any(axis=-1))
        assert all(name in text for name in cls.channels)


@pytest.mark.parametrize("game,cls,minimal", [("Breakout", BatchBreakout, 3),
                                               ("Freeway", BatchFreeway, 3),
                                               ("Asterix", BatchAsterix, 5),
                                               ("Seaquest", BatchSeaquest, 6),
                                               ("SpaceInvaders", BatchSpaceInvaders, 4)])
def test_ids_and_action_sets(game, cls, minimal):
    ref = pytest.importorskip("minatar").Environment(cls.game)
    assert list(cls.minimal_actions) == ref.minimal_action_set()
    assert ref.state_shape() == [10, 10, len(cls.channels)]
    assert list(cls.channels) == sorted(ref.env.channels, key=ref.env.channels.get)
    for env_id, n_actions in [(f"MinAtar/{game}-v0", 6), (f"MinAtar/{game}-v1", minimal),
                              (f"batchenv/MinAtar-{game}-v1", minimal)]:
        env = batchenv.make(env_id, 2)
        assert isinstance(env, cls) and env.single_action_space.n == n_actions
    vec = gym.make_vec(f"batchenv/MinAtar-{game}-v1", num_envs=2,
                       vectorization_mode="vector_entry_point")
    assert vec.single_action_space.n == minimal
    assert vec.single_observation_space == gym.spaces.Box(0, 1, (10, 10, len(cls.channels)),
                                                          bool)


@pytest.mark.parametrize("bad", [-0.1, 1.5, "x", True])
def test_bad_sticky_action_prob(bad):
    with pytest.raises(ValueError, match="sticky_action_prob"):
        BatchBreakout(2, sticky_action_prob=bad)
    with pytest.raises(ValueError, match="render_scale"):
        BatchBreakout(2, render_scale=0)


def test_last_action_carries_over_episodes_but_not_a_seeded_reset():
    env = BatchBreakout(64, sticky_action_prob=0.0)
    env.reset(seed=0)
    for _ in range(40):  # nobody moves the paddle: every game ends within 40 steps
        env.step(np.full(64, 3))
    assert (env.state.last_action == 3).all()  # MinAtar keeps it through its reset()
    env.reset()
    assert (env.state.last_action == 3).all()
    mask = np.zeros(64, dtype=bool)
    mask[:5] = True
    env.reset(seed=[1] * 3 + [None] * 61, options={"reset_mask": mask})
    np.testing.assert_array_equal(env.state.last_action, [0] * 3 + [3] * 61)
    env.reset(seed=4)
    assert (env.state.last_action == 0).all()


def test_play_session_by_keys():
    from batchenv.__main__ import build_parser
    from batchenv.play import MinAtarSession, minatar_action

    assert [minatar_action(k) for k in (set(), {"left"}, {"w"}, {"right"}, {"s"},
                                        {"space", "left"})] == [0, 1, 2, 3, 4, 5]
    session = MinAtarSession("minatar-breakout", scale=2, seed=0)
    frame = session.step({"left"})
    assert frame.shape == (20, 20, 3)
    assert int(session.env.state.pos[0]) == 3  # the paddle moved left from column 4
    for _ in range(200):
        session.step(set())
    assert session.games >= 1 and "over" in session.message
    assert build_parser().parse_args(["play", "minatar-freeway"]).env == "minatar-freeway"
    with pytest.raises(ValueError, match="game must be one of"):
        MinAtarSession("minatar-tetris")


def test_minatar_pages_are_generated_from_the_docstrings():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "docs" / "envs" / "generate.py"
    spec = importlib.util.spec_from_file_location("generate_env_docs_minatar", path)
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    pages = generate.all_pages()
    for name in ("minatar_asterix", "minatar_breakout", "minatar_freeway", "minatar_seaquest",
                 "minatar_space_invaders"):
        assert (path.parent / f"{name}.md").read_text() == pages[name], (
            f"docs/envs/{name}.md is out of date: run python docs/envs/generate.py")


@pytest.mark.parametrize("cls", GAMES)
def test_batch_independence_over_long_episodes(cls):
    """Row i of a batch equals a batch of one seeded s + i, over many episodes and the
    difficulty ramp (no time limit), with sticky actions."""
    n, seed, steps = 12, 500, 300
    big = cls(n, sticky_action_prob=0.3)
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 6, (steps, n))
    first = big.reset(seed=seed)[0]
    big_obs, big_rew = [first], []
    for a in actions:
        obs, reward, *_ = big.step(a)
        big_obs.append(obs)
        big_rew.append(reward)
    for i in (0, 5, n - 1):
        one = cls(1, sticky_action_prob=0.3)
        obs_i = [one.reset(seed=seed + i)[0]]
        rew_i = []
        for a in actions:
            obs, reward, *_ = one.step(a[i:i + 1])
            obs_i.append(obs)
            rew_i.append(reward)
        np.testing.assert_array_equal(np.stack(obs_i)[:, 0], np.stack(big_obs)[:, i])
        np.testing.assert_array_equal(np.stack(rew_i)[:, 0], np.stack(big_rew)[:, i])


def _board_helpers(obs, table, codes):
    """Each helper in turn on one env's board ``obs``: a copy of ``obs`` after each."""
    seen = []
    for row in range(len(codes)):
        paint_table_row(obs, row, table, codes[row])
    seen.append(obs.copy())
    clear_board(obs)
    seen.append(obs.copy())
    return seen


@pytest.mark.parametrize("channels", [4, 8])  # rows of whole words (Asterix: 4)
@pytest.mark.parametrize("compiled", [False, True])
def test_board_helpers_write_the_rows_they_name(channels, compiled):
    rng = np.random.default_rng(channels)
    width = 10 * channels // 8  # words per board row
    images = rng.random((7, 10, channels)) < 0.4
    table = np.ascontiguousarray(images.reshape(7, -1)).view(np.uint64)
    assert table.shape == (7, width)
    codes = rng.integers(0, 7, 10).astype(np.uint64)
    obs = rng.random((10, 10, channels)) < 0.5
    expected = [images[codes.astype(np.intp)], np.zeros_like(obs)]
    if compiled:
        numba = pytest.importorskip("numba")
        seen = numba.njit(_board_helpers)(obs, table, codes)
    else:
        seen = _board_helpers(obs, table, codes)
    for k, (got, want) in enumerate(zip(seen, expected)):
        np.testing.assert_array_equal(got, want, err_msg=f"helper {k}")
