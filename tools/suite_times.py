"""Run make targets one after the other and print each one's wall and CPU time: what the suite costs.

Usage::

    python tools/suite_times.py                       # the stages of make test, in its order
    python tools/suite_times.py test-fast book        # any targets
    python tools/suite_times.py --out times.json ...  # also write the times as JSON

``make test`` runs its stages through this script, so every run of it ends with the table (also
kept in ``_build/test_times.txt``). The first stage that fails stops the run (exit status 1) after
printing the times so far; the failing stage is marked. Times are wall-clock seconds of the whole
``make <stage>`` command, setup included, on whatever machine and load the run had.

Beside each wall time the table gives the stage's CPU time, user plus system seconds of ``make``
and every process under it (pytest and its workers, Jupyter kernels, Chromium, pip), and how many
cores that kept busy on average (CPU / wall). The total CPU time divided by the number of cores is
the least wall time the same work could take on those cores, however the stages were arranged.
A process's CPU time reaches its parent only when the parent waits for it; Chromium's renderers and
other processes whose parent ended first would be handed to init and never counted (a page visit's
5 s of CPU showed as 1.5 s). So on Linux the script makes itself the *child subreaper* of what it
starts (``prctl(PR_SET_CHILD_SUBREAPER)``): such a process is handed to it instead, and its time is
counted in the stage during which it ends (in a group's own line, not a member's). Elsewhere the
table counts only what was waited for, and says so.

Stages joined by ``+`` (``test-site-pages+pdf``) run at the same time, for stages that leave a core
idle (a browser typesetting one page keeps one core busy). The first runs as usual; the others run
at a lower priority (``nice -n 10``), so the first's timing-sensitive checks keep their share of
the CPU, and write their output to ``_build/suite/<stage>.log``, printed when the group ends. The
table gives each stage's own time and the group's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_test_stages(makefile: str = os.path.join(ROOT, "Makefile")) -> list[str]:
    """The ``STAGES :=`` of the Makefile (continued over ``\\`` line ends): the stages ``make
    test`` runs, in order."""
    with open(makefile, encoding="utf-8") as f:
        m = re.search(r"^STAGES\s*:=((?:.*\\\n)*.*)$", f.read(), re.M)
    if not m:
        raise SystemExit(f"no 'STAGES :=' line in {makefile}")
    return m.group(1).replace("\\\n", " ").split()


#: How much lower the priority of a concurrent stage is (see the module's docstring).
NICE = 10


def _group(spec: str) -> list[str]:
    return spec.split("+")


#: prctl option: orphaned descendants are re-parented to this process, not to init (Linux >= 3.4).
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process the child subreaper of its descendants (see the module docstring);
    False where the system has no such call. Only the command line does this: a test process
    that became one would collect the orphans of every later test."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def _reap(pids, adopt: bool, until: int | None = None) -> list[tuple[int, int, float]]:
    """Collect the ended children among ``pids`` (with ``adopt``: every ended child of this
    process, adopted orphans too): (pid, exit status, CPU seconds of it and its waited-for
    descendants). With ``until``, wait until that child has ended; without, only collect what
    has already ended."""
    ended = []
    if not adopt:
        for pid in pids:
            got, status, usage = os.wait4(pid, 0 if pid == until else os.WNOHANG)
            if got:
                ended.append((got, os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime))
        return ended
    while True:
        wait = until is not None and all(pid != until for pid, _, _ in ended)
        try:
            pid, status, usage = os.wait4(-1, 0 if wait else os.WNOHANG)
        except ChildProcessError:         # no child left
            break
        if pid == 0:
            break
        ended.append((pid, os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime))
    return ended


def run(stages: list[str], make: str = "make", cwd: str = ROOT, *,
        adopt: bool = False) -> tuple[list[tuple], float]:
    """Run ``make <stage>`` for each stage (a ``+`` group: its stages at once) until one fails;
    return ((stage, wall seconds, exit status, CPU seconds) for every stage run, a group's own line
    after its members', total wall seconds). ``adopt``: this process is a subreaper
    (:func:`become_subreaper`); collect and count the orphans handed to it."""
    done = []
    start = time.perf_counter()
    for spec in stages:
        members = _group(spec)
        t0 = time.perf_counter()
        if len(members) == 1:
            proc = subprocess.Popen([make, "--no-print-directory", spec], cwd=cwd)
            ended = _reap([proc.pid], adopt, until=proc.pid)
            code = proc.returncode = next(c for pid, c, _ in ended if pid == proc.pid)
            done.append((spec, time.perf_counter() - t0, code, sum(u for _, _, u in ended)))
        else:
            logs = os.path.join(cwd, "_build", "suite")
            os.makedirs(logs, exist_ok=True)
            procs = []
            for i, stage in enumerate(members):
                cmd = [make, "--no-print-directory", stage]
                if i:
                    log = open(os.path.join(logs, f"{stage}.log"), "w", encoding="utf-8")
                    procs.append((stage, subprocess.Popen(["nice", "-n", str(NICE), *cmd], cwd=cwd,
                                                          stdout=log, stderr=subprocess.STDOUT), log))
                else:
                    procs.append((stage, subprocess.Popen(cmd, cwd=cwd), None))
            ended, adopted = {}, 0.0
            by_pid = {proc.pid: (stage, proc) for stage, proc, _ in procs}
            while len(ended) < len(procs):
                running = [pid for pid, (stage, _) in by_pid.items() if stage not in ended]
                for pid, c, cpu in _reap(running, adopt):
                    if pid in by_pid:
                        stage, proc = by_pid[pid]
                        proc.returncode = c
                        ended[stage] = (time.perf_counter() - t0, c, cpu)
                    else:                 # an orphan adopted from one of the members
                        adopted += cpu
                time.sleep(0.05)
            for stage, _, log in procs[1:]:
                log.close()
                with open(log.name, encoding="utf-8", errors="replace") as f:
                    print(f"--- output of make {stage} (run beside {members[0]}) ---\n{f.read()}",
                          flush=True)
            for stage in members:
                done.append((stage, *ended[stage]))
            code = int(max(c != 0 for _, c, _ in ended.values()))
            done.append((spec, time.perf_counter() - t0, code,
                         sum(c for _, _, c in ended.values()) + adopted))
        if code != 0:
            break
    return done, time.perf_counter() - start


def cpu_total(done: list[tuple]) -> float:
    """The CPU seconds of the stages run: each stage's, a group's own line for its members (it
    holds theirs and the orphans adopted from them)."""
    members = {m for stage, *_ in done if "+" in stage for m in _group(stage)}
    return sum(cpu for stage, _, _, cpu in done if stage not in members)


def table(done: list[tuple], total: float, cores: int | None = None) -> str:
    cores = cores or os.cpu_count() or 1
    width = max([len(d[0]) for d in done] + [5])
    lines = [f"  {'':<{width}}  {'wall':>9}  {'CPU':>9}  cores busy"]
    for stage, seconds, code, cpu in done:
        busy = cpu / seconds if seconds > 0 else 0.0
        lines.append(f"  {stage:<{width}}  {seconds:7.1f} s  {cpu:7.1f} s  {busy:10.2f}"
                     + ("" if code == 0 else f"  FAILED (exit {code})"))
    cpu = cpu_total(done)
    lines.append(f"  {'total':<{width}}  {total:7.1f} s  {cpu:7.1f} s  {cpu / total if total else 0:10.2f}")
    lines.append(f"  the same CPU time on {cores} cores takes at least {cpu / cores:.1f} s of wall time")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stages", nargs="*", help="make targets (default: the STAGES of make test)")
    ap.add_argument("--out", help="also write the times here as JSON")
    ap.add_argument("-C", "--directory", default=ROOT,
                    help="run make in this folder (default: the repository's root)")
    ap.add_argument("--keep", default=os.path.join(ROOT, "_build", "test_times.txt"),
                    help="where the table is kept (default: _build/test_times.txt)")
    args = ap.parse_args(argv)
    if not os.path.isfile(os.path.join(args.directory, "Makefile")):
        ap.error(f"-C {args.directory}: no Makefile there")
    stages = args.stages or make_test_stages(os.path.join(args.directory, "Makefile"))
    unknown = [s for s in stages if not re.fullmatch(r"[\w.-]+(\+[\w.-]+)*", s)]
    if unknown:
        ap.error(f"not make target names: {unknown}")
    if args.out:
        folder = os.path.dirname(os.path.abspath(args.out))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            ap.error(f"--out {args.out}: its folder {folder} is not a writable folder "
                     "(checked before running anything)")
    adopting = become_subreaper()
    done, total = run(stages, cwd=args.directory, adopt=adopting)
    text = table(done, total)
    counted = ("every process under each stage counted" if adopting else
               "CPU: only processes their parents waited for (no subreaper on this system)")
    print(f"stage times ({os.cpu_count()} CPUs; {counted}):\n{text}", flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.keep)), exist_ok=True)
    with open(args.keep, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"stages": [{"stage": s, "seconds": round(t, 1), "cpu_seconds": round(u, 1),
                                   "exit": c} for s, t, c, u in done],
                       "total_seconds": round(total, 1), "cpu_seconds": round(cpu_total(done), 1),
                       "cpus": os.cpu_count()}, f, indent=1)
            f.write("\n")
    failed = [d[0] for d in done if d[2] != 0]
    ran = [d[0] for d in done]
    if failed:
        print(f"stopped at {failed[0]}; not run: "
              f"{', '.join(s for s in stages if s not in ran) or 'none'}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
