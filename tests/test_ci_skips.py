"""conftest.py's rule: under CI=true a skipped test (or a module skipped at import) fails,
unless it is on ALLOWED_SKIPS; outside CI skips stay skips."""

from __future__ import annotations

from pathlib import Path

CONFTEST = (Path(__file__).resolve().parents[1] / "conftest.py").read_text()
SUITE = {
    "test_some": "import pytest\n\ndef test_skipped():\n    pytest.skip('no extra')\n\n"
                 "def test_runs():\n    pass\n",
    "test_module_skip": "import pytest\n\npytest.importorskip('no_such_module_for_ci')\n\n"
                        "def test_never():\n    pass\n",
}


def _run(pytester, monkeypatch, ci: str, conftest: str = CONFTEST):
    monkeypatch.setenv("CI", ci)
    pytester.makeconftest(conftest.replace('pytest_plugins = ["pytester"]', ""))
    pytester.makepyfile(**SUITE)
    return pytester.runpytest("-p", "no:cacheprovider", "-p", "no:benchmark",
                              "--continue-on-collection-errors")


def test_skips_fail_under_ci(pytester, monkeypatch):
    result = _run(pytester, monkeypatch, "true")
    result.assert_outcomes(passed=1, failed=1, errors=1)
    result.stdout.fnmatch_lines(["*skipped under CI=true*ALLOWED_SKIPS*"])
    assert result.ret != 0


def test_skips_stay_skips_outside_ci(pytester, monkeypatch):
    result = _run(pytester, monkeypatch, "")
    result.assert_outcomes(passed=1, skipped=2)
    assert result.ret == 0


def test_allowed_skips_stay_skips_under_ci(pytester, monkeypatch):
    allowed = CONFTEST.replace("    # (none today)\n",
                               '    "test_some.py::test_skipped": "an example",\n'
                               '    "test_module_skip.py": "an example",\n')
    assert allowed != CONFTEST
    result = _run(pytester, monkeypatch, "true", allowed)
    result.assert_outcomes(passed=1, skipped=2)
