"""``make test``: every stage of the full check, each started as soon as the stages it follows passed.

The stages and their order (:data:`STAGES`)::

    browser    tools/install_browser.sh: Debian's Chromium when it is missing
    notebooks  make test-notebooks: stored notebooks executed and in sync with their .md
    nbval      make test-nbval: every stored notebook re-run and compared
    package    make test-package: ruff and every package test, slow ones included   (niced)
    book       make book-after-nbval                                      after nbval
    lab        the JupyterLab tests (tests/site/test_lab.py)              after nbval, browser
    pdf        make pdf                                                   after book, browser
    site       every other website test, on the built book                after book, browser
    site-pdf   the PDF's tests (tests/site/test_pdf.py)                   after pdf

On two cores the stages one after the other leave a core idle for long stretches (the book build,
a fresh venv's install, a page in the browser). Run side by side, the package tests run at a lower
priority (``nice``): they fill idle time and yield to the chain nbval -> book -> pdf/site, which
sets the total. Nothing is skipped: the union of the site stages is ``tests/site`` (the ``site``
stage takes the folder and leaves out the two files the others run).

Each stage writes its whole output to ``_build/test_logs/STAGE.log``; the runner prints a line when
a stage starts and ends, the tail of each stage's log when it passes and the whole log when it
fails. On a failure it stops the stages still running and exits with status 1. At the end it prints
each stage's wall time and the total, and writes them to ``_build/test_times.txt``.

``make test`` runs it (the site stages are ``make test-site SITE_TESTS=...``, so every stage
gets the environment the Makefile exports) (``python tools/stage_runner.py --list`` shows
the stages without running them; ``--only STAGE ...`` runs some of them, with what they follow).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOGS = os.path.join(ROOT, "_build", "test_logs")
TIMES = os.path.join(ROOT, "_build", "test_times.txt")
MAKE = ("make", "--no-print-directory")
SITE = (*MAKE, "test-site")


@dataclasses.dataclass(frozen=True)
class Stage:
    name: str
    command: tuple[str, ...]
    after: tuple[str, ...] = ()
    nice: int = 0
    what: str = ""


STAGES: tuple[Stage, ...] = (
    Stage("browser", ("bash", "tools/install_browser.sh"),
          what="Debian's Chromium for the browser tests, when missing"),
    Stage("notebooks", (*MAKE, "test-notebooks"),
          what="stored notebooks executed and in sync with their .md"),
    Stage("nbval", (*MAKE, "test-nbval"), what="every stored notebook re-run and compared"),
    Stage("package", (*MAKE, "test-package"), nice=10,
          what="ruff and every package test, slow ones included"),
    Stage("book", (*MAKE, "book-after-nbval"), after=("nbval",),
          what="the -W book build, its execution cache filled from nbval's run"),
    Stage("lab", (*SITE, "SITE_TESTS=tests/site/test_lab.py"), after=("nbval", "browser"),
          what="the chapters in a real JupyterLab"),
    Stage("pdf", (*MAKE, "pdf"), after=("book", "browser"), what="the book as one PDF"),
    Stage("site", (*SITE, "SITE_TESTS=tests/site --ignore=tests/site/test_lab.py "
                           "--ignore=tests/site/test_pdf.py"), after=("book", "browser"),
          what="every other website test, on the built book"),
    Stage("site-pdf", (*SITE, "SITE_TESTS=tests/site/test_pdf.py"), after=("pdf",),
          what="the PDF's contents"),
)


def check_stages(stages: tuple[Stage, ...] = STAGES) -> None:
    """Raise ``ValueError`` when a stage follows an unknown or a later stage, or a name repeats."""
    seen: set[str] = set()
    for s in stages:
        if s.name in seen:
            raise ValueError(f"stage {s.name!r} is listed twice")
        unknown = [a for a in s.after if a not in seen]
        if unknown:
            raise ValueError(f"stage {s.name!r} follows {unknown}, which are not listed before it; "
                             "list a stage after every stage it follows")
        seen.add(s.name)


def with_prerequisites(names: list[str], stages: tuple[Stage, ...] = STAGES) -> tuple[Stage, ...]:
    """The stages named and every stage they follow, in :data:`STAGES` order."""
    by_name = {s.name: s for s in stages}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"unknown stage(s) {unknown}; the stages are {list(by_name)}")
    wanted: set[str] = set()
    todo = list(names)
    while todo:
        n = todo.pop()
        if n not in wanted:
            wanted.add(n)
            todo.extend(by_name[n].after)
    return tuple(s for s in stages if s.name in wanted)


def _tail(path: str, lines: int) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return "".join(f.readlines()[-lines:])


def run(stages: tuple[Stage, ...], *, poll: float = 0.5) -> int:
    """Run ``stages``; 0 when every one passed, 1 at the first failure (the others are stopped)."""
    check_stages(stages)
    os.makedirs(LOGS, exist_ok=True)
    start = time.time()
    clock = lambda: f"[{time.time() - start:5.0f} s]"  # noqa: E731
    waiting = list(stages)
    running: dict[str, tuple[subprocess.Popen, float, object]] = {}
    done: dict[str, tuple[float, float]] = {}          # name -> (started, ended), seconds from start
    failed: str | None = None
    try:
        while waiting or running:
            for s in [s for s in waiting if all(a in done for a in s.after)]:
                waiting.remove(s)
                log = open(os.path.join(LOGS, s.name + ".log"), "w", encoding="utf-8")
                nice = s.nice
                proc = subprocess.Popen(s.command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True,
                                        preexec_fn=(lambda n=nice: os.nice(n)) if nice else None)
                running[s.name] = (proc, time.time() - start, log)
                print(f"{clock()} {s.name}: started ({s.what}){' at nice ' + str(nice) if nice else ''}",
                      flush=True)
            for name, (proc, t0, log) in list(running.items()):
                if proc.poll() is None:
                    continue
                log.close()
                del running[name]
                path = os.path.join(LOGS, name + ".log")
                if proc.returncode != 0:
                    failed = name
                    print(f"{clock()} {name}: FAILED (exit {proc.returncode}); its whole output "
                          f"({path}):", flush=True)
                    print(_tail(path, 10**6), flush=True)
                    raise _Failed(name)
                done[name] = (t0, time.time() - start)
                print(f"{clock()} {name}: passed in {done[name][1] - t0:.0f} s; the end of its output:\n"
                      + "".join("    " + line for line in _tail(path, 3).splitlines(True)), flush=True)
            if running and not any(all(a in done for a in s.after) for s in waiting):
                time.sleep(poll)
    except (_Failed, KeyboardInterrupt):
        for name, (proc, _, log) in running.items():
            if proc.poll() is None:
                print(f"{clock()} {name}: stopped", flush=True)
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for name, (proc, _, log) in running.items():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            log.close()
        if failed is None:
            raise
        print(f"make test: FAILED in stage {failed} after {time.time() - start:.0f} s "
              f"(logs in {LOGS}/)", flush=True)
        return 1
    total = time.time() - start
    lines = [f"  {n}: {t1 - t0:.0f} s (from {t0:.0f} s to {t1:.0f} s)" for n, (t0, t1) in done.items()]
    with open(TIMES, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + f"\n  all stages: {total:.0f} s\n")
    print("make test: stage times (wall clock; stages overlap)\n" + "\n".join(lines))
    print(f"make test: all stages passed in {total:.0f} s")
    return 0


class _Failed(Exception):
    pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", action="store_true", help="print the stages and exit")
    ap.add_argument("--only", nargs="+", metavar="STAGE",
                    help="run these stages and the stages they follow")
    args = ap.parse_args(argv)
    check_stages()
    stages = with_prerequisites(args.only) if args.only else STAGES
    if args.list:
        for s in stages:
            after = f"  after {', '.join(s.after)}" if s.after else ""
            print(f"{s.name:10} {s.what}{after}{'  (niced)' if s.nice else ''}")
        return 0
    return run(stages)


if __name__ == "__main__":
    sys.exit(main())
