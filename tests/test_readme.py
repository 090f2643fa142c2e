"""README.md's promises that CI proves: the test command is the one .ci/run runs, and the
README's code examples run."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
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


def test_readme_quick_start_command_prints_a_throughput_table():
    """The quick start's command, run as README gives it (with the smallest sizes its CLI
    takes, to stay fast), prints a row of measurements per case whose columns agree."""
    line = re.search(r"## Quick start.+?```bash\n(.+?)\n```", README, re.S).group(1)
    command = shlex.split(line.split("&&", 1)[1].split("#", 1)[0])
    assert command[0] == "python"
    small = ["--sizes", "2", "--block", "0.002", "--repeats", "1", "--no-ale"]
    done = subprocess.run([sys.executable, *command[1:], *small], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    rows = [row.split() for row in done.stdout.splitlines()
            if row.split()[:2] in (["state", "True"], ["tiles", "True"], ["pixels", "True"],
                                   ["pixels", "False"])]
    assert [(r[0], int(r[2])) for r in rows] == [("state", 2), ("tiles", 4096),
                                                 ("pixels", 4096), ("pixels", 4096)]
    for _, _, n, us_per_step, ns_per_env, m_per_s, *_ in rows:
        us, ns, m = float(us_per_step), float(ns_per_env), float(m_per_s)
        assert us > 0 and np.isclose(ns, us * 1e3 / int(n), rtol=0.01, atol=0.1)
        assert np.isclose(m, 1e3 / ns, rtol=0.02, atol=0.01)


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
