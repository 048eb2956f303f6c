"""Measure one quick-profile Figure 3 run on a local Dask cluster; write benchmarks/dask_local.json.

    python tools/measure_dask.py [--workers 2] [--out benchmarks/dask_local.json]

Runs, as subprocesses in fresh temporary folders, ``python -m sattn reproduce fig3 --profile quick
--scheduler local --workers N`` and then the same with ``--jobs 1``, and records both manifests'
wall times (cluster start and shutdown included for the first), whether the two CSVs are
byte-identical, the date, the machine and its load. One measurement each on the machine as it is,
not a benchmark: on a shared machine the numbers move with the other load.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(out: Path, *extra: str) -> dict:
    cmd = [sys.executable, "-m", "sattn", "reproduce", "fig3", "--profile", "quick",
           "--no-progress", "--out", str(out), *extra]
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True)
    elapsed = time.perf_counter() - t0
    man = json.loads((out / "fig3_manifest.json").read_text())
    return {"command": "python -m sattn reproduce fig3 --profile quick " + " ".join(extra),
            "wall_seconds": man["wall_seconds_this_run"],
            "process_seconds": round(elapsed, 1),
            "tasks": len(man["computed"]), "dask_workers": man.get("dask_workers"),
            "task_seconds_total": man["task_seconds_total"], "csv_sha256": man["checksums"]["csv"]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "dask_local.json"))
    args = p.parse_args(argv)
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        dask = _run(Path(tmp) / "dask", "--scheduler", "local", "--workers", str(args.workers))
        jobs1 = _run(Path(tmp) / "jobs1", "--jobs", "1")
    result = {
        "measured": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "load_average_1min_before": round(load[0], 2)},
        "local_cluster": dask, "jobs_1": jobs1,
        "csv_identical": dask["csv_sha256"] == jobs1["csv_sha256"],
        "note": ("one run each, local cluster first, on the machine as it was (shared); "
                 "wall_seconds is the manifest's: from the start of the cluster to its shutdown "
                 "after the last result; process_seconds adds the command's start-up (imports)"),
    }
    Path(args.out).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(json.dumps(result, indent=1, sort_keys=True))
    return 0 if result["csv_identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
