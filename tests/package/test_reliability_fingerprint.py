"""tests/reliability.py: a figure's fingerprint is the measured code as code, and a stale figure
fails the strict check (make test) while the edit loop (make test-fast) only warns."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import reliability

ROOT = reliability.ROOT
TEST = "tests/package/test_x.py::test_measures"


@pytest.fixture
def book(tmp_path, monkeypatch):
    """A small book: two measured modules, a test file, a script and a committed figure for it."""
    (tmp_path / "sattn").mkdir()
    (tmp_path / "sattn" / "store.py").write_text(
        '"""The store."""\n\n\ndef save(x):\n    """Save x."""\n    return x + 1  # one more\n')
    (tmp_path / "sattn" / "other.py").write_text("LIMIT = 3\n")
    (tmp_path / "book_static").mkdir()
    (tmp_path / "book_static" / "live.js").write_text("// the live mode\nlet a = 1;\n")
    (tmp_path / "tests" / "package").mkdir(parents=True)
    (tmp_path / "tests" / "package" / "test_x.py").write_text("def test_measures():\n    pass\n")
    monkeypatch.setattr(reliability, "MEASURED", ("sattn/**/*.py", "book_static/*.js"))
    folder = tmp_path / "data" / "reliability"
    folder.mkdir(parents=True)
    (folder / "x.json").write_text(json.dumps({
        "name": "x", "test": TEST, "passed": 3, "tried": 3,
        "code": reliability.fingerprint(TEST, str(tmp_path))}))
    return tmp_path


def _edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize("old,new", [
    ('"""Save x."""', '"""Save x, reworded: return x plus one."""'),          # a docstring
    ('"""The store."""', '"""The store.\n\nA second paragraph."""'),           # the module's
    ("  # one more", "  # one more, said otherwise"),                          # a comment
    ("def save(x):", "# a new comment line\n\n\ndef save(x):"),                 # added lines
    ("    return x + 1", "    return (\n        x + 1\n    )"),               # layout only
])
def test_comments_docstrings_and_layout_keep_the_fingerprint(book, old, new):
    before = reliability.fingerprint(TEST, str(book))
    _edit(book / "sattn" / "store.py", old, new)
    assert reliability.fingerprint(TEST, str(book)) == before
    assert reliability.stale(str(book / "data" / "reliability"), str(book)) == []


@pytest.mark.parametrize("path,old,new", [
    ("sattn/store.py", "x + 1", "x + 2"),                                     # a literal
    ("sattn/store.py", "def save(x):", "def save(y):\n    x = y"),             # a statement
    ("sattn/other.py", "LIMIT = 3", "LIMIT = 3\nLIMITS = 4"),                  # another module
    ("tests/package/test_x.py", "pass", "assert True"),                        # the recording test
    ("book_static/live.js", "let a = 1;", "let a = 2;"),                       # measured JavaScript
])
def test_a_code_edit_in_a_measured_file_changes_it_and_the_figure_is_stale(book, path, old, new):
    before = reliability.fingerprint(TEST, str(book))
    _edit(book / path, old, new)
    assert reliability.fingerprint(TEST, str(book)) != before
    assert [f["name"] for f in reliability.stale(str(book / "data" / "reliability"), str(book))] == ["x"]


def test_a_js_comment_keeps_it_and_a_new_measured_module_changes_it(book):
    before = reliability.fingerprint(TEST, str(book))
    _edit(book / "book_static" / "live.js", "// the live mode", "// the live mode, reworded\n")
    assert reliability.fingerprint(TEST, str(book)) == before
    (book / "sattn" / "new.py").write_text("X = 1\n")
    assert reliability.fingerprint(TEST, str(book)) != before


def test_status_re_measures_only_the_stale_figures_and_the_unmeasured_tests(book):
    folder = str(book / "data" / "reliability")
    tests = [TEST, "tests/package/test_x.py::test_new"]
    assert reliability.to_measure(folder, str(book), tests=tests) == ["tests/package/test_x.py::test_new"]
    assert reliability.to_measure(folder, str(book), every=True, tests=tests) == tests
    _edit(book / "sattn" / "other.py", "3", "4")
    assert reliability.to_measure(folder, str(book), tests=tests) == tests


@pytest.mark.parametrize("figure_test,runs", [
    ("tests/site/test_live.py", ["tests/site/test_live.py::test_a", "tests/site/test_live.py::test_b"]),
    ("tests/a.py::test_kill[decades]", ["tests/a.py::test_kill"]),
    ("tests/a.py::test_counts", ["tests/a.py::test_counts"]),
])
def test_a_figure_is_re_measured_by_the_tests_that_record_it(figure_test, runs):
    tests = ["tests/site/test_live.py::test_a", "tests/site/test_live.py::test_b",
             "tests/a.py::test_kill", "tests/a.py::test_counts"]
    assert [t for t in tests if reliability.covers(figure_test, t)] == runs


def _run_strict_and_warn(book, env_extra, *args):
    """test_status_figures.py and the check command run in ``book`` (a copy of the real files)."""
    shutil.copy(os.path.join(ROOT, "tests", "reliability.py"), book / "tests")
    shutil.copy(os.path.join(ROOT, "tests", "package", "test_status_figures.py"), book / "tests" / "package")
    (book / "tests" / "conftest.py").write_text(
        "import os, sys\nsys.path.insert(0, os.path.dirname(__file__))\n")
    env = dict(os.environ, **env_extra)
    env.pop("BOOK_RELIABILITY_DIR", None)
    for name in [k for k in env if k.startswith(("PYTEST_XDIST_", "PYTEST_CURRENT_TEST"))]:
        del env[name]  # the inner pytest is a run of its own, not part of this xdist worker
    # a run takes 3-8 s alone; the limit only stops a hung run (a fresh clone's package stage,
    # with its own two workers, has taken over 120 s for one)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/package/test_status_figures.py", *args],
                          cwd=book, capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.slow
def test_a_stale_figure_fails_the_strict_check_and_only_warns_in_the_edit_loop(book):
    """The real test_status_figures.py and check command, run on the small book (its figure was
    fingerprinted by the fixture over the same files the copied module measures there)."""
    assert _run_strict_and_warn(book, {}).returncode == 0               # fresh: passes
    _edit(book / "sattn" / "store.py", "x + 1", "x + 2")               # a code edit
    strict = _run_strict_and_warn(book, {})
    assert strict.returncode == 1 and "x.json was measured on other code" in strict.stdout
    loop = _run_strict_and_warn(book, {"BOOK_STALE_FIGURES": "warn"})
    assert loop.returncode == 0 and "StaleFigureWarning" in loop.stdout, loop.stdout[-2000:]
    # as make test-fast runs it, in xdist workers: the controller must be able to load the warning
    loop2 = _run_strict_and_warn(book, {"BOOK_STALE_FIGURES": "warn"}, "-n", "2")
    assert loop2.returncode == 0 and "INTERNALERROR" not in loop2.stdout + loop2.stderr, (
        loop2.stdout[-2000:] + loop2.stderr[-2000:])
    assert "StaleFigureWarning" in loop2.stdout, loop2.stdout[-2000:]
    check = [sys.executable, "tests/reliability.py", "check"]
    assert subprocess.run(check, cwd=book, capture_output=True, text=True).returncode == 1
    warned = subprocess.run(check + ["--warn"], cwd=book, capture_output=True, text=True)
    assert warned.returncode == 0 and warned.stdout.startswith("WARNING: 1 reliability figure(s) stale")
