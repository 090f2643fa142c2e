"""Every ```python block of README.md and docs/ runs: the blocks of one page in order, in
one namespace, as a reader would paste them. A block that is deliberately a fragment (a
method body, a signature, code needing a server) is preceded by a
``<!-- not-run: reason -->`` line; the list of those is pinned below, so that a new one is a
decision, not an accident.

A block that needs a client whose pins conflict with the test extra (RLlib's ``ray[rllib]``
pins Gymnasium 1.2.2), or that is too slow for README's command (marker ``slow``), is
preceded by ``<!-- run-by: MARKER: reason -->``: it is left out of
its page's run and runs on its own (self-contained, its own imports) in
``test_marked_blocks_run``, which carries the pytest marker MARKER, deselected by default
(pyproject's addopts); .ci/run runs ``pytest -m MARKER`` in a venv that has the client."""

from __future__ import annotations

import re
import sys
import textwrap
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"(?P<before>[^\n]*)\n(?P<indent>[ \t]*)```python\n(?P<code>.*?)\n[ \t]*```",
                   re.S)
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(?P<why>.+?)\s*-->")
RUN_BY = re.compile(r"<!--\s*run-by:\s*(?P<marker>\w+):\s*(?P<why>.+?)\s*-->")

#: (page, number of not-run blocks): each has its reason in the page.
EXPECTED_NOT_RUN = {
    "README.md": 1,  # trains PPO for 20,000 steps (tests/test_readme.py runs 2,048)
    "docs/concurrency.md": 3,  # a signature, an env needing a server, top-level await
    "docs/scaling-out.md": 2,  # starts Ray; a training-loop sketch
    "docs/training.md": 3,  # a fragment of the PPO loop, two SB3 training runs
    "docs/writing_envs.md": 2,  # an excerpt of BatchPong._substep; the MinAtar registration sketch
}

#: (page, pytest marker, the module the blocks need): blocks run by test_marked_blocks_run.
MARKED = [
    # RLlib's PPO on a remote env runner: ray[rllib] pins gymnasium 1.2.2 (.ci/run's RLlib venv)
    ("docs/integrations.md", "rllib", "ray.rllib"),
    # TorchRL's ParallelEnv with spawned workers: two processes importing torch (5-10 s)
    ("docs/integrations.md", "slow", "torchrl.envs"),
]


def blocks(page: Path) -> list[tuple[str, str | None]]:
    """(code, reason it is not run in the page's run or None) of each python block, in
    order; a run-by block's reason starts with ``run-by MARKER``."""
    text = "\n" + page.read_text()
    out = []
    for m in BLOCK.finditer(text):
        not_run, run_by = NOT_RUN.search(m["before"]), RUN_BY.search(m["before"])
        why = (not_run["why"] if not_run else
               f"run-by {run_by['marker']}: {run_by['why']}" if run_by else None)
        out.append((textwrap.dedent(m["code"]), why))
    return out


def marked_blocks(page: Path, marker: str) -> list[str]:
    return [code for code, why in blocks(page)
            if why is not None and why.startswith(f"run-by {marker}:")]


def name(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", [p for p in PAGES if any(w is None for _, w in blocks(p))],
                         ids=name)
def test_python_blocks_run(page, capsys, monkeypatch):
    # a real module, so that the page's classes pickle (check_env pickles envs)
    module = types.ModuleType(f"docs_{page.stem}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for i, (code, why) in enumerate(blocks(page)):
        if why is not None:
            continue
        try:
            exec(compile(code, f"{name(page)} block {i + 1}", "exec"), module.__dict__)
        except Exception as e:
            raise AssertionError(f"{name(page)}: python block {i + 1} raised "
                                 f"{type(e).__name__}: {e}\n{code}") from e


@pytest.mark.parametrize(("page", "marker", "module"), [
    pytest.param(page, marker, module, marks=getattr(pytest.mark, marker), id=f"{page}-{marker}")
    for page, marker, module in MARKED])
def test_marked_blocks_run(page, marker, module, capsys):
    """The blocks a page leaves to a marker, each on its own (CI: ``pytest -m MARKER`` in the
    venv that has the module; elsewhere, with ``-m ""``, it skips without the module)."""
    pytest.importorskip(module)
    code_blocks = marked_blocks(ROOT / page, marker)
    assert code_blocks, f"{page} has no run-by {marker} block"
    for i, code in enumerate(code_blocks):
        try:
            exec(compile(code, f"{page} {marker} block {i + 1}", "exec"), {"__name__": "__main__"})
        except Exception as e:
            raise AssertionError(f"{page}: {marker} block {i + 1} raised "
                                 f"{type(e).__name__}: {e}\n{code}") from e


def test_the_not_run_blocks_are_the_pinned_ones():
    found = {name(p): sum(why is not None and not why.startswith("run-by ")
                          for _, why in blocks(p)) for p in PAGES}
    assert {k: v for k, v in found.items() if v} == EXPECTED_NOT_RUN
    marked = {(name(p), w.split(":")[0].removeprefix("run-by ")) for p in PAGES
              for _, w in blocks(p) if w is not None and w.startswith("run-by ")}
    assert marked == {(page, marker) for page, marker, _ in MARKED}


def test_first_env_page_is_linked_and_runs_check_env():
    for page in ("README.md", "docs/index.md", "docs/writing_envs.md"):
        assert "first_env.md" in (ROOT / page).read_text(), page
    code = "\n".join(c for c, _ in blocks(ROOT / "docs" / "first_env.md"))
    for needed in ("check_env(", "debug=True", "gym.register(", "contract_checks("):
        assert needed in code
