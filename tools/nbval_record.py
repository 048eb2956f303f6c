"""What nbval verified, per stored notebook: the record that lets the book be built from exactly those files.

``make test`` runs nbval once over every stored notebook (``chapters/*.ipynb``): nbval executes it
afresh and compares every output with the stored one. The website is then built from the stored
notebooks themselves (``execute_notebooks: "off"``, ``tools/stored_notebooks.py``), with no
execution of its own. This module ties the two together:

* a pytest plugin (``pytest -p tools.nbval_record --nbval-record FILE``) records, per stored
  notebook, whether every one of its cells passed under nbval, how long its cells took, and the
  SHA-256 of the file as it was when the run started (before nbval read it);
* :func:`problems` says, for the notebooks a build is about to read, why any of them is not one
  that nbval verified in that run: nbval did not run it, a cell failed, or the file changed since
  (its SHA-256). ``make book-after-nbval`` passes the record to the build
  (``BOOK_NBVAL_RECORD``), which stops with those reasons rather than publish an unverified page.

The status page's execution table shows, for each chapter, nbval's time for its cells when the
build was given a record (the execution really made in that run), and otherwise the time
``tools/execute_notebooks.py`` took to execute the stored notebook.
"""

from __future__ import annotations

import hashlib
import json
import os


def file_sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# --------------------------------------------------------------------------- the pytest plugin


def pytest_addoption(parser):
    parser.addoption(
        "--nbval-record", metavar="FILE", default=None,
        help="write, per stored notebook, whether all its cells passed under nbval, their time and "
             "the file's SHA-256 (tools/nbval_record.py)",
    )


class _Recorder:
    def __init__(self, out: str, rootdir: str, args: list[str], invoked_in: str):
        self.out = out
        self.rootdir = rootdir
        self.args = args
        self.invoked_in = invoked_in
        self.notebooks: dict[str, dict] = {}
        self.hashes: dict[str, str] = {}

    def pytest_sessionstart(self, session):
        """Hash every notebook before nbval reads it: a file changed later, even during the run,
        then no longer matches its record (hashing at the end would vouch for the changed file)."""
        for arg in self.args:
            arg = os.path.join(self.invoked_in, arg.split("::", 1)[0])
            found = [arg] if os.path.isfile(arg) else [
                os.path.join(d, f) for d, _, fs in os.walk(arg) for f in fs]
            for full in found:
                if full.endswith(".ipynb"):
                    rel = os.path.relpath(full, self.rootdir).replace(os.sep, "/")
                    self.hashes[rel] = file_sha256(full)

    def pytest_runtest_logreport(self, report):
        path = report.nodeid.split("::", 1)[0]
        if not path.endswith(".ipynb"):
            return
        entry = self.notebooks.setdefault(path, {"cells": 0, "failed": 0, "seconds": 0.0})
        entry["seconds"] += report.duration
        if report.when == "call":
            entry["cells"] += 1
        if report.outcome != "passed":  # a failure in any phase, or a skipped cell
            entry["failed"] += 1

    def pytest_sessionfinish(self, session, exitstatus):
        results = {}
        for path, entry in sorted(self.notebooks.items()):
            results[path] = {
                "all_cells_passed": entry["failed"] == 0 and entry["cells"] > 0,
                "cells": entry["cells"],
                "seconds": round(entry["seconds"], 2),
                "sha256": self.hashes.get(path),  # as the file was when the run started
            }
        os.makedirs(os.path.dirname(os.path.abspath(self.out)), exist_ok=True)
        tmp = self.out + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"notebooks": results}, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp, self.out)


def pytest_configure(config):
    out = config.getoption("--nbval-record")
    if out and not hasattr(config, "workerinput"):  # the controller of an xdist run, or a plain run
        if os.path.exists(out):
            os.remove(out)  # a record never outlives the run that wrote it
        recorder = _Recorder(out, str(config.rootpath), list(config.args),
                             str(config.invocation_params.dir))
        config.pluginmanager.register(recorder, "nbval-recorder")


# --------------------------------------------------------------------------- checking a build's notebooks


def load(record_path: str) -> dict:
    """The per-notebook entries of the record at ``record_path`` (keys: paths like
    ``chapters/01_x.ipynb``); a clear error when there is none."""
    if not os.path.exists(record_path):
        raise FileNotFoundError(f"no nbval record at {record_path}: run the nbval stage "
                                "(make test-nbval) first; it writes the record")
    with open(record_path, encoding="utf-8") as f:
        return json.load(f)["notebooks"]


def problems(records: dict, notebooks: dict[str, bytes]) -> list[str]:
    """Why each of ``notebooks`` (key -> the file's bytes as the build reads them) is not a notebook
    that nbval verified in the recorded run; empty when every one is."""
    found = []
    for key, data in sorted(notebooks.items()):
        entry = records.get(key)
        if entry is None:
            found.append(f"{key}: nbval did not run it")
        elif not entry.get("all_cells_passed"):
            found.append(f"{key}: not every cell passed under nbval")
        elif entry.get("sha256") != hashlib.sha256(data).hexdigest():
            found.append(f"{key}: the file changed since nbval's run started")
    return found
