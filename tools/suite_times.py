"""Run make targets one after the other and print each one's wall and CPU time: what the suite costs.

Usage::

    python tools/suite_times.py                       # the stages of make test, in its order
    python tools/suite_times.py test-fast book        # any targets
    python tools/suite_times.py --out times.json ...  # also write the times as JSON

``make test`` runs its stages through this script, so every run of it ends with the table (also
kept in ``_build/test_times.txt``). The first stage that fails stops the run (exit status 1) after
printing the times so far; the failing stage is marked. Times are wall-clock seconds of the whole
``make <stage>`` command, setup included, on whatever machine and load the run had.

Beside each wall time the table gives the stage's CPU time: user plus system seconds of ``make``
and every process under it that was waited for (``wait4``'s resource usage: pytest and its workers,
Jupyter kernels, Chromium, pip), and how many cores that kept busy on average (CPU / wall). The
total CPU time divided by the number of cores is the least wall time the same work could take on
this machine, however the stages were arranged.

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


def _reap(proc: subprocess.Popen, block: bool) -> float | None:
    """Wait for ``proc`` (or only look, ``block=False``); once it has ended, set its return code
    and return its CPU seconds and those of its waited-for descendants; ``None`` while it runs."""
    pid, status, usage = os.wait4(proc.pid, 0 if block else os.WNOHANG)
    if pid == 0:
        return None
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def run(stages: list[str], make: str = "make", cwd: str = ROOT) -> tuple[list[tuple], float]:
    """Run ``make <stage>`` for each stage (a ``+`` group: its stages at once) until one fails;
    return ((stage, wall seconds, exit status, CPU seconds) for every stage run, a group's own line
    after its members', total wall seconds)."""
    done = []
    start = time.perf_counter()
    for spec in stages:
        members = _group(spec)
        t0 = time.perf_counter()
        if len(members) == 1:
            proc = subprocess.Popen([make, "--no-print-directory", spec], cwd=cwd)
            cpu = _reap(proc, block=True)
            code = proc.returncode
            done.append((spec, time.perf_counter() - t0, code, cpu))
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
            ended = {}
            while len(ended) < len(procs):
                for stage, proc, _ in procs:
                    if stage not in ended and (cpu := _reap(proc, block=False)) is not None:
                        ended[stage] = (time.perf_counter() - t0, proc.returncode, cpu)
                time.sleep(0.05)
            for stage, _, log in procs[1:]:
                log.close()
                with open(log.name, encoding="utf-8", errors="replace") as f:
                    print(f"--- output of make {stage} (run beside {members[0]}) ---\n{f.read()}",
                          flush=True)
            for stage in members:
                done.append((stage, *ended[stage]))
            code = int(max(c != 0 for _, c, _ in ended.values()))
            done.append((spec, time.perf_counter() - t0, code, sum(c for _, _, c in ended.values())))
        if code != 0:
            break
    return done, time.perf_counter() - start


def cpu_total(done: list[tuple]) -> float:
    """The CPU seconds of the stages run (a group's line is the sum of its members', so it is left
    out)."""
    return sum(cpu for stage, _, _, cpu in done if "+" not in stage)


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
    ap.add_argument("--keep", default=os.path.join(ROOT, "_build", "test_times.txt"),
                    help="where the table is kept (default: _build/test_times.txt)")
    args = ap.parse_args(argv)
    stages = args.stages or make_test_stages()
    unknown = [s for s in stages if not re.fullmatch(r"[\w.-]+(\+[\w.-]+)*", s)]
    if unknown:
        ap.error(f"not make target names: {unknown}")
    if args.out:
        folder = os.path.dirname(os.path.abspath(args.out))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            ap.error(f"--out {args.out}: its folder {folder} is not a writable folder "
                     "(checked before running anything)")
    done, total = run(stages)
    text = table(done, total)
    print(f"stage times ({os.cpu_count()} CPUs):\n{text}", flush=True)
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
