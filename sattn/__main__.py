"""Command line of :mod:`sattn`.

    python -m sattn reproduce fig3|fig4|fig5|decades|acceptance|width-bits|width-codes [--setups ...] [--lengths ...] [--jobs N]
                                             [--scheduler local|tcp://HOST:PORT] [--workers N]
                                             [--profile quick|paper|paper-q1|out-of-sample] [--out DIR] [--no-progress]
                                             [--budget N (decades)]
    python -m sattn bench [--quick] [--out FILE]            # writes FILE only when --out is given
    python -m sattn setups [--profile quick|paper|paper-q1]
    python -m sattn lab [FOLDER] [JupyterLab options]   # JupyterLab on the chapters (default: chapters)
    python -m sattn --version

``reproduce`` is resumable: rerunning the same command after an interruption (Ctrl-C, a crash,
``kill -9``) recomputes only the tasks that had not finished. Results do not depend on ``--jobs``
or on the cluster. ``--scheduler tcp://HOST:PORT`` runs the tasks on a running Dask cluster,
``--scheduler local`` on a local cluster of ``--workers`` processes (default: one per core); the
results come back to this process, which writes the store (with ``--jobs`` too; workers exit when
this process dies). One run at a time may write to an ``--out`` folder (a second one is refused,
changing nothing). Bad requests and filesystem faults end with one ``error:`` line and status 2.

Every option is honoured or refused: an option that an experiment does not use (``OPTIONS`` lists
which each one honours) ends the command with an error before any work, and so does an output path
that cannot be written. ``bench`` writes no file unless ``--out`` names one. ``lab`` needs the
``lab`` extra (``pip install 'sattn[lab]'``); without it the command says so.
"""

from __future__ import annotations

import argparse
import sys

from ._version import __version__
from .errors import SizeTooLargeError
from .experiments.acceptance import ACCEPTANCE_PROFILES, reproduce_acceptance
from .runs.bench import main as bench_main
from .experiments.protocol import FIGURES, reproduce
from .experiments.setups import PROFILES, SETUPS, ExperimentError, get_profile
from .runs.store import StoreError, filesystem_error
from .frontier import reproduce_width_bits
from .codes.measure import reproduce_width_codes
from .presentation import lab


#: The experiments of ``reproduce``, in the order of the help.
EXPERIMENTS = (*FIGURES, "acceptance", "width-bits", "width-codes")
#: The options of ``reproduce`` (besides ``--profile``, ``--out`` and ``--no-progress``) that each
#: experiment honours; giving any other one is an error, raised before any work.
_GRID = ("setups", "lengths", "jobs", "scheduler", "workers")
OPTIONS = {"fig3": _GRID, "fig4": _GRID, "decades": (*_GRID, "budget"), "fig5": (),
           "acceptance": ("setups", "lengths", "jobs", "no_compute"), "width-bits": ("jobs",),
           "width-codes": ("jobs",)}
#: The profiles of each experiment (``--profile``).
EXPERIMENT_PROFILES = {**{f: tuple(PROFILES) for f in FIGURES},
                       "acceptance": tuple(ACCEPTANCE_PROFILES),
                       "width-bits": ("quick", "paper"),
                       "width-codes": ("quick", "paper")}
#: Every profile name some experiment has (``--profile``'s choices; check_options then refuses a
#: profile that the chosen experiment does not have).
ALL_PROFILES = tuple(dict.fromkeys(p for ps in EXPERIMENT_PROFILES.values() for p in ps))


def check_options(args) -> None:
    """Refuse, with one message, every option given that ``args.figure`` does not honour."""
    given = [n for n in ("setups", "lengths", "jobs", "scheduler", "workers", "budget", "no_compute")
             if getattr(args, n) not in (None, False)]
    refused = [n for n in given if n not in OPTIONS[args.figure]]
    if refused:
        flags = ", ".join("--" + n.replace("_", "-") for n in refused)
        takes = ", ".join("--" + n.replace("_", "-") for n in OPTIONS[args.figure]) or "none"
        raise ExperimentError(f"reproduce {args.figure} does not use {flags} (its options besides "
                              f"--profile, --out and --no-progress: {takes})")
    if args.profile not in EXPERIMENT_PROFILES[args.figure]:
        raise ExperimentError(f"{args.figure} has the profiles "
                              f"{', '.join(EXPERIMENT_PROFILES[args.figure])}, got {args.profile!r}")


def _reproduce(args) -> int:
    check_options(args)
    jobs = 1 if args.jobs is None else args.jobs
    if args.figure == "width-bits":
        man = reproduce_width_bits(profile=args.profile, out=args.out, jobs=jobs,
                                   progress=not args.no_progress)
        print(f"width-bits ({man['profile']}): {len(man['computed'])} tasks computed, "
              f"{len(man['reused'])} reused, {man['wall_seconds_this_run']:.1f} s wall")
        return 0
    if args.figure == "width-codes":
        man = reproduce_width_codes(profile=args.profile, out=args.out, jobs=jobs,
                                    progress=not args.no_progress)
        print(f"width-codes ({man['profile']}): {len(man['computed'])} tasks computed, "
              f"{len(man['reused'])} reused, {man['wall_seconds_this_run']:.1f} s wall")
        return 0
    if args.figure == "acceptance":
        return _reproduce_acceptance(args, jobs)
    man = reproduce(args.figure, profile=args.profile, setups=args.setups, lengths=args.lengths,
                    jobs=jobs, out=args.out, progress=not args.no_progress,
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


def _reproduce_acceptance(args, jobs) -> int:
    man = reproduce_acceptance(profile=args.profile, setups=args.setups, lengths=args.lengths,
                               jobs=jobs, out=args.out, progress=not args.no_progress,
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
    p.add_argument("--version", action="version", version=f"sattn {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("reproduce", help="compute the data of Figure 3, 4, 5, of the decades, "
                                         "the acceptance or the width-bits experiment (resumable)")
    r.add_argument("figure", choices=EXPERIMENTS, metavar="EXPERIMENT",
                   help=f"one of {', '.join(EXPERIMENTS)}")
    r.add_argument("--setups", nargs="+", default=None, choices=tuple(SETUPS), metavar="SETUP",
                   help="setup names (see `setups`)")
    r.add_argument("--lengths", nargs="+", default=None, type=int,
                   help="strictly increasing sequence lengths L")
    r.add_argument("--jobs", type=int, default=None,
                   help="parallel workers (-1: all cores; default 1)")
    r.add_argument("--scheduler", default=None, metavar="local|ADDRESS",
                   help="run the tasks on a Dask cluster: 'local' starts one on 127.0.0.1 for this "
                        "run, an address (tcp://host:port) joins a running one; this process "
                        "writes the results. Not with --jobs")
    r.add_argument("--workers", type=int, default=None,
                   help="worker processes of --scheduler local (default: one per core)")
    r.add_argument("--profile", default="quick", choices=ALL_PROFILES,
                   help="quick (default), paper or paper-q1; acceptance: quick, paper or "
                        "out-of-sample; width-bits and width-codes: quick or paper")
    r.add_argument("--out", default=None,
                   help="output folder (default: the profile's: data/, data/q1/ or data/quick/)")
    r.add_argument("--budget", type=int, default=None,
                   help="decades only: draws per width (default: the profile's, 16 for paper)")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--no-compute", action="store_true",
                   help="acceptance only: write the CSV and manifest from the finished curves, "
                        "compute nothing (the manifest lists the missing ones)")
    r.set_defaults(func=_reproduce)

    b = sub.add_parser("bench", help="fast vs reference engine; prints the results, and writes "
                                     "them to --out FILE when given")
    b.add_argument("--quick", action="store_true", help="small sizes only (a smoke test)")
    b.add_argument("--out", default=None, metavar="FILE",
                   help="results file (JSON; none by default; the book reads "
                        "benchmarks/results.json), checked before the run")
    b.set_defaults(func=_bench)

    s = sub.add_parser("setups", help="list the twelve setups and their d grids")
    s.add_argument("--profile", default="paper", choices=tuple(PROFILES))
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
        except (ValueError, ModuleNotFoundError) as exc:
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
