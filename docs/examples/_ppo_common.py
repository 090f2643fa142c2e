"""Bookkeeping shared by the PPO examples: episode CSV, learning-curve plot, wall-clock
accounting. The reinforcement learning itself lives in each example that uses this module
(``ppo_pong.py``, ``ppo_cartpole.py``, ``ppo_minatar.py``, ``ppo_minigrid.py``), each
readable top to bottom on its own."""

from __future__ import annotations

import csv
import json
import time
from collections import deque
from pathlib import Path

import numpy as np

CSV_HEADER = ["global_step", "wall_time_s", "episode_return", "episode_length"]


class EpisodeLog:
    """Writes one CSV row per finished episode and keeps the last ``window`` returns.

    Reads the ``info["episode"]`` dict that ``gymnasium.wrappers.vector.RecordEpisodeStatistics``
    adds on the steps where episodes end."""

    def __init__(self, path: str | Path | None, window: int = 100) -> None:
        self.returns: deque[float] = deque(maxlen=window)
        self.count = 0
        self._file = None
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._file = open(path, "w", newline="")  # noqa: SIM115  (closed in close())
            self._writer = csv.writer(self._file)
            self._writer.writerow(CSV_HEADER)

    def record(self, info: dict, global_step: int, wall_time: float) -> None:
        if "_episode" not in info:
            return
        done = info["_episode"]
        returns = info["episode"]["r"][done]
        lengths = info["episode"]["l"][done]
        self.returns.extend(returns.tolist())
        self.count += len(returns)
        if self._file is not None:
            wall = round(wall_time, 3)
            self._writer.writerows((global_step, wall, float(r), int(n))
                                   for r, n in zip(returns, lengths))

    def mean(self) -> float:
        """Mean return of the last ``window`` episodes (NaN before the first one)."""
        return float(np.mean(self.returns)) if self.returns else float("nan")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class Stopwatch:
    """Accumulates the wall time spent in named phases (``with clock("env"): ...``)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.totals: dict[str, float] = {}
        self._phase = ""

    def __call__(self, phase: str) -> Stopwatch:
        self._phase = phase
        return self

    def __enter__(self) -> None:
        self._t0 = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        dt = time.perf_counter() - self._t0
        self.totals[self._phase] = self.totals.get(self._phase, 0.0) + dt

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def share(self, phase: str) -> float:
        """Fraction of the elapsed wall time spent in ``phase``."""
        return self.totals.get(phase, 0.0) / max(self.elapsed(), 1e-9)


def rolling_mean(values: np.ndarray, window: int) -> np.ndarray:
    """Mean of the last ``window`` values at each index (fewer at the start)."""
    cumsum = np.concatenate([[0.0], np.cumsum(values, dtype=np.float64)])
    idx = np.arange(1, len(values) + 1)
    lo = np.maximum(idx - window, 0)
    return (cumsum[idx] - cumsum[lo]) / (idx - lo)


def plot_learning_curve(csv_path: str | Path, png_path: str | Path, title: str,
                        target: float | None = None, window: int = 100) -> None:
    """Episode returns against wall-clock minutes (dots) and their mean over the last
    ``window`` episodes (line); environment steps on the top axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = np.genfromtxt(csv_path, delimiter=",", names=True, ndmin=1)
    minutes = data["wall_time_s"] / 60
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    if len(data):
        stride = max(1, len(data) // 20_000)  # keep the PNG light: at most ~20k dots
        ax.plot(minutes[::stride], data["episode_return"][::stride], ".", ms=1.5, alpha=0.25,
                color="tab:blue", label="episode return")
        ax.plot(minutes, rolling_mean(data["episode_return"], window), color="tab:blue",
                lw=2, label=f"mean of last {window} episodes")
        steps = data["global_step"]
        top = ax.secondary_xaxis(
            "top", functions=(lambda m: np.interp(m, minutes, steps) / 1e6,
                              lambda s: np.interp(s * 1e6, steps, minutes)))
        top.set_xlabel("environment steps (millions)")
    if target is not None:
        ax.axhline(target, color="tab:red", ls="--", lw=1, label=f"target {target:g}")
    ax.set_xlabel("wall-clock time (minutes)")
    ax.set_ylabel("episode return")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    Path(png_path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png_path)
    plt.close(fig)


def write_summary(summary: dict, png_path: str | Path) -> str:
    """The run's summary as JSON next to its learning curve (``<png>.json``): the figures a
    page quotes from a run ship with the curve they describe."""
    path = Path(png_path).with_suffix(".json")
    path.write_text(json.dumps(summary, indent=1) + "\n")
    return str(path)
