"""The perturbation harness of ``make test-perturbed`` (tests/perturbed_arithmetic.py) perturbs what
it says, and the package's defined computations are immune to it while the raw ones are not.

Each check runs in a fresh interpreter: the harness must be installed before ``sattn`` is imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent


def _run(code: str, perturbed: bool, seed: int = 1) -> dict:
    """Run ``code`` (which prints one JSON object) with or without the harness installed."""
    prologue = (f"import sys; sys.path.insert(0, {str(TESTS)!r}); import perturbed_arithmetic; "
                "perturbed_arithmetic.install()\n") if perturbed else ""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BOOK_PERTURB_SEED": str(seed)}
    out = subprocess.run([sys.executable, "-c", prologue + code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


PROBE = """
import json
import numpy as np
import sattn
rng = np.random.default_rng(0)
a, b = rng.standard_normal((6, 40)), rng.standard_normal((40, 5))
ints = np.arange(12.0).reshape(3, 4)
B = rng.standard_normal((7, 7))
U, s, Vh = np.linalg.svd(B)
cU, cs, cVh = sattn.canonical_svd(B)
x = np.linspace(0.1, 3, 50)
print(json.dumps({
    "dot": np.dot(a, b).tolist(), "np_matmul": np.matmul(a, b).tolist(),
    "ordered": sattn.ordered_matmul(a, b).tolist(), "ints": (ints @ ints.T).tolist(),
    "svd_U": U.tolist(), "canonical_U": cU.tolist(), "canonical_s": cs.tolist(),
    "exp": np.exp(x).tolist(), "portable_exp": sattn.portable_exp(x).tolist(),
    "log": np.log(x).tolist(), "correct_log": sattn.correctly_rounded("log", x).tolist(),
}))
"""


@pytest.mark.slow
def test_the_harness_moves_raw_arithmetic_and_leaves_defined_arithmetic_alone():
    plain = _run(PROBE, perturbed=False)
    moved = [_run(PROBE, perturbed=True, seed=s) for s in (1, 2)]
    for m in moved:
        # BLAS products, LAPACK's factors and libm's results change in their last bits
        for key in ("dot", "np_matmul", "exp", "log"):
            assert np.array(m[key]).tolist() != plain[key], key
            assert np.allclose(m[key], plain[key], rtol=1e-13, atol=1e-13), key
        # the package's defined computations and exact integer products do not move at all
        for key in ("ordered", "ints", "portable_exp", "correct_log"):
            assert m[key] == plain[key], key
        # the canonical SVD moves by rounding only: its signs do not depend on LAPACK's
        for key in ("canonical_U", "canonical_s"):
            assert np.allclose(m[key], plain[key], rtol=0, atol=1e-12), key
    # LAPACK's signs are free, and the harness flips them: some column of U changes sign
    assert any(not np.allclose(m["svd_U"], plain["svd_U"], atol=1e-6) for m in moved)


def test_the_steps_are_spread_functions_of_the_values_and_chunks_change_nothing():
    """The shift of an entry is a function of its value (and scale) alone, its steps cover
    ``{-n, ..., n}`` about evenly, and a product or result larger than a chunk is shifted exactly
    as it would be in one piece."""
    sys.path.insert(0, str(TESTS))
    try:
        import perturbed_arithmetic as pa
    finally:
        sys.path.remove(str(TESTS))
    rng = np.random.default_rng(5)
    x = rng.standard_normal(60_000)
    for n in (1, 2):
        steps = pa._hashed_steps(n, pa._salt(3), x)
        counts = np.bincount(steps + n, minlength=2 * n + 1)
        assert counts.size == 2 * n + 1 and counts.min() > 0.9 * x.size / (2 * n + 1), counts
    # consecutive floats (the last bit only differs) get unrelated steps
    near = 1.0 + np.arange(30_000) * 2.0 ** -52
    assert abs(np.mean(pa._hashed_steps(1, pa._salt(3), near) == 0) - 1 / 3) < 0.02
    # equal values, equal steps, wherever they stand; another seed, other steps
    assert len(set(pa._hashed_steps(2, pa._PRODUCT_SALT, np.full(9, 0.3), np.full(9, 2.0)))) == 1
    assert np.mean(pa._hashed_steps(1, pa._salt(4), x) != pa._hashed_steps(1, pa._salt(3), x)) > 0.5
    # a product of more than CHUNK entries (and a non-contiguous one): chunks change nothing
    a, b = rng.standard_normal((300, 40)), rng.standard_normal((40, 200))
    b[3, 5] = 0.0
    scale = np.abs(a) @ np.abs(b)
    assert (a @ b).size > pa.CHUNK
    got = pa._perturb_product("matmul", np.matmul, (a, b), a @ b)
    with np.errstate(all="ignore"):
        assert np.array_equal(got, pa._shift_products(a @ b, scale, 2))
    assert not np.array_equal(got, a @ b) and np.allclose(got, a @ b, rtol=1e-14, atol=1e-12)
    ein = lambda *xs: np.einsum("ij,jk->ki", *xs)  # noqa: E731
    o = ein(a, b)
    assert not o.flags.c_contiguous
    t = pa._perturb_product("einsum", ein, (a, b), o)
    with np.errstate(all="ignore"):
        assert t.flags.c_contiguous and np.array_equal(t, pa._shift_products(
            np.ascontiguousarray(o), np.ascontiguousarray(ein(np.abs(a), np.abs(b))), 2))
    e = np.exp(rng.standard_normal((400, 300)))[:, ::2]
    e[0, 0], e[1, 1], e[2, 2] = np.inf, np.nan, 0.0
    moved = pa._ulps("exp", e, 1)
    with np.errstate(all="ignore"):
        assert np.array_equal(moved, pa._shift_ulps(3, 1, e), equal_nan=True)
    assert moved[0, 0] == np.inf and np.isnan(moved[1, 1]) and moved[2, 2] == 0.0
    moved, e = moved[3:], e[3:]
    assert np.all(np.abs(moved - e) <= np.spacing(e))
    assert np.mean(moved != e) > 0.5


@pytest.mark.slow
def test_sattn_modules_are_compiled_with_the_perturbed_product():
    code = """
import json
import numpy as np
import sattn
from sattn.attention import attention_logits
rng = np.random.default_rng(3)
X, W_Q, W_K = rng.standard_normal((8, 30)), rng.standard_normal((30, 30)), rng.standard_normal((30, 30))
print(json.dumps({"G": attention_logits(X, W_Q, W_K).tolist()}))
"""
    assert _run(code, perturbed=True)["G"] != _run(code, perturbed=False)["G"]


@pytest.mark.slow
def test_the_optimizer_ends_at_the_same_point_under_perturbed_arithmetic():
    """optimize_logits takes no product from BLAS and no step from a compiled line search, so
    its seeded path ends at the same bits however the machine rounds."""
    code = """
import json
import numpy as np
import sattn
A = sattn.band_pattern(32, 1)
r = sattn.optimize_logits(A, 3.0, 0.9, 3, rng=np.random.default_rng(0), restarts=2)
print(json.dumps({"Q": r.Q.tolist(), "K": r.K.tolist(), "it": list(r.iterations)}))
"""
    plain = _run(code, perturbed=False)
    assert _run(code, perturbed=True) == plain and _run(code, perturbed=True, seed=2) == plain


@pytest.mark.slow
def test_the_engine_draws_the_same_numbers_when_its_candidates_are_dependent():
    """Rows of B that come in equal pairs make stage 1's candidates linearly dependent; with
    ``span_basis=True`` the completed draw is still a function of the seed (up to rounding), not
    of how LAPACK's QR rounds (engine version fast-3, the default). ``span_basis=False`` (version
    fast-2, kept to audit its results) takes part of such a draw from that rounding, and moves."""
    code = """
import json
import numpy as np
from sattn.experiments.engine import FastEngine
from sattn.experiments.target import draw_generator
from sattn.linalg import independent_rows
L = 64
A = np.zeros((L, L))
for j in range(0, L, 2):
    A[j:j + 2, j:j + 2] = 0.5          # rows 2j and 2j + 1 are equal
eng = FastEngine(A, 3.0, 0.9, span_basis=SPAN)
out = {"dependent": 0, "Z": [], "ok": []}
for i in range(6):
    rng = draw_generator(7, (32, i))
    dr = eng._partial_draw(32, rng, eng._partial(32, eng.partial_fraction))
    if eng._stage1(dr, rng) is None and dr.cand is not None:   # passed, after the Haar step
        out["dependent"] += bool(independent_rows(A[dr.cand]).size < dr.cand.size)
    o = eng.draw(32, draw_generator(7, (32, i)), complete=True)
    out["Z"].append(o.Z.tolist())
    out["ok"].append([bool(o.ok), o.stage])
print(json.dumps(out))
"""
    code = code.replace("SPAN", "True")
    plain = _run(code, perturbed=False)
    assert plain["dependent"] >= 3          # the case is exercised (dependent, then completed)
    for seed in (1, 2):
        moved = _run(code, perturbed=True, seed=seed)
        assert moved["ok"] == plain["ok"]
        assert np.allclose(moved["Z"], plain["Z"], rtol=0, atol=1e-9)
    old = code.replace("span_basis=True", "span_basis=False")
    assert not np.allclose(_run(old, perturbed=True)["Z"], _run(old, perturbed=False)["Z"],
                           rtol=0, atol=1e-3)
