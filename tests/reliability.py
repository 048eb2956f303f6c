"""Reliability figures for the book's status page, written by the tests that measure them.

A test that measures how the package behaves under bad input, corrupted data, killed runs,
changed worker counts or attacks on the live server is marked ``@pytest.mark.reliability`` and
calls :func:`record` with its counts. Each figure becomes one JSON file in ``$BOOK_RELIABILITY_DIR``
(default ``_build/reliability/``, where an ordinary test run leaves them unused).

The status page shows the committed figures in ``data/reliability/``. Each figure carries the
fingerprint of the code it measured (:func:`fingerprint`): the code as code, so an added comment or
a reworded docstring keeps it and any change of what the code does changes it. A figure whose
fingerprint is not the current code's is stale:

* ``tests/package/test_status_figures.py`` fails on a stale figure (``make test``, CI), so the book
  never shows figures of code it no longer contains; with ``BOOK_STALE_FIGURES=warn`` (``make
  test-fast``, the edit loop) it only warns, and ``python tests/reliability.py check --warn`` prints
  one line naming the stale figures;
* ``make status`` re-measures only what :func:`to_measure` names (the tests of the stale figures, and
  marked tests that have no figure yet; ``ALL=1`` re-measures every one), into
  ``data/reliability/`` (commit the result).
"""

from __future__ import annotations

import argparse
import ast
import datetime
import glob
import hashlib
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIR = os.environ.get("BOOK_RELIABILITY_DIR") or os.path.join(ROOT, "_build", "reliability")
#: The code every figure measures, besides the test that records it (paths relative to ROOT).
MEASURED = ("sattn/**/*.py", "tools/serve_live.py", "tools/book_reader.py", "book_static/*.js")


FIGURES = os.path.join(ROOT, "data", "reliability")


class StaleFigureWarning(UserWarning):
    """A committed reliability figure was measured on other code (make status re-measures it).

    Defined here, not in a test module, so that pytest-xdist's controller can import it when a
    worker reports the warning (a class of a test module is importable only in the workers)."""


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    """``tree`` without the docstrings of its module, classes and functions (in place)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                node.body = body[1:] or [ast.Pass()]
    return tree


def code_of(path: str) -> bytes:
    """What of the file at ``path`` counts as code.

    A Python file: its syntax tree without docstrings, as ``ast.dump`` writes it without positions
    (comments, blank lines, line breaks inside brackets and docstrings do not count; every name,
    literal and statement does). Any other file (JavaScript, CSS): its lines without the lines that
    hold only a ``//`` comment and without blank lines, trailing spaces and ``\\r``.
    """
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".py"):
        tree = _strip_docstrings(ast.parse(data, filename=path))
        return ast.dump(tree, annotate_fields=False, include_attributes=False).encode()
    lines = (line.rstrip() for line in data.replace(b"\r\n", b"\n").split(b"\n"))
    return b"\n".join(line for line in lines if line and not line.lstrip().startswith(b"//"))


def measured_files(test: str, root: str = ROOT) -> list[str]:
    """The files a figure recorded by ``test`` (``path::name``) measures, relative to ``root``:
    :data:`MEASURED` and the test's own file."""
    return sorted({os.path.relpath(p, root) for pattern in MEASURED
                   for p in glob.glob(os.path.join(root, pattern), recursive=True)}
                  | {test.split("::")[0]})


def fingerprint(test: str, root: str = ROOT) -> str:
    """SHA-256 over the code (:func:`code_of`) of the files :func:`measured_files` names.

    File order, line endings, comments and docstrings cannot change it; an edit of what a
    measured file or the test does changes it.
    """
    h = hashlib.sha256()
    for rel in measured_files(test, root):
        h.update(rel.replace(os.sep, "/").encode() + b"\0" + code_of(os.path.join(root, rel)) + b"\0")
    return h.hexdigest()


def figures(folder: str = FIGURES) -> list[dict]:
    """The committed figures in ``folder``, each with its file under ``"path"``."""
    found = []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(path, encoding="utf-8") as f:
            found.append(dict(json.load(f), path=path))
    return found


def stale(folder: str = FIGURES, root: str = ROOT) -> list[dict]:
    """The figures in ``folder`` measured on other code than ``root``'s (or whose test file is
    gone)."""
    out = []
    for fig in figures(folder):
        test_file = os.path.join(root, fig["test"].split("::")[0])
        if not os.path.exists(test_file) or fig.get("code") != fingerprint(fig["test"], root):
            out.append(fig)
    return out


def marked_tests(root: str = ROOT) -> list[str]:
    """Every test marked ``reliability``, as ``path::name`` (parameters dropped), by pytest's own
    collection."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "reliability",
                           "-p", "no:cacheprovider", "tests"], cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"collecting the reliability tests failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    ids = [line.split("[")[0] for line in proc.stdout.splitlines() if "::" in line]
    return list(dict.fromkeys(ids))


def covers(figure_test: str, test: str) -> bool:
    """Whether running ``test`` (``path::name``) re-measures a figure recorded by ``figure_test``
    (a file, whose tests record it together; ``path::name``; or ``path::name[parameters]``)."""
    if "::" not in figure_test:
        return test.split("::")[0] == figure_test
    return test == figure_test.split("[")[0]


def to_measure(folder: str = FIGURES, root: str = ROOT, every: bool = False,
               tests: list[str] | None = None) -> list[str]:
    """The tests ``make status`` runs: those that record a stale figure in ``folder`` and the marked
    ``tests`` (default: :func:`marked_tests`) that record no figure there; all with ``every``."""
    tests = marked_tests(root) if tests is None else tests
    if every:
        return list(tests)
    recorded = [fig["test"] for fig in figures(folder)]
    wanted = [fig["test"] for fig in stale(folder, root)]
    return [t for t in tests if any(covers(f, t) for f in wanted)
            or not any(covers(f, t) for f in recorded)]


def record(name: str, *, title: str, tried: int, passed: int, unit: str, test: str,
           details: dict | None = None, failures: list | None = None) -> str:
    """Write one figure: ``passed`` of ``tried`` ``unit`` behaved as required. Returns the path.

    ``name`` is a file-name-safe key; ``title`` says in words what was tried and what was required;
    ``test`` names the test (``path::function``); ``details`` holds any further counts (small, JSON);
    ``failures`` the first few cases that did not behave (for the reader to see, never silenced).
    """
    if not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"record: name must be letters, digits, '-' or '_', got {name!r}")
    if not (isinstance(tried, int) and isinstance(passed, int) and 0 <= passed <= tried):
        raise ValueError(f"record: need integers 0 <= passed <= tried, got passed={passed!r}, tried={tried!r}")
    os.makedirs(DIR, exist_ok=True)
    path = os.path.join(DIR, f"{name}.json")
    data = {"name": name, "title": title, "tried": tried, "passed": passed, "unit": unit, "test": test,
            "details": details or {}, "failures": [str(f)[:300] for f in (failures or [])[:10]],
            "code": fingerprint(test),
            "measured": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(tmp, path)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Stale reliability figures and what make status re-measures.")
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="name the stale figures in data/reliability/ (exit 1 if any)")
    c.add_argument("--warn", action="store_true", help="print a warning line and exit 0 instead")
    m = sub.add_parser("to-measure", help="print the tests make status must run, one per line")
    m.add_argument("--all", action="store_true", help="every test marked reliability")
    args = ap.parse_args(argv)
    if args.command == "to-measure":
        print("\n".join(to_measure(every=args.all)))
        return 0
    old = stale()
    if not old:
        print(f"reliability figures: all {len(figures())} fresh for this code")
        return 0
    names = ", ".join(fig["name"] for fig in old)
    print(f"{'WARNING: ' if args.warn else ''}{len(old)} reliability figure(s) stale for this code "
          f"({names}): 'make status' re-measures them (make test fails until they are committed)")
    return 0 if args.warn else 1


if __name__ == "__main__":
    sys.exit(main())
