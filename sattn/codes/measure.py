"""The measurement of the codes through the task store: ``data/width_codes.csv``.

:func:`reproduce_width_codes` builds each code for the frontier's targets (the same seeds as
:mod:`sattn.frontier`), checks it with :func:`~sattn.check_code_input`, and writes the CSV and its
manifest; ``python -m sattn reproduce width-codes`` runs it, resumably. :ref:`ch-width-bits`.
"""

from __future__ import annotations

import math
import os
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

from .._validate import check_bool, check_int
from ..patterns.supports import regular_pattern, width_bits_lower_bound
from ..experiments.target import draw_generator
from ..runs.runner import run_in_store
from ..runs.store import OutputLock, StoreError, versions, write_csv, write_manifest
from .bounds import book_weights_bound
from .inputs import constant_weight_input, cycle_code_input, hash_code_input, sign_code_input
from .checker import check_code_input

# The flat API (``sattn.<name>``): what chapters and readers call (the rule: :mod:`sattn`).
__flat__ = ["load_width_codes"]
__all__ = [*__flat__, "CODES", "CODE_COLUMNS", "CODE_PROFILES", "CODE_TOLERANCES", "CodeTask", "FLOAT_CHECK",
           "HASH_BLOCKS",
           "code_tasks", "reproduce_width_codes", "run_code_task"]


CODES = {1: ("sign", "constant-weight", "hash"), 2: ("cycle", "hash"), 4: ("hash",)}
_BUILD = {"sign": sign_code_input, "constant-weight": constant_weight_input,
          "cycle": cycle_code_input, "hash": hash_code_input}
#: Columns of ``width_codes.csv``.
CODE_COLUMNS = ("code", "L", "k", "d", "d_hid", "grid", "bits", "product", "book_bound",
                "ratio", "class_bound", "float_p", "float_bits", "float_product", "spread", "gap",
                "method", "seconds", "peak_mb", "reason")
#: How the hash code's blocks are made (part of its tasks' parameters: a change recomputes them).
HASH_BLOCKS = "random blocks until about L pairs are left, then coloured blocks"
#: Tolerances per ``k`` (those of :mod:`sattn.frontier`: the book's gamma = 1 setups).
CODE_TOLERANCES = {1: (3.0, 0.9), 2: (3.0, 0.9), 4: (7.0, 0.9)}
CODE_SEED = 20260
#: How the float format is decided (in the task parameters, so that a store made by an earlier
#: checker is not reused): rows settled from their extremes and every possible row sum, rows still
#: open from their whole softmax.
FLOAT_CHECK = "extremes, every possible sum, open rows summed exactly"
#: Profiles: lengths, and the largest length of the hash code per ``k`` (its construction and its
#: check take ``O(L**2 T)`` operations; the other codes are checked by enumeration, ``O(L d**2)``).
CODE_PROFILES = {
    "quick": {"lengths": (64, 256, 1024), "hash_limit": {1: 1024, 2: 1024, 4: 1024}},
    "paper": {"lengths": tuple(2 ** p for p in range(6, 21)),
              "hash_limit": {1: 2 ** 12, 2: 2 ** 12, 4: 2 ** 16}},
}
_CODE_DESCRIPTION = (
    "Codes for the book's weights (W_Q = [I; 0], W_K = [0; I]) against the target of the width x "
    "bits frontier (sattn.regular_pattern, structure='random', the same seeds as "
    "width_bits.csv): sign code and constant-weight code (k = 1), cycle code (k = 2), hash code "
    "(every k). Each input is checked exactly against (6)-(7) (sattn.check_code_input: integer "
    "logits, no L x L array); 'product' is d_hid * bits on the code's fixed grid, 'book_bound' "
    "sattn.book_weights_bound(L, k), 'class_bound' the counting bound log2 N(L, k) / L; "
    "'float_*' the least p-bit format for the whole pass and its 1 + e + (p - 1) bits; "
    "'peak_mb' the peak of memory traced while building and checking. L = {lengths}.")


@dataclass(frozen=True)
class CodeTask:
    """One (code, L, k) of the measurement: the store's unit of work."""

    code: str
    L: int
    k: int
    profile: str

    @property
    def task_id(self) -> str:
        return f"{self.code}-L{self.L}-k{self.k}"

    def params(self) -> dict:
        eps1, eps2 = CODE_TOLERANCES[self.k]
        out = {"code": self.code, "L": self.L, "k": self.k, "eps1": eps1, "eps2": eps2,
               "root_seed": CODE_SEED,
               "hash_limit": CODE_PROFILES[self.profile]["hash_limit"][self.k],
               "float_check": FLOAT_CHECK}
        if self.code == "hash":
            out["hash_blocks"] = HASH_BLOCKS
        return out


def _open_reason(float_open) -> str:
    """The CSV's note on significands the float check could not settle (empty when none)."""
    if not float_open:
        return ""
    return (f"float significands {' '.join(map(str, float_open))} left undecided (too many open "
            "rows to sum exactly) and counted as failing")


def run_code_task(task: CodeTask) -> dict:
    """Build ``task``'s code for its target and check it; one CSV row (or a row with the reason)."""
    t0 = time.perf_counter()
    L, k = task.L, task.k
    eps1, eps2 = CODE_TOLERANCES[k]
    bb = book_weights_bound(L, k)
    cb = round(width_bits_lower_bound(L, k), 6)

    def row(code=None, rep=None, seconds=0.0, peak=None, reason=""):
        if code is None:
            return [task.code, L, k, None, None, None, None, None, bb, None, cb, None, None, None,
                    None, None, None, round(seconds, 2), peak, reason.replace(",", ";")]
        fp = rep.float_bits
        return [task.code, L, k, code.d, code.d_hid, code.grid, code.bits, code.product, bb,
                round(code.product / bb, 4), cb, rep.float_p, fp,
                None if fp is None else code.d_hid * fp, rep.spread, rep.gap, rep.method,
                round(seconds, 2), peak, ("fails (6)-(7): " + rep.message if not rep.ok else
                                          _open_reason(rep.float_open))]

    limit = CODE_PROFILES[task.profile]["hash_limit"][k]
    if task.code == "hash" and L > limit:
        ops = L * L * max(1, round(math.log(L) / math.log(1.5)))
        return {"params": task.params(), "rows": [row(reason=(
            f"not run: building and checking the hash code takes O(L^2 T) operations (about "
            f"{ops:.0e} at L = {L}); beyond the profile's limit L = {limit}"))], "extra": {}}
    A = regular_pattern(L, k, draw_generator(CODE_SEED, (L, k)), as_csr=True, structure="random")
    tracemalloc.start()
    try:
        code = _BUILD[task.code](A)
        rep = check_code_input(code, A, eps1, eps2)
        peak = round(tracemalloc.get_traced_memory()[1] / 2 ** 20, 1)
    finally:
        tracemalloc.stop()
    return {"params": task.params(), "rows": [row(code, rep, time.perf_counter() - t0, peak)],
            "extra": {"info": code.info, "message": rep.message},
            "seconds": round(time.perf_counter() - t0, 2)}


def code_tasks(profile: str = "quick") -> list:
    """The tasks of a profile (``"quick"`` or ``"paper"``), by ``k``, then length."""
    if profile not in CODE_PROFILES:
        raise ValueError(f"profile must be one of {', '.join(CODE_PROFILES)}, got {profile!r}")
    return [CodeTask(c, L, k, profile) for k in CODES for L in CODE_PROFILES[profile]["lengths"]
            for c in CODES[k]]


def reproduce_width_codes(*, profile: str = "quick", out=None, jobs: int = 1,
                          progress: bool = True) -> dict:
    """Compute (or resume) ``<out>/width_codes.csv`` and its manifest through the task store.

    Parameters
    ----------
    profile : {"quick", "paper"}
        ``"paper"``: L = 64 ... 2**20 (data/); ``"quick"``: L = 64, 256, 1024 (data/quick/).
    out : path, optional
        Output folder (default ``data`` or ``data/quick``).
    jobs : int, default 1
        Local workers (-1: one per core); the results do not depend on it.
    progress : bool, default True

    Returns
    -------
    dict
        The manifest written.

    References
    ----------
    :ref:`ch-width-bits`.
    """
    check_bool("progress", progress)
    jobs = check_int("jobs", jobs, low=-1)
    tasks = code_tasks(profile)
    out = Path(out) if out is not None else Path("data" if profile == "paper" else "data/quick")
    t0 = time.perf_counter()
    with OutputLock(out) as lock:
        run = run_in_store(tasks, run_code_task, out, "width_codes", lock,
                           desc=f"width-codes ({profile})", jobs=jobs, progress=progress)
        rows = [r for t in tasks for r in run.payloads[t.task_id]["rows"]]
        write_csv(out / "width_codes.csv", CODE_COLUMNS,
                  [["" if v is None else v for v in r] for r in rows])
        man = {"figure": "width-codes", "profile": profile,
               "command": f"python -m sattn reproduce width-codes --profile {profile}",
               "computed": run.computed, "reused": run.reused,
               "wall_seconds_this_run": round(time.perf_counter() - t0, 1),
               "task_seconds": round(sum(float(r[17]) for r in rows), 1),
               "description": _CODE_DESCRIPTION.format(
                   lengths=", ".join(str(L) for L in CODE_PROFILES[profile]["lengths"])),
               "tolerances": {str(k): list(v) for k, v in CODE_TOLERANCES.items()},
               "hash_limit": {str(k): v for k, v in CODE_PROFILES[profile]["hash_limit"].items()},
               "root_seed": CODE_SEED, "columns": list(CODE_COLUMNS), "versions": versions()}
        return write_manifest(out / "width_codes_manifest.json", man)


def load_width_codes(data_dir="data"):
    """``width_codes.csv`` as a list of dicts (numbers parsed, empty cells ``None``).

    Raises
    ------
    StoreError
        If the CSV or its manifest is missing.
    """
    if not isinstance(data_dir, (str, os.PathLike)):
        raise TypeError(f"data_dir must be a path (str or os.PathLike), got {type(data_dir).__name__}")
    path = Path(data_dir) / "width_codes.csv"
    if not path.exists() or not (Path(data_dir) / "width_codes_manifest.json").exists():
        raise StoreError(f"{path} or its manifest is missing: run "
                         "python -m sattn reproduce width-codes --profile paper")
    lines = path.read_text().strip().splitlines()
    cols = lines[0].split(",")
    ints = {"L", "k", "d", "d_hid", "bits", "product", "book_bound", "float_p", "float_bits",
            "float_product", "spread", "gap"}
    floats = {"ratio", "class_bound", "seconds", "peak_mb"}
    out = []
    for line in lines[1:]:
        rec = {}
        for c, v in zip(cols, line.split(",", len(cols) - 1)):
            rec[c] = None if v == "" else int(v) if c in ints else float(v) if c in floats else v
        out.append(rec)
    return out
