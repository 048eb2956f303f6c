"""The book's execution cache, filled before the build: from nbval's run, then two chapters at a time.

``make book`` lets Jupyter Book execute the chapters one after the other and keep the results in
its jupyter-cache (``_build/.jupyter_cache``). ``make test`` would execute every chapter twice that
way: once under nbval (which re-runs each stored ``.ipynb`` and compares its outputs with the stored
ones) and once more for the book. Its book stage (``make book-after-nbval``) fills the cache first,
in two steps, and the build then finds every chapter there:

* ``prime``: a stored notebook that nbval has just checked stands for a fresh execution. A pytest
  plugin (``pytest -p tools.book_cache --nbval-record FILE``) records, per stored notebook, whether
  every one of its cells passed under nbval, how long its cells took, and the SHA-256 of the file
  as it was when the run started (before nbval read it). A notebook is added only when all of
  these hold (the command prints why any other was not):

  1. nbval ran it in that run, and every one of its cells passed;
  2. the file is byte for byte what it was when nbval's run started (its SHA-256 is unchanged);
  3. nbval compared every cell: none is tagged ``nbval-ignore-output`` or ``nbval-skip`` (such
     outputs may differ between machines, so the page must show this machine's);
  4. it has no widget views: the stored files drop the widget state that the page needs to draw
     them (``tools/execute_notebooks.py``).

* ``execute``: every chapter not in the cache after that is executed from its ``.md``, as the build
  would execute it (myst-nb's reader, the chapter's folder as working directory, the book's
  timeout), but two at a time, and cached with its run time. A chapter that fails stops the command
  with its traceback.

jupyter-cache finds a notebook by a hash of its code cells and kernelspec only; a ``.md`` whose code
differs from its stored ``.ipynb`` (which ``make test-notebooks`` forbids) would not match its
stored file, so it is executed. nbval compares text, not images, so a figure of a primed chapter
is the stored one, drawn by the same code. The status page's execution table shows, per chapter,
nbval's time for its cells or the time of its execution here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

#: Cell tags under which nbval does not compare (all of) a cell's outputs.
EXEMPT_TAGS = frozenset({"nbval-ignore-output", "nbval-skip"})


def file_sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# --------------------------------------------------------------------------- the pytest plugin


def pytest_addoption(parser):
    parser.addoption(
        "--nbval-record", metavar="FILE", default=None,
        help="write, per stored notebook, whether all its cells passed under nbval, their time and "
             "the file's SHA-256 (tools/book_cache.py)",
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


# --------------------------------------------------------------------------- priming the cache


def reasons_to_execute(path: str, record: dict | None, nb=None) -> list[str]:
    """Why the stored notebook ``path`` (already read: ``nb``) may not stand for a fresh
    execution (empty: it may)."""
    import nbformat

    from sattn.presentation.lab import WIDGET_VIEW  # the mime type the save hook rewrites too

    if record is None:
        return ["nbval did not run it"]
    reasons = []
    if not record.get("all_cells_passed"):
        reasons.append("not every cell passed under nbval")
    if record.get("sha256") != file_sha256(path):
        reasons.append("the file changed since nbval's run started")
    if nb is None:
        nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        tags = set(cell.get("metadata", {}).get("tags", []))
        if tags & EXEMPT_TAGS:
            reasons.append(f"a cell tagged {sorted(tags & EXEMPT_TAGS)[0]}")
            break
    if any(WIDGET_VIEW in out.get("data", {}) for cell in nb.cells
           for out in cell.get("outputs", [])):
        reasons.append("widget views (the page needs their state)")
    return reasons


def prime(results_path: str, cache_dir: str, notebooks: list[str]) -> int:
    """Add every stored notebook that may stand for a fresh execution; return how many were."""
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    if not os.path.exists(results_path):
        raise SystemExit(f"book_cache: no nbval record at {results_path}: run the nbval stage "
                         "(make test-nbval) first; it writes the record")
    with open(results_path, encoding="utf-8") as f:
        records = json.load(f)["notebooks"]
    cache = get_cache(cache_dir)
    added = 0
    for path in notebooks:
        key = os.path.relpath(path).replace(os.sep, "/")
        nb = nbformat.read(path, as_version=4)
        reasons = reasons_to_execute(path, records.get(key), nb)
        if reasons:
            print(f"  {key}: to be executed ({'; '.join(reasons)})")
            continue
        md = os.path.abspath(path[: -len(".ipynb")] + ".md")
        cache.cache_notebook_bundle(
            CacheBundleIn(nb, md, data={"execution_seconds": records[key]["seconds"],
                                        "executed_by": "nbval"}),
            check_validity=False, overwrite=True)
        added += 1
        print(f"  {key}: outputs checked by nbval ({records[key]['seconds']:.1f} s), cached")
    return added


# --------------------------------------------------------------------------- executing the rest


def _execute_one(args):
    """Execute one chapter's .md as myst-nb's cache mode would (run in a worker process)."""
    md, timeout = args
    from jupyter_cache.executors.utils import single_nb_execution
    from myst_nb.core.read import read_myst_markdown_notebook

    with open(md, encoding="utf-8") as f:
        nb = read_myst_markdown_notebook(f.read())
    result = single_nb_execution(nb, cwd=os.path.dirname(os.path.abspath(md)), timeout=timeout,
                                 allow_errors=False, meta_override=True)
    return md, nb, result.time, result.exc_string if result.err else None


def longest_first(mds: list[str], record: str | None) -> list[str]:
    """``mds`` by nbval's time for their stored notebooks in ``record``, longest first (chapters
    without a time keep their order, after the others)."""
    if not record or not os.path.exists(record):
        return list(mds)
    with open(record, encoding="utf-8") as f:
        seconds = {k[: -len(".ipynb")]: v["seconds"] for k, v in json.load(f)["notebooks"].items()}
    key = lambda md: os.path.relpath(md)[: -len(".md")].replace(os.sep, "/")  # noqa: E731
    return sorted(mds, key=lambda md: -seconds.get(key(md), 0.0))


def execute(cache_dir: str, mds: list[str], workers: int = 2, timeout: int = 300,
            record: str | None = None) -> int:
    """Execute, ``workers`` at a time, every chapter the cache does not hold; return how many.

    With ``record`` (the nbval record), the chapters nbval took longest over start first, so that
    a long chapter does not run alone at the end."""
    from concurrent.futures import ProcessPoolExecutor

    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from myst_nb.core.read import read_myst_markdown_notebook

    cache = get_cache(cache_dir)
    todo = []
    for md in mds:
        with open(md, encoding="utf-8") as f:
            nb = read_myst_markdown_notebook(f.read())
        try:
            cache.match_cache_notebook(nb)
        except KeyError:
            todo.append(md)
    todo = longest_first(todo, record)
    failed = []
    with ProcessPoolExecutor(max_workers=max(1, min(workers, len(todo) or 1))) as pool:
        for md, nb, seconds, error in pool.map(_execute_one, [(md, timeout) for md in todo]):
            if error is not None:
                failed.append(md)
                print(f"  {md}: FAILED after {seconds:.1f} s\n{error}", file=sys.stderr)
                continue
            cache.cache_notebook_bundle(
                CacheBundleIn(nb, os.path.abspath(md), data={"execution_seconds": seconds}),
                check_validity=False, overwrite=True)
            print(f"  {md}: executed in {seconds:.1f} s, cached")
    if failed:
        raise SystemExit(f"book_cache: {len(failed)} chapter(s) failed: {', '.join(failed)}")
    return len(todo)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prime", help="add the stored notebooks nbval has checked to the book's cache")
    p.add_argument("--results", required=True, help="the file --nbval-record wrote")
    p.add_argument("--cache", required=True, help="the book's jupyter-cache folder")
    p.add_argument("notebooks", nargs="+", help="stored notebooks (chapters/*.ipynb)")
    e = sub.add_parser("execute", help="execute, two at a time, the chapters the cache lacks")
    e.add_argument("--cache", required=True, help="the book's jupyter-cache folder")
    e.add_argument("--workers", type=int, default=2, help="chapters executed at once (default 2)")
    e.add_argument("--timeout", type=int, default=300, help="seconds per cell (the book's: 300)")
    e.add_argument("--record", default=None,
                   help="the nbval record: start the chapters nbval took longest over first")
    e.add_argument("chapters", nargs="+", help="the chapters' .md files")
    args = parser.parse_args(argv)
    if args.command == "prime":
        added = prime(args.results, args.cache, args.notebooks)
        print(f"book_cache: {added} of {len(args.notebooks)} chapters taken from nbval's run")
    else:
        if args.workers < 1 or args.timeout < 1:
            parser.error("--workers and --timeout must be positive integers")
        ran = execute(args.cache, args.chapters, args.workers, args.timeout, args.record)
        print(f"book_cache: {ran} of {len(args.chapters)} chapters executed, "
              f"{args.workers} at a time; the others were in the cache")
    return 0


if __name__ == "__main__":
    sys.exit(main())
