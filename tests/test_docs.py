"""Every ```python block of README.md and docs/ runs: the blocks of one page in order, in
one namespace, as a reader would paste them. A block that is deliberately a fragment (a
method body, a signature, code needing a server) is preceded by a
``<!-- not-run: reason -->`` line; the list of those is pinned below, so that a new one is a
decision, not an accident."""

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

#: (page, number of not-run blocks): each has its reason in the page.
EXPECTED_NOT_RUN = {
    "README.md": 1,  # trains PPO for 20,000 steps (tests/test_readme.py runs 2,048)
    "docs/concurrency.md": 3,  # a signature, an env needing a server, top-level await
    "docs/integrations.md": 2,  # TorchRL and RLlib: not in the test extras (run by hand)
    "docs/scaling-out.md": 2,  # starts Ray; a training-loop sketch
    "docs/training.md": 3,  # a fragment of the PPO loop, two SB3 training runs
    "docs/writing_envs.md": 2,  # an excerpt of BatchPong._substep; the MinAtar registration sketch
}


def blocks(page: Path) -> list[tuple[str, str | None]]:
    """(code, reason it is not run or None) of each python block, in order."""
    text = "\n" + page.read_text()
    out = []
    for m in BLOCK.finditer(text):
        marker = NOT_RUN.search(m["before"])
        out.append((textwrap.dedent(m["code"]), marker["why"] if marker else None))
    return out


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


def test_the_not_run_blocks_are_the_pinned_ones():
    found = {name(p): sum(why is not None for _, why in blocks(p)) for p in PAGES}
    assert {k: v for k, v in found.items() if v} == EXPECTED_NOT_RUN


def test_first_env_page_is_linked_and_runs_check_env():
    for page in ("README.md", "docs/index.md", "docs/writing_envs.md"):
        assert "first_env.md" in (ROOT / page).read_text(), page
    code = "\n".join(c for c, _ in blocks(ROOT / "docs" / "first_env.md"))
    for needed in ("check_env(", "debug=True", "gym.register(", "contract_checks("):
        assert needed in code
