"""Fast vs reference engine for the d_min experiments (``python -m sattn bench``, :ref:`ch-computation`).

Workload (identical for both engines): one target ``A`` per length (the paper's sampler), the
per-target set-up, then the same number of draws (200) at a fixed width ``d`` just below the
target's d_min, every draw decided in full (no early stop on success).

* reference: ``logit_target`` + full SVD (``factorize(..., "svd")``), then per draw a QR Stiefel
  matrix, ``X`` (eqs. 13, 15), the full ``L x L`` logit matrix and criteria (6)-(7)
  (:func:`sattn.experiments.reference.reference_draw`);
* fast: :class:`sattn.experiments.engine.FastEngine` (no ``L x L`` array, no SVD/QR, partial
  draws, row blocks, float32 screening with float64 confirmation).

Also measured: the "floor" of one draw (one ``L x d`` float32 Gaussian matrix plus one float32
block GEMM of ``first_block x d x L``; its mean cost, timed ``FLOOR_REPS`` times after every chunk
of draws so that it sees the same machine as they do) and the peak resident memory of the fast engine at
``L = 3072`` and ``L = 32768`` (fresh subprocesses, ``VmHWM`` of ``/proc/self/status``). Ratios
are measured within one run, and the two engines' draws are timed in alternating chunks of
``CHUNK`` draws, so that both see the same machine: on a shared virtual machine the speed drifts
by 20% or more over the minute the reference takes, which made the ratio of two back-to-back
timings swing between runs. ``speedup_at_floor`` is the speed-up an engine whose every draw cost
exactly the floor would reach on the same workload: it shows how much of a speed-up target the
floor itself leaves room for.

At ``L = 8192`` and ``L = 32768`` only the fast engine runs (:func:`large`): the reference needs
``L x L`` arrays and an ``O(L^3)`` SVD there. For each length: the cost per draw in floors just
below d_min (pairs of draws alternating with one floor timing) and far below it (levels of
``CHUNK`` draws alternating with the floor), the same cost in *strict floors* (the two operations
into preallocated arrays, the product in the faster orientation ``Z U^T``, see ``_FloorTimer``)
and the peak memory of a fresh process. :func:`batching` compares batched and one-by-one
:meth:`~sattn.experiments.engine.FastEngine.level` at ``L = 256, 512, 1024`` on the same levels,
alternating. Targets (booleans in ``targets``, never timed tests): at most 2 floors per draw just
below d_min at ``L >= 8192``, peak memory under 2 GB at ``L = 32768``.

Results: printed; written as JSON to ``out`` only when it is given (``--out FILE``; the book reads
``benchmarks/results.json``, so a run never overwrites it unless told to), with the keys
``comparisons``, ``memory``, ``large``, ``batching``, ``targets``. ``out`` is checked (its folder
writable) before the run.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from ..patterns.construction import factorize, fixed_weights, logit_target
from ..patterns.sparse import sample_sparse
from ..experiments.engine import BATCH_DRAWS, BATCH_MAX_L, FastEngine
from ..experiments.reference import reference_draw
from ..experiments.setups import SETUPS
from ..experiments.target import draw_generator
from .store import validate_output_file, versions

# Machinery: none of its names is flat (the rule of the flat API: :mod:`sattn`).
__flat__: list[str] = []
__all__ = [*__flat__, "batching", "compare", "large", "main", "peak_memory"]

SETUP = "k2-g2-e7-0.5"
ROOT = 777
CHUNK = 10      # draws per engine between switches (the reference's draws in the same order)
FLOOR_REPS = 4  # floor operations timed after each chunk
LARGE_CHUNK = 2  # draws between floor timings in large() (just below d_min)


class _FloorTimer:
    """Times the floor (one ``L x d`` float32 Gaussian matrix, one float32 block GEMM) a few
    times after each chunk of draws, so that it is measured under the same conditions as the
    draws; ``means()`` returns the mean seconds of each operation.

    Also timed, in the same repetitions: the *strict floor*, the same two operations done the
    cheapest way the engine does them, the Gaussian matrix written into a preallocated array (no
    page faults of freshly mapped memory) and the product in the faster orientation ``Z U^T``;
    ``strict_means()`` returns its two parts (only with ``strict=True``). The benchmark's targets
    use the floor, which is the first edition's unit; the strict floor shows how much of the
    margin the allocation gives."""

    def __init__(self, L, d, block_rows, strict=False):
        self.rng = np.random.default_rng(2)
        self.shape = (L, d)
        self.Z = self.rng.standard_normal((L, d), dtype=np.float32)
        self.U = self.rng.standard_normal((block_rows, d), dtype=np.float32)
        self.strict = strict
        if strict:
            self.buf = np.empty((L, d), np.float32)
            self.out = np.empty((L, block_rows), np.float32)
        self.gauss = self.gemm = self.gauss_strict = self.gemm_strict = 0.0
        self.n = 0

    def measure(self, reps):
        for _ in range(reps):
            t0 = time.perf_counter()
            self.rng.standard_normal(self.shape, dtype=np.float32)
            t1 = time.perf_counter()
            self.U @ self.Z.T
            t2 = time.perf_counter()
            self.gauss += t1 - t0
            self.gemm += t2 - t1
            self.n += 1
            if self.strict:
                self.rng.standard_normal(out=self.buf, dtype=np.float32)
                t3 = time.perf_counter()
                np.matmul(self.Z, self.U.T, out=self.out)
                self.gauss_strict += t3 - t2
                self.gemm_strict += time.perf_counter() - t3

    def means(self):
        return self.gauss / self.n, self.gemm / self.n

    def strict_means(self):
        if not self.strict:
            raise RuntimeError("this floor timer does not time the strict floor (strict=False)")
        return self.gauss_strict / self.n, self.gemm_strict / self.n


def _estimate_dmin(eng, L, draws=64, step=4, hi=None):
    """Bisection estimate of d_min: the smallest width found to succeed, to within ``step``
    (cheap: ``draws`` draws per width; widths up to ``hi``, default ``L``). :func:`compare`
    subtracts 8 to get a width just below."""
    lo, hi = 2, L if hi is None else min(hi, L)
    while hi - lo > step:
        mid = (lo + hi) // 2
        if eng.level(mid, draws, ROOT, (mid,)).ok:
            hi = mid
        else:
            lo = mid
    return hi


def compare(L, n_draws=200, *, d=None):
    """Time reference and fast engines on the same workload at length ``L``.

    Returns
    -------
    dict
        Set-up and draw times of both engines, the floor, the speed-ups (see the module docs).
    """
    s = SETUPS[SETUP]
    A = sample_sparse(L, s.k, s.gamma, np.random.default_rng(L))
    eng = FastEngine(A, s.eps1, s.eps2)
    if d is None:
        # a width just below d_min: bisection estimate with 64 draws per width, minus 8
        d = max(1, _estimate_dmin(eng, L) - 8)

    # set-ups, then the same n_draws for both engines, timed in alternating chunks
    t0 = time.perf_counter()
    B = logit_target(A, s.eps1, s.eps2)
    factors = factorize(B, "svd")
    weights = fixed_weights(d)
    t_ref_setup = time.perf_counter() - t0
    t0 = time.perf_counter()
    eng = FastEngine(A, s.eps1, s.eps2)
    t_fast_setup = time.perf_counter() - t0

    rng = np.random.default_rng(1)
    ok_ref, ok_fast, stages, stage_s = 0, 0, {}, {}
    t_ref_draws = t_fast_draws = 0.0
    floor_timer = _FloorTimer(L, d, eng.first_block)
    for start in range(0, n_draws, CHUNK):
        chunk = range(start, min(start + CHUNK, n_draws))
        t0 = time.perf_counter()
        for _ in chunk:
            ok_ref += reference_draw(A, s.eps1, s.eps2, factors, weights, rng)
        t_ref_draws += time.perf_counter() - t0
        t0 = time.perf_counter()
        for i in chunk:
            t1 = time.perf_counter()
            out = eng.draw(d, draw_generator(ROOT, (L, d, i)))
            stage_s[out.stage] = stage_s.get(out.stage, 0.0) + time.perf_counter() - t1
            ok_fast += out.ok
            stages[out.stage] = stages.get(out.stage, 0) + 1
        t_fast_draws += time.perf_counter() - t0
        floor_timer.measure(FLOOR_REPS)

    t_gauss, t_gemm = floor_timer.means()
    floor = t_gauss + t_gemm

    # far below d_min (a third of the width), as the experiment meets it: one level of draws,
    # which starts with the small partial set
    d_far = max(2, d // 3)
    t0 = time.perf_counter()
    far = eng.level(d_far, n_draws, ROOT, (L, 1))
    t_far = (time.perf_counter() - t0) / far.draws
    far_timer = _FloorTimer(L, d_far, eng.first_block)
    far_timer.measure(20)
    far_floor = sum(far_timer.means())
    ref_total = t_ref_setup + t_ref_draws
    fast_total = t_fast_setup + t_fast_draws
    return {
        "L": L, "d": d, "setup": SETUP, "draws": n_draws,
        "reference": {"setup_s": t_ref_setup, "draws_s": t_ref_draws, "total_s": ref_total,
                      "successes": int(ok_ref)},
        "fast": {"setup_s": t_fast_setup, "draws_s": t_fast_draws, "total_s": fast_total,
                 "successes": int(ok_fast), "stages": stages,
                 "per_draw_s": t_fast_draws / n_draws,
                 "per_draw_by_stage_s": {k: v / stages[k] for k, v in stage_s.items()}},
        "floor": {"gaussian_s": t_gauss, "block_gemm_s": t_gemm, "per_draw_s": floor,
                  "block_rows": eng.first_block},
        "speedup": ref_total / fast_total,
        "speedup_draws_only": t_ref_draws / t_fast_draws,
        "fast_per_draw_over_floor": (t_fast_draws / n_draws) / floor,
        # what an engine whose every draw cost exactly the floor would reach on this workload
        "speedup_at_floor": ref_total / (t_fast_setup + n_draws * floor),
        "far_below": {"d": d_far, "draws": far.draws, "successes": int(far.ok),
                      "stage1_rejects": far.stage1_rejects, "per_draw_s": t_far,
                      "floor_s": far_floor, "per_draw_over_floor": t_far / far_floor},
    }


def large(L, n_draws=20, *, d=None, dmin_draws=16):
    """The fast engine alone at a large length ``L`` (8192, 32768): the reference would need
    ``L x L`` arrays and an ``O(L^3)`` SVD there, so it is not run.

    Draws just below d_min (``draws`` of :func:`compare`'s kind, each decided in full) and far
    below it (levels of ``CHUNK`` draws at a third of the width, as the experiment meets them),
    each timed in chunks alternating with the floor at the same width; then the peak memory of a
    fresh process that completes full draws at that width (:func:`peak_memory`).

    Parameters
    ----------
    L : int
        Length of the target.
    n_draws : int, default 20
        Draws at each of the two widths.
    d : int, optional
        Width just below d_min (default: a bisection estimate with ``dmin_draws`` draws per width,
        minus 8).
    dmin_draws : int, default 16
        Draws per width of the bisection.

    Returns
    -------
    dict
        Widths, seconds and floors per draw at both widths, stage tallies, peak memory.
    """
    s = SETUPS[SETUP]
    A = sample_sparse(L, s.k, s.gamma, np.random.default_rng(L), as_csr=True)
    t0 = time.perf_counter()
    eng = FastEngine(A, s.eps1, s.eps2)
    t_setup = time.perf_counter() - t0
    if d is None:
        # widths >= 1600 are beyond the float32 screening bound, and far above d_min here
        d = max(1, _estimate_dmin(eng, L, draws=dmin_draws, step=8, hi=1024) - 8)
    d_far = max(2, d // 3)
    out = {"L": L, "d": d, "setup": SETUP, "draws": n_draws, "setup_s": t_setup,
           "engine": "fast only (the reference needs L x L arrays and an O(L^3) SVD)"}
    # just below d_min: every draw decided in full, pairs of draws alternating with the floor
    # (a draw costs about two floors here, so the two are timed in nearly equal shares)
    timer = _FloorTimer(L, d, eng.first_block, strict=True)
    t_draws, stages, ok = 0.0, {}, 0
    for start in range(0, n_draws, LARGE_CHUNK):
        t0 = time.perf_counter()
        for i in range(start, min(start + LARGE_CHUNK, n_draws)):
            o = eng.draw(d, draw_generator(ROOT, (L, d, i)))
            stages[o.stage] = stages.get(o.stage, 0) + 1
            ok += o.ok
        t_draws += time.perf_counter() - t0
        timer.measure(1)
    floor = sum(timer.means())
    strict = sum(timer.strict_means())
    out["below"] = {"d": d, "draws": n_draws, "successes": int(ok), "stages": stages,
                    "per_draw_s": t_draws / n_draws, "floor_s": floor,
                    "per_draw_over_floor": t_draws / n_draws / floor,
                    "strict_floor_s": strict,
                    "per_draw_over_strict_floor": t_draws / n_draws / strict}
    # far below: levels of CHUNK draws (each starts with the probe set), alternating with the floor
    timer = _FloorTimer(L, d_far, eng.first_block)
    t_far, far_draws, far_stage1, far_ok = 0.0, 0, 0, 0
    for c in range(max(1, n_draws // CHUNK)):
        t0 = time.perf_counter()
        lv = eng.level(d_far, CHUNK, ROOT, (L, 1, c))
        t_far += time.perf_counter() - t0
        far_draws += lv.draws
        far_stage1 += lv.stage1_rejects
        far_ok += lv.ok
        timer.measure(FLOOR_REPS)
    floor_far = sum(timer.means())
    out["far_below"] = {"d": d_far, "draws": far_draws, "stage1_rejects": far_stage1,
                        "successes": int(far_ok), "per_draw_s": t_far / far_draws,
                        "floor_s": floor_far, "per_draw_over_floor": t_far / far_draws / floor_far}
    out["memory"] = peak_memory(L, d)
    return out


def batching(L, n_levels=8, draws=20, *, d=None):
    """Batched vs one-by-one :meth:`~sattn.experiments.engine.FastEngine.level` on the same workload at length ``L``.

    The workload: ``n_levels`` levels of ``draws`` draws at a width just below d_min and as many
    a third of that width (far below, where the experiment spends most of its draws). Each level
    is run with ``batch=1`` and with the automatic batch, in alternating order, one right after
    the other, so that both see the same machine; their results must be equal.

    Returns
    -------
    dict
        For each width: seconds of both, draws, and ``ratio`` (one-by-one time / batched time).
    """
    s = SETUPS[SETUP]
    A = sample_sparse(L, s.k, s.gamma, np.random.default_rng(L))
    eng = FastEngine(A, s.eps1, s.eps2)
    if d is None:
        d = max(1, _estimate_dmin(eng, L) - 8)
    auto = eng.batch if eng.batch is not None else (BATCH_DRAWS if L <= BATCH_MAX_L else 1)
    out = {"L": L, "batch": auto, "levels": n_levels, "draws_per_level": draws}
    for name, width in (("below", d), ("far_below", max(2, d // 3))):
        t = {1: 0.0, auto: 0.0}
        n = 0
        for c in range(n_levels):
            res = {}
            for b in ((1, auto) if c % 2 == 0 else (auto, 1)):
                t0 = time.perf_counter()
                res[b] = eng.level(width, draws, ROOT, (L, 2, c), batch=b)
                t[b] += time.perf_counter() - t0
            if res[1] != res[auto]:
                raise RuntimeError(f"batched and one-by-one levels differ at L = {L}, d = {width}"
                                   f": {res[1]} vs {res[auto]}")
            n += res[1].draws
        out[name] = {"d": width, "draws": n, "one_by_one_s": t[1], "batched_s": t[auto],
                     "ratio": t[1] / t[auto]}
    return out


def _memory_probe(L, d, n, setup) -> dict:
    """Sample A (sparse), build the engine and complete ``n`` full draws at width ``d``; report
    the time per draw and the peak resident memory of this process (run in a fresh process)."""
    threadpool_limits(1)
    s = SETUPS[setup]
    A = sample_sparse(L, s.k, s.gamma, np.random.default_rng(L), as_csr=True)
    eng = FastEngine(A, s.eps1, s.eps2)
    t = time.perf_counter()
    stages = {}
    for i in range(n):
        out = eng.draw(d, draw_generator(1, (i,)), complete=True)   # always the whole draw
        stages[out.stage] = stages.get(out.stage, 0) + 1
    dt = (time.perf_counter() - t) / n
    # VmHWM: peak resident set of this process image (ru_maxrss would include the parent's peak,
    # which Linux carries over through fork + exec)
    with open("/proc/self/status") as f:
        hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))
    return {"L": L, "d": d, "draws": n, "per_draw_s": dt, "stages": stages,
            "peak_rss_MB": hwm / 1024}


def peak_memory(L, d, n=3):
    """Peak RSS (MB) of a fresh process that samples A (sparse), builds the engine and completes
    ``n`` full draws at width ``d`` (``complete=True`` also materialises the whole ``L x d``)."""
    res = subprocess.run([sys.executable, "-m", __spec__.name, "--memory-probe", str(L), str(d), str(n),
                          SETUP], capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(quick=False, out=None) -> int:
    """Run the benchmark (``quick``: small sizes only); write its results to ``out`` if given.

    Parameters
    ----------
    quick : bool
        Small sizes only (a smoke test).
    out : str or os.PathLike, optional
        The JSON results file; checked before the run (:func:`~sattn.runs.store.validate_output_file`).
        None (the default) writes nothing.

    Returns
    -------
    int
        The exit status, 0.

    Raises
    ------
    StoreError
        If ``out`` cannot be written (before any benchmark runs).
    """
    if out is not None:
        out = validate_output_file(out)
    t0 = time.perf_counter()
    results = {"versions": versions(), "machine": platform.processor() or platform.machine(),
               "quick": bool(quick), "setup": SETUP, "comparisons": [], "memory": []}
    with threadpool_limits(1, user_api="blas"):
        for L in ([256] if quick else [512, 2048]):
            r = compare(L, n_draws=20 if quick else 200)
            results["comparisons"].append(r)
            print(f"L={L:5d} d={r['d']:4d}: reference {r['reference']['total_s']:.2f} s, "
                  f"fast {r['fast']['total_s']:.3f} s, speedup {r['speedup']:.1f}x "
                  f"(draws only {r['speedup_draws_only']:.1f}x); fast per draw "
                  f"{1e3 * r['fast']['per_draw_s']:.2f} ms = "
                  f"{r['fast_per_draw_over_floor']:.2f} x floor "
                  f"({1e3 * r['floor']['per_draw_s']:.2f} ms); an engine at the floor would reach "
                  f"{r['speedup_at_floor']:.1f}x; at d = {r['far_below']['d']} (far below "
                  f"d_min) {r['far_below']['per_draw_over_floor']:.2f} x floor", flush=True)
    for L, d in ([(3072, 128)] if quick else [(3072, 128), (32768, 256)]):
        m = peak_memory(L, d)
        results["memory"].append(m)
        print(f"L={L:6d} d={d}: peak RSS {m['peak_rss_MB']:.0f} MB, "
              f"{1e3 * m['per_draw_s']:.1f} ms per complete draw", flush=True)
    results["large"], results["batching"] = [], []
    with threadpool_limits(1, user_api="blas"):
        print("large L: fast engine only (the reference needs L x L arrays and an O(L^3) SVD)")
        for L in ([8192] if quick else [8192, 32768]):
            r = large(L, n_draws=CHUNK if quick else 20, dmin_draws=8 if quick else 16)
            results["large"].append(r)
            b, f = r["below"], r["far_below"]
            print(f"L={L:6d} d={r['d']:4d} (just below d_min): {1e3 * b['per_draw_s']:.1f} ms per "
                  f"draw = {b['per_draw_over_floor']:.2f} x floor ({1e3 * b['floor_s']:.1f} ms), "
                  f"{b['per_draw_over_strict_floor']:.2f} x strict floor; "
                  f"d={f['d']} (far below): {f['per_draw_over_floor']:.2f} x floor; peak RSS "
                  f"{r['memory']['peak_rss_MB']:.0f} MB", flush=True)
        for L in ([256] if quick else [256, 512, 1024]):
            r = batching(L, n_levels=2 if quick else 8)
            results["batching"].append(r)
            print(f"L={L:6d} batch {r['batch']}: one-by-one / batched time "
                  f"{r['below']['ratio']:.2f} at d={r['below']['d']} (just below d_min), "
                  f"{r['far_below']['ratio']:.2f} at d={r['far_below']['d']} (far below)",
                  flush=True)
    results["targets"] = {
        "per_draw_within_3x_floor": all(c["fast_per_draw_over_floor"] <= 3
                                        for c in results["comparisons"]),
        "peak_memory_under_2GB": all(m["peak_rss_MB"] < 2048 for m in results["memory"]),
        "large_per_draw_within_2x_floor": all(c["below"]["per_draw_over_floor"] <= 2
                                              for c in results["large"]),
        "large_peak_memory_32768_under_2GB": next((c["memory"]["peak_rss_MB"] < 2048
                                                   for c in results["large"]
                                                   if c["L"] == 32768), None),
    }
    results["wall_s"] = time.perf_counter() - t0
    if out is None:
        print(f"targets: {results['targets']}; results not saved (--out FILE to save them)")
    else:
        out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
        print(f"targets: {results['targets']}; wrote {out}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--memory-probe"]:   # the fresh process of peak_memory
        L_, d_, n_, setup_ = sys.argv[2:6]
        print(json.dumps(_memory_probe(int(L_), int(d_), int(n_), setup_)))
    else:
        sys.exit(main(quick="--quick" in sys.argv,
                      out=sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else None))
