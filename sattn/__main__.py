"""Command line of :mod:`sattn`.

    python -m sattn reproduce fig3|fig4|fig5|decades|acceptance|width-bits [--setups ...] [--lengths ...] [--jobs N]
                                             [--scheduler local|tcp://HOST:PORT] [--workers N]
                                             [--profile quick|paper|paper-q1|out-of-sample] [--out DIR] [--no-progress]
                                             [--budget N (decades)]
    python -m sattn bench [--quick] [--out benchmarks/results.json]
    python -m sattn setups
    python -m sattn lab [FOLDER] [JupyterLab options]   # JupyterLab on the chapters (default: chapters)

``reproduce`` is resumable: rerunning the same command after an interruption (Ctrl-C, a crash,
``kill -9``) recomputes only the tasks that had not finished. Results do not depend on ``--jobs``
or on the cluster. ``--scheduler tcp://HOST:PORT`` runs the tasks on a running Dask cluster,
``--scheduler local`` on a local cluster of ``--workers`` processes (default: one per core); the
results come back to this process, which writes the store (with ``--jobs`` too; workers exit when
this process dies). One run at a time may write to an ``--out`` folder (a second one is refused,
changing nothing). Bad requests and filesystem faults end with one ``error:`` line and status 2.
"""

from __future__ import annotations

import argparse
import sys

from .errors import SizeTooLargeError
from .experiments.acceptance import reproduce_acceptance
from .experiments.bench import main as bench_main
from .experiments.protocol import reproduce
from .experiments.setups import SETUPS, ExperimentError, get_profile
from .experiments.store import StoreError, filesystem_error
from .frontier import reproduce_width_bits
from .presentation import lab


def _reproduce(args) -> int:
    if args.figure == "width-bits":
        if args.profile not in ("quick", "paper"):
            raise ExperimentError(f"width-bits has the profiles quick and paper, got {args.profile!r}")
        man = reproduce_width_bits(profile=args.profile, out=args.out,
                                   progress=not args.no_progress)
        print(f"width-bits ({man['profile']}): {len(man['computed'])} tasks computed, "
              f"{len(man['reused'])} reused, {man['wall_seconds_this_run']:.1f} s wall")
        return 0
    if args.figure == "acceptance":
        return _reproduce_acceptance(args)
    if args.no_compute:
        raise ExperimentError("--no-compute applies to the acceptance experiment only")
    man = reproduce(args.figure, profile=args.profile, setups=args.setups, lengths=args.lengths,
                    jobs=args.jobs, out=args.out, progress=not args.no_progress,
                    scheduler=args.scheduler, workers=args.workers, budget=args.budget)
    if args.figure == "fig5":
        print(f"fig5: wrote maps for {man['setup']['name']} at L = {man['L']} "
              f"in {man['wall_seconds_this_run']:.1f} s")
    else:
        where = "" if man.get("scheduler") is None else (
            f" on {man['dask_workers']} Dask worker(s) at {man['scheduler']}"
            if man.get("dask_workers") is not None else f" (scheduler {man['scheduler']})")
        print(f"{args.figure} ({man['profile']}): {len(man['computed'])} tasks computed{where}, "
              f"{len(man['reused'])} reused, {man['wall_seconds_this_run']:.1f} s wall")
    return 0


def _reproduce_acceptance(args) -> int:
    given = [f"--{n}" for n in ("scheduler", "workers", "budget") if getattr(args, n) is not None]
    verb = "applies" if len(given) == 1 else "apply"
    if given:
        raise ExperimentError(f"the acceptance experiment runs with joblib (--jobs) and the "
                              f"registered draws per width; {', '.join(given)} {verb} to fig3, "
                              "fig4 and decades only")
    man = reproduce_acceptance(profile=args.profile, setups=args.setups, lengths=args.lengths,
                               jobs=args.jobs, out=args.out, progress=not args.no_progress,
                               compute=not args.no_compute)
    print(f"acceptance ({man['profile']}): {len(man['computed'])} curves computed, "
          f"{len(man['reused'])} reused, {len(man['missing'])} missing, "
          f"{man['wall_seconds_this_run']:.1f} s wall")
    return 0


def _bench(args) -> int:
    return bench_main(quick=args.quick, out=args.out)


def _setups(args) -> int:
    prof = get_profile(args.profile)      # ExperimentError (a clear message) for an unknown name
    print(f"{'name':16s} {'k':>2s} {'gamma':>5s} {'eps1':>5s} {'eps2':>5s}  "
          f"d grid start:stop:step ({prof.name})")
    for name, s in SETUPS.items():
        a, b, c = prof.grid(name)
        print(f"{name:16s} {s.k:2d} {s.gamma:5g} {s.eps1:5g} {s.eps2:5g}  {a}:{b}:{c}")
    return 0


def _lengths(text):
    return [int(x) for x in text.replace(",", " ").split()]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sattn", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("reproduce", help="compute the data of Figure 3, 4, 5, of the decades, "
                                         "the acceptance or the width-bits experiment (resumable)")
    r.add_argument("figure", help="fig3, fig4, fig5, decades, acceptance or width-bits")
    r.add_argument("--setups", nargs="+", default=None, help="setup names (see `setups`)")
    r.add_argument("--lengths", nargs="+", default=None, type=int,
                   help="strictly increasing sequence lengths L")
    r.add_argument("--jobs", type=int, default=1, help="parallel workers (-1: all cores)")
    r.add_argument("--scheduler", default=None, metavar="local|ADDRESS",
                   help="run the tasks on a Dask cluster: 'local' starts one on 127.0.0.1 for this "
                        "run, an address (tcp://host:port) joins a running one; this process "
                        "writes the results. Not with --jobs")
    r.add_argument("--workers", type=int, default=None,
                   help="worker processes of --scheduler local (default: one per core)")
    r.add_argument("--profile", default="quick", help="quick (default), paper or paper-q1; acceptance also out-of-sample")
    r.add_argument("--out", default=None,
                   help="output folder (default: the profile's: data/, data/q1/ or data/quick/)")
    r.add_argument("--budget", type=int, default=None,
                   help="decades only: draws per width (default: the profile's, 16 for paper)")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--no-compute", action="store_true",
                   help="acceptance only: write the CSV and manifest from the finished curves, "
                        "compute nothing (the manifest lists the missing ones)")
    r.set_defaults(func=_reproduce)

    b = sub.add_parser("bench", help="fast vs reference engine; writes benchmarks/results.json")
    b.add_argument("--quick", action="store_true", help="small sizes only (a smoke test)")
    b.add_argument("--out", default="benchmarks/results.json", help="results file (default: %(default)s)")
    b.set_defaults(func=_bench)

    s = sub.add_parser("setups", help="list the twelve setups and their d grids")
    s.add_argument("--profile", default="paper")
    s.set_defaults(func=_setups)

    sub.add_parser("lab", help="JupyterLab on the chapters (default folder: chapters; other "
                               "arguments go to JupyterLab): saves keep each .md/.ipynb pair "
                               "as the book stores it (sattn.presentation.lab)")
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["lab"]:   # the rest goes to JupyterLab as it is (its options are its own)
        rest = argv[1:]
        folder = rest.pop(0) if rest and not rest[0].startswith("-") else "chapters"
        try:
            return lab.main(folder, rest)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ExperimentError, StoreError, SizeTooLargeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:                   # a filesystem fault the store did not name itself
        print(f"error: {filesystem_error(exc, 'use')}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished tasks are saved; rerun the same command to resume",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
