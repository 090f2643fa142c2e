"""Smoke runs of the PPO examples in docs/examples: a few thousand steps each, checking the
losses are finite, the CSV of episode returns is written and the returns are in range."""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

# torch and tqdm are in the `test` extra (through `examples`): a missing install fails
# here, loudly, instead of skipping every test of this module
import torch  # noqa: F401
import tqdm  # noqa: F401

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"
LOSSES = ("loss", "pg_loss", "v_loss", "entropy", "approx_kl")


def load(name: str):
    """Import docs/examples/<name>.py as a module."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return rows


def check_run(summary: dict, csv_path: Path, low: float, high: float) -> np.ndarray:
    for key in LOSSES:
        assert math.isfinite(summary[key]), (key, summary[key])
    assert summary["entropy"] > 0
    rows = read_csv(csv_path)
    assert rows, "no episode finished"
    assert list(rows[0]) == ["global_step", "wall_time_s", "episode_return", "episode_length"]
    assert len(rows) == summary["episodes"]
    returns = np.array([float(r["episode_return"]) for r in rows])
    lengths = np.array([int(r["episode_length"]) for r in rows])
    steps = np.array([int(r["global_step"]) for r in rows])
    assert np.all((returns >= low) & (returns <= high)), returns
    assert np.all(lengths >= 1)
    assert np.all(np.diff(steps) >= 0) and steps[-1] <= summary["global_step"]
    return returns


@pytest.mark.slow  # a learning run
def test_ppo_cartpole_smoke(tmp_path):
    ppo = load("ppo_cartpole")
    csv_path = tmp_path / "cartpole.csv"
    png = tmp_path / "cartpole.png"
    argv = ["--num-envs", "16", "--num-steps", "32", "--total-steps", "4096",
            "--max-episode-steps", "30", "--csv", str(csv_path), "--seed", "3"]
    if importlib.util.find_spec("matplotlib"):
        argv += ["--plot", str(png)]
    summary = ppo.main(argv)
    assert summary["global_step"] == 4096
    returns = check_run(summary, csv_path, 1, 30)
    # CartPole pays +1 per step: an episode's return is its length.
    lengths = np.array([int(r["episode_length"]) for r in read_csv(csv_path)])
    np.testing.assert_array_equal(returns, lengths)
    assert summary["truncations"] > 0  # the time limit was hit: the bootstrap path ran
    assert 0 < summary["env_share"] < 1
    if importlib.util.find_spec("matplotlib"):
        assert png.stat().st_size > 1000


@pytest.mark.parametrize("obs_type", ["state",
                                      pytest.param("pixels", marks=pytest.mark.slow)])
def test_ppo_pong_smoke(tmp_path, obs_type):
    ppo = load("ppo_pong")
    csv_path = tmp_path / f"pong_{obs_type}.csv"
    # Games to 2 points with a 60-step limit: episodes end (and are truncated) within the
    # few thousand steps of a smoke run.
    summary = ppo.main(["--obs-type", obs_type, "--num-envs", "16", "--num-steps", "32",
                        "--total-steps", "2048", "--num-minibatches", "2",
                        "--points-to-win", "2", "--max-episode-steps", "60",
                        "--eval-envs", "4", "--csv", str(csv_path)])
    assert summary["global_step"] == 2048
    check_run(summary, csv_path, -2, 2)
    assert summary["truncations"] > 0
    assert -2 <= summary["eval_mean_return"] <= 2


def test_rolling_mean_and_episode_log(tmp_path):
    common = load("_ppo_common")
    np.testing.assert_allclose(common.rolling_mean(np.array([1.0, 2, 3, 4]), 2),
                               [1, 1.5, 2.5, 3.5])
    log = common.EpisodeLog(tmp_path / "e.csv", window=2)
    info = {"episode": {"r": np.array([5.0, 0.0, 7.0]), "l": np.array([5, 0, 7])},
            "_episode": np.array([True, False, True])}
    log.record(info, 30, 1.5)
    log.record({}, 33, 1.6)  # no episode ended
    log.record({"episode": {"r": np.array([0.0, 9.0, 0.0]), "l": np.array([0, 9, 0])},
                "_episode": np.array([False, True, False])}, 36, 1.7)
    log.close()
    assert log.count == 3 and log.mean() == 8.0  # window of 2: (7 + 9) / 2
    rows = read_csv(tmp_path / "e.csv")
    assert [(r["global_step"], r["episode_return"]) for r in rows] == [
        ("30", "5.0"), ("30", "7.0"), ("36", "9.0")]


@pytest.mark.parametrize("game", ["breakout", pytest.param("asterix", marks=pytest.mark.slow)])
def test_ppo_minatar_smoke(tmp_path, game):
    ppo = load("ppo_minatar")
    csv_path = tmp_path / f"{game}.csv"
    argv = ["--game", game, "--num-envs", "16", "--num-steps", "32", "--total-steps", "2048",
            "--num-minibatches", "2", "--threads", "1", "--eval-envs", "4",
            "--eval-steps", "100", "--max-episode-steps", "20", "--csv", str(csv_path)]
    if importlib.util.find_spec("matplotlib"):
        argv += ["--plot", str(tmp_path / "curve.png")]
    summary = ppo.main(argv)
    assert summary["global_step"] == 2048
    check_run(summary, csv_path, 0, 20)  # at most one point per step
    assert summary["truncations"] > 0  # episodes of 20 steps: the bootstrap path ran
    saved = json.loads(csv_path.with_suffix(".json").read_text())
    assert saved["episodes"] == summary["episodes"] and saved["game"] == game
    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "curve.png").stat().st_size > 1000


def test_ppo_minigrid_doorkey_smoke(tmp_path):
    """A few updates on DoorKey-5x5 with 12-step episodes, so that episodes end and are
    truncated (compiled: the worker that compiles DoorKey for its parity tests runs it,
    tests/conftest.py)."""
    ppo = load("ppo_minigrid")
    csv_path = tmp_path / "doorkey.csv"
    summary = ppo.main(["--env", "DoorKey-5x5", "--num-envs", "8",
                        "--num-steps", "16", "--total-steps", "256", "--num-minibatches", "2",
                        "--update-epochs", "1", "--threads", "1", "--max-episode-steps", "12",
                        "--eval-envs", "4", "--csv", str(csv_path)])
    assert summary["global_step"] == 256
    check_run(summary, csv_path, 0, 1)  # minigrid's reward: 1 - 0.9 * steps / max_steps
    assert summary["truncations"] > 0  # the bootstrap path ran
    assert 0 <= summary["eval_mean_return"] <= 1
    agent = ppo.Agent(7, 8, 16)
    logits, value = agent(torch.zeros((5, 7, 7, 3), dtype=torch.uint8))
    assert logits.shape == (5, 7) and value.shape == (5,)


def test_ppo_envpool_style_smoke():
    """The CleanRL/EnvPool-style script runs on BatchPong pixels through async_reset / send /
    recv; short games and a step limit so that episodes end within the tiny budget."""
    ppo = load("ppo_envpool_style")
    summary = ppo.main(["--num-envs", "8", "--num-steps", "32", "--total-steps", "1024",
                        "--num-minibatches", "2", "--update-epochs", "1",
                        "--points-to-win", "1", "--max-episode-steps", "40"])
    assert summary["global_step"] == 1024
    assert summary["episodes"] > 0
    assert all(-1 <= r <= 1 for r in summary["returns"])  # one point per game
