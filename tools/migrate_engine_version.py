"""Carry the stored engine tasks that the audit cleared over to engine version ``fast-3``.

``tools/audit_engine_rank.py`` replays stage 1 of every recorded draw and finds the tasks in
which no draw met a dependent set of candidates; on those version ``fast-3``
(``FastEngine(span_basis=True)``) computes exactly what ``fast-2`` did (see ``ENGINE_VERSION`` in
:mod:`sattn.experiments.engine`). It ran once, when ``fast-3`` became the engine's default, and
changes nothing in a folder already carried over. This tool, for each engine experiment (``fig3``, ``fig4``, ``decades``, ``acceptance``):

* rewrites each cleared task with ``params.engine`` set to the current version and an
  ``engine_audit`` entry that says where it came from (the old version, the draws and
  thin-Haar steps replayed, the widths recomputed in full), with the record's checksum and the
  manifest's entry updated. A task is cleared when no draw met dependent candidates, or when the
  widths that hold such draws were recomputed by the audit and the rest of the task follows from
  its records (``_current_levels``); their recomputed records replace the old ones;
* deletes every other task, so that the next ``python -m sattn reproduce`` recomputes it (the
  manifest lists it as missing, and the new manifest as ``recovered``).

It refuses to run unless every stored task has an audit record for its current file, and it
changes nothing in a folder whose tasks are already at the current version.

Usage (from the repository root)::

    python tools/migrate_engine_version.py [--data data] [--dry-run]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sattn.experiments.acceptance.design import measure_curve  # noqa: E402
from sattn.experiments.engine import ENGINE_VERSION  # noqa: E402
from sattn.runs.store import read_manifest, sha256_file, task_record, write_manifest  # noqa: E402

EXPERIMENTS = ("fig3", "fig4", "decades", "acceptance")
OLD_VERSION = "fast-2"


def _current_levels(payload, a):
    """The task's level records under the current engine, or None if it must be recomputed.

    A task without dependent draws keeps its records. A task whose dependent draws lie at widths
    that the audit recomputed in full keeps the records of every other width (they are the same
    draws) and takes the recomputed ones. If a recomputed record changed, the search over widths
    is run again on the records: an acceptance curve whose extension rule still asks for the
    same widths keeps them; any other change (a width the record does not hold, or a d_min scan,
    whose later widths depend on the changed one) needs a full recompute.
    """
    levels = payload["result"]["levels"]
    if not a["faithful"]:
        return None
    if a["dependent_draws"] == 0:
        return levels
    new = {n[0]: n for _, n in a["recomputed_levels"]}
    merged = [new.get(lv[0], lv) for lv in levels]
    if merged == levels:
        return levels
    p = payload["params"]
    if p["figure"] != "acceptance":
        return None
    rec = {lv[0]: lv for lv in merged}
    try:
        counts = measure_curve(list(p["widths"]), p["L"], dict(p["rule"]),
                               lambda d: (rec[d][1], rec[d][2]))
    except KeyError:                   # the rule now asks for a width that was never measured
        return None
    if sorted(counts) != sorted(rec):
        return None
    return merged


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="data", help="the data folder (data, or data/q1)")
    ap.add_argument("--audit", default=None,
                    help="the audit's output (default: <data>/engine_rank_audit.jsonl)")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    if ENGINE_VERSION == OLD_VERSION:
        ap.error(f"the engine is still version {OLD_VERSION}: make span_basis=True its default "
                 "and ENGINE_VERSION 'fast-3' first (sattn/experiments/engine.py)")
    data = Path(args.data)
    audit = {}
    for line in Path(args.audit or data / "engine_rank_audit.jsonl").read_text().splitlines():
        if line.strip():
            rec = json.loads(line)
            audit[rec["task"]] = rec
    total = {"carried": 0, "recompute": 0}
    for exp in EXPERIMENTS:
        if not (data / f"{exp}_manifest.json").exists():
            continue
        files = sorted((data / "tasks" / exp).glob("*.json"))
        mpath = data / f"{exp}_manifest.json"
        man = read_manifest(mpath, remedy="restore it from git")
        carried, flagged, changed = [], [], []
        for f in files:
            rec = json.loads(f.read_text())
            payload = rec["payload"]
            if payload["params"]["engine"] == ENGINE_VERSION:
                continue
            if payload["params"]["engine"] != OLD_VERSION:
                raise SystemExit(f"{f}: engine {payload['params']['engine']!r}, expected "
                                 f"{OLD_VERSION!r} or {ENGINE_VERSION!r}")
            a = audit.get(f.name)
            if a is None:
                raise SystemExit(f"{f}: no audit record; run tools/audit_engine_rank.py first")
            levels = _current_levels(payload, a)
            if levels is not None:
                note = {"from": OLD_VERSION, "method": a["method"], "draws": a["draws"],
                        "thin_haar_steps": a["haar_steps"],
                        "dependent_draws": a["dependent_draws"],
                        "by": "tools/audit_engine_rank.py"}
                if a["dependent_draws"]:
                    note["recomputed_widths"] = [new[0] for _, new in a["recomputed_levels"]]
                    note["changed_widths"] = [new[0] for old, new in a["recomputed_levels"]
                                              if old != new]
                    if note["changed_widths"]:
                        changed.append(f"{f.stem}: " + ", ".join(
                            f"{old} -> {new}" for old, new in a["recomputed_levels"]
                            if old != new))
                payload["params"]["engine"] = ENGINE_VERSION
                payload["result"]["levels"] = levels
                payload["engine_audit"] = note
                carried.append(f)
                if not args.dry_run:
                    f.write_bytes(task_record(payload))
            else:
                flagged.append(f)
                if not args.dry_run:
                    f.unlink()
        if not args.dry_run and carried:
            sums = man["checksums"]["tasks"]
            for f in carried:
                sums[f.name] = sha256_file(f)
            write_manifest(mpath, {k: v for k, v in man.items() if k != "manifest_sha256"})
        total["carried"] += len(carried)
        total["recompute"] += len(flagged)
        print(f"{exp}: {len(carried)} carried over to {ENGINE_VERSION}, {len(flagged)} to "
              f"recompute" + (f" ({', '.join(f.stem for f in flagged)})" if flagged else ""))
        for line in changed:
            print(f"  changed width(s), recomputed in full: {line}")
    print(f"all: {total['carried']} carried over, {total['recompute']} to recompute"
          + (" (dry run: nothing written)" if args.dry_run else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
