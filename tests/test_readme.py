"""README.md's promises that CI proves: the test command is the one .ci/run runs, and the
README's code examples run."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium as gym
import numpy as np

import batchenv

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_ci_runs_the_readme_test_command():
    section = README.split("### Run the tests", 1)[1]
    command = re.search(r"```bash\n(.+?)\n```", section, re.S).group(1).strip()
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert command in ci_lines, f"{command!r} is not a line of .ci/run"


def test_readme_quick_start_command_names_an_existing_cli():
    first = re.search(r"## Quick start.+?```bash\n(.+?)\n```", README, re.S).group(1)
    assert first.startswith("pip install -e . && python -m batchenv bench pong")
    assert (ROOT / "batchenv" / "__main__.py").exists()


def test_readme_code_blocks_run():
    blocks = re.findall(r"```python\n(.+?)\n```", README, re.S)
    assert len(blocks) >= 3
    namespace = {"np": np, "gym": gym, "batchenv": batchenv}
    exec(blocks[0], namespace)
    assert namespace["obs"].shape == (4096, *namespace["env"].single_observation_space.shape)
    exec(blocks[1], namespace)
    env = namespace["MyEnv"](8, max_episode_steps=200)
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(300):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert obs in env.observation_space and (reward <= 0).all()


def test_readme_sb3_example_trains():
    # stable-baselines3 is in the `test` extra; without it this fails (no silent skip)
    block = re.findall(r"```python\n(.+?)\n```", README, re.S)[2]
    namespace = {"batchenv": batchenv}
    exec(block.replace("learn(20_000)", "learn(2_048)"), namespace)
    assert namespace["model"].num_timesteps >= 2_048
    assert namespace["venv"].num_envs == 16
