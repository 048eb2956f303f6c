"""Perturbed arithmetic: run the chapters as if on a CPU whose BLAS, LAPACK and libm round otherwise.

A reader's CPU picks its own BLAS kernels (and NumPy its own vector paths for ``exp``, ``log``,
...), which changes the last bits of every matrix product, factorization and elementary function.
The book promises the same printed output on every CPU, so ``make test`` executes every chapter
once more with :func:`install` active and compares the outputs with the stored ones (nbval). A
cell whose output or verdict depends on those last bits fails there, on any machine, without
touching the machine's BLAS settings.

What :func:`install` changes, in the kernel that runs the chapters:

* **Matrix products** (``@`` in the chapters' cells and in every module of ``sattn``, rewritten at
  compile time, and ``numpy.matmul``, ``dot``, ``inner``, ``einsum``, ``tensordot``): each entry
  that sums two or more nonzero products is moved by ``k u sum_k |a_ik b_kj|`` with ``k`` in
  ``{-2, ..., 2}``, the size of the rounding error a different summation order or fused
  multiply-adds give (Higham's bound). Entries with one nonzero product, and products of
  integer-valued operands below ``2**20``, are exact on every kernel and stay as they are.
* **Factorizations** (``numpy.linalg.svd``, ``eigh``, ``qr``, ``solve``, ``lstsq``, ``inv``,
  ``pinv``, ``cholesky``, ``norm``): results moved by a few units in the last place, and the
  signs of singular-vector and eigenvector pairs flipped at random, as LAPACK is free to.
* **Elementary functions** (``numpy.exp``, ``log``, ``log1p``, ``expm1``, ``sin``, ``cos``,
  ``tanh``): results moved by up to one unit in the last place.

The perturbation is a deterministic function of the operands and of ``BOOK_PERTURB_SEED``, so
the same product computed twice is perturbed the same way (as on one real machine).
"""

from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import importlib.abc
import importlib.machinery
import operator
import os
import sys

import numpy as np

SEED = int(os.environ.get("BOOK_PERTURB_SEED", "1"))
_ORIG = {}


def _rng(tag, *arrays):
    h = hashlib.blake2b(digest_size=8)
    h.update(f"{tag}:{SEED}".encode())
    for a in arrays:
        a = np.asarray(a)
        h.update(repr((a.shape, a.dtype.str)).encode())
        if a.dtype != object:
            h.update(np.ascontiguousarray(a).tobytes())
    return np.random.default_rng(int.from_bytes(h.digest(), "little"))


_TINY = {np.dtype(t): np.finfo(t).tiny for t in (np.float64, np.float32)}


def _unit(dtype) -> float:
    return 2.0 ** -24 if np.dtype(dtype) == np.float32 else 2.0 ** -53


def _floating(*arrays) -> bool:
    return all(isinstance(a, np.ndarray) and a.dtype in (np.float64, np.float32) for a in arrays)


def _exact_integers(*arrays) -> bool:
    return all(np.all(np.abs(a) < 2.0 ** 20) and np.all(a == np.round(a)) for a in arrays)


def _perturb_product(tag, product, operands, out):
    """``out`` moved by up to 2 u sum|a b| where two or more products are nonzero."""
    if not _floating(*operands) or not isinstance(out, np.ndarray) or out.dtype not in (
            np.float64, np.float32) or _exact_integers(*operands):
        return out
    with np.errstate(all="ignore"):
        scale = product(*[np.abs(a) for a in operands])
        terms = _terms(tag, product, operands)
    return _by_chunks(_shift_products, out, scale, terms)


def _shift_products(out, scale, terms):
    """:func:`_perturb_product`'s shift, entry by entry (any part of the arrays)."""
    # the same dot product rounds the same way wherever it appears: the shift of an entry is
    # a function of the entry's exact value's neighbourhood (its unperturbed result and the
    # size of its terms), not of its position, so identical rows and columns stay identical.
    # (Where the entry is moved, its scale is finite, and so is the entry, |out| <= scale;
    # elsewhere its step is not used.)
    k = _hashed_steps(2, _PRODUCT_SALT, out, scale)
    moved = out + (k * _unit(out.dtype) * scale).astype(out.dtype)
    return np.where((terms >= 2) & np.isfinite(scale), moved, out)


_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))


def _salt(label: int) -> np.uint64:
    """The seed and a label as one 64-bit word (for :func:`_hashed_steps`)."""
    return np.uint64((SEED * 0x2545F4914F6CDD1D + label * 0x9E3779B97F4A7C15) % 2 ** 64)


_PRODUCT_SALT = _salt(1000)


def _hashed_steps(n, salt, *values):
    """An integer step in ``{-n, ..., n}`` for each entry: a hash of the entries' float64 bit
    patterns and ``salt`` (wrapping products by odd constants, a xor-shift, then the high bits
    of one more product), so equal values get equal steps and the steps look random across
    values. Integer arithmetic only, a few cheap passes."""
    h = None
    for v, m in zip(values, _MIX):
        x = np.asarray(v, dtype=np.float64, order="C").view(np.uint64) * m
        h = x if h is None else h ^ x
    h ^= salt
    h ^= h >> np.uint64(29)
    h *= _MIX[2]
    return ((h >> np.uint64(32)) * np.uint64(2 * n + 1) >> np.uint64(32)).astype(np.int64) - n


#: Entries per chunk of the elementwise shifts: a product's output is shifted a part at a time,
#: so the dozen temporaries of a shift stay in cache instead of each being a fresh array of the
#: output's size (for a 256 x 32768 block that is 5 times faster, with the same result).
CHUNK = 1 << 14


def _by_chunks(shift, out, *others):
    """``shift(out, *others)`` (elementwise; ``others`` arrays of ``out``'s shape or scalars) as
    a new C-ordered array of ``out``'s dtype, computed :data:`CHUNK` entries at a time."""
    if out.size <= CHUNK:
        with np.errstate(all="ignore"):
            return shift(out, *others).astype(out.dtype, copy=False)
    result = np.empty(out.shape, out.dtype)
    flat = [np.ravel(x) if isinstance(x, np.ndarray) and x.ndim else x for x in (out, *others)]
    dest = result.reshape(-1)
    with np.errstate(all="ignore"):
        for s0 in range(0, dest.size, CHUNK):
            part = [x[s0: s0 + CHUNK] if isinstance(x, np.ndarray) and x.ndim else x for x in flat]
            dest[s0: s0 + CHUNK] = shift(*part)
    return result


def _terms(tag, product, operands):
    """The number of nonzero products summed in each entry of the product (or a lower bound
    of 2 where that is all the caller needs): for ``matmul``, ``dot`` and ``inner`` of arrays
    without zeros, the length of the summed axis; otherwise the product of the operands'
    nonzero patterns."""
    a, b = operands[0], operands[-1]
    if (tag in ("matmul", "dot", "inner") and len(operands) == 2 and a.ndim >= 1 and b.ndim >= 1
            and a.shape[-1] >= 2 and a.all() and b.all()):
        return 2
    return product(*[(x != 0).astype(np.float64) for x in operands])


def book_matmul(a, b):
    """``a @ b``, perturbed (see the module docstring) when both are float arrays."""
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return operator.matmul(a, b)
    out = _ORIG["matmul"](a, b)
    return _perturb_product("matmul", _ORIG["matmul"], (a, b), out)


class _MatMulToCall(ast.NodeTransformer):
    """``a @ b`` becomes ``__book_matmul__(a, b)``; ``a @= b`` becomes ``a = __book_matmul__(a, b)``."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.MatMult):
            return ast.copy_location(ast.Call(ast.Name("__book_matmul__", ast.Load()),
                                              [node.left, node.right], []), node)
        return node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.MatMult) and isinstance(node.target, ast.Name):
            load = ast.Name(node.target.id, ast.Load())
            call = ast.Call(ast.Name("__book_matmul__", ast.Load()), [load, node.value], [])
            return ast.copy_location(ast.Assign([node.target], call), node)
        return node


class _RewritingLoader(importlib.machinery.SourceFileLoader):
    """Compiles ``sattn``'s modules with ``@`` rewritten (never from or into the bytecode cache)."""

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        tree = ast.fix_missing_locations(_MatMulToCall().visit(ast.parse(self.get_data(path), path)))
        return compile(tree, path, "exec", dont_inherit=True)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != "sattn" and not fullname.startswith("sattn."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        spec.loader = _RewritingLoader(fullname, spec.origin)
        return spec


def _wrap_product(name, fn, operands_of):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        ops = operands_of(args)
        if ops is None or kwargs.get("out") is not None:
            return out
        return _perturb_product(name, lambda *xs: fn(*_replace(args, ops, xs)), ops, out)
    return wrapper


def _replace(args, ops, xs):
    """``args`` with the operand arrays ``ops`` replaced by ``xs`` (same positions)."""
    it = iter(xs)
    ids = {id(o) for o in ops}
    return tuple(next(it) if id(a) in ids else a for a in args)


def _two_arrays(args):
    if len(args) >= 2 and all(isinstance(a, np.ndarray) for a in args[:2]):
        return tuple(args[:2])
    return None


def _einsum_operands(args):
    if args and isinstance(args[0], str) and len(args) >= 3 and all(
            isinstance(a, np.ndarray) for a in args[1:]):
        return tuple(args[1:])
    return None


def _ulps(tag, out, n, *inputs):
    """Each float entry of ``out`` moved by up to ``n`` units in the last place (0 and inf kept;
    equal entries moved alike, as one function of the value)."""
    if not isinstance(out, np.ndarray) or out.dtype not in (np.float64, np.float32):
        return out
    return _by_chunks(functools.partial(_shift_ulps, len(tag), n), out)


def _shift_ulps(tag_length, n, out):
    """:func:`_ulps`'s shift, entry by entry (any part of the array)."""
    size = np.abs(out)
    # finite, nonzero and normal (subnormal results are kept: the formats' own flush and
    # underflow are tested elsewhere); NaN fails both comparisons
    moves = (size >= _TINY[out.dtype]) & (size < np.inf)
    k = _hashed_steps(n, _salt(tag_length), out)
    moved = out + k * np.spacing(size).astype(out.dtype)
    return np.where(moves, moved, out)


def _wrap_elementary(name, ufunc):
    @functools.wraps(ufunc)
    def wrapper(x, *args, **kwargs):
        out = ufunc(x, *args, **kwargs)
        if args or kwargs.get("out") is not None or not isinstance(x, (np.ndarray, float, np.floating)):
            return out
        if np.ndim(out) == 0:
            return type(out)(_ulps(name, np.asarray(out, dtype=np.float64).reshape(1), 1, x)[0]) \
                if isinstance(out, (float, np.floating)) else out
        return _ulps(name, out, 1, x)
    return wrapper


def _wrap_factorization(name, fn):
    @functools.wraps(fn)
    def wrapper(a, *args, **kwargs):
        res = fn(a, *args, **kwargs)
        rng = _rng(name, a) if isinstance(a, np.ndarray) else None
        if rng is None:
            return res
        if name == "norm" and (len(args) >= 2 or kwargs.get("axis") is not None
                               or (a.dtype.kind in "fiu" and _exact_integers(a))):
            # a norm along an axis is NumPy's own elementwise sum (no BLAS); a sum of squares of
            # small integers is exact and its root correctly rounded: the same everywhere
            return res
        if name in ("svd", "eigh") and isinstance(res, tuple) and len(res) >= 2:
            parts = [np.array(p) if isinstance(p, np.ndarray) else p for p in res]
            if name == "svd" and len(parts) == 3:
                U, s, Vh = parts
                flip = rng.choice([-1.0, 1.0], size=s.shape[-1])
                U[..., :, :s.shape[-1]] *= flip
                Vh[..., :s.shape[-1], :] *= flip[:, None]
                parts = [_ulps("svdU", U, 2, a), _ulps("svds", s, 2, a), _ulps("svdV", Vh, 2, a)]
            elif name == "eigh":
                w, V = parts
                flip = rng.choice([-1.0, 1.0], size=w.shape[-1])
                parts = [_ulps("eighw", w, 2, a), _ulps("eighV", V * flip, 2, a)]
            return type(res)(*parts) if hasattr(res, "_fields") else tuple(parts)
        if isinstance(res, tuple):
            return type(res)(*[_ulps(name, p, 2, a) for p in res]) if hasattr(res, "_fields") else \
                tuple(_ulps(name, p, 2, a) if isinstance(p, np.ndarray) else p for p in res)
        if isinstance(res, np.ndarray):
            return _ulps(name, res, 2, a)
        if isinstance(res, (float, np.floating)) and res != 0 and np.isfinite(res):
            return type(res)(res + rng.integers(-2, 3) * np.spacing(abs(res)))
        return res
    return wrapper


def install() -> None:
    """Turn the perturbation on in this process (idempotent). Call before ``import sattn``."""
    if _ORIG:
        return
    if any(m == "sattn" or m.startswith("sattn.") for m in sys.modules):
        raise RuntimeError("install() must run before sattn is imported")
    # Extensions that register loops on NumPy's ufuncs (ml_dtypes' bfloat16) must see the real
    # ufuncs, so they are imported first; their arithmetic is not what the book measures.
    import ml_dtypes  # noqa: F401
    import scipy.linalg  # noqa: F401
    import scipy.optimize  # noqa: F401
    import scipy.special  # noqa: F401
    import scipy.stats  # noqa: F401

    _ORIG["matmul"] = np.matmul
    builtins.__book_matmul__ = book_matmul
    sys.meta_path.insert(0, _Finder())
    np.matmul = _wrap_product("matmul", np.matmul, _two_arrays)
    np.dot = _wrap_product("dot", np.dot, _two_arrays)
    np.inner = _wrap_product("inner", np.inner, _two_arrays)
    np.tensordot = _wrap_product("tensordot", np.tensordot, _two_arrays)
    np.einsum = _wrap_product("einsum", np.einsum, _einsum_operands)
    for name in ("svd", "eigh", "qr", "solve", "lstsq", "inv", "pinv", "cholesky", "norm"):
        setattr(np.linalg, name, _wrap_factorization(name, getattr(np.linalg, name)))
    for name in ("exp", "log", "log1p", "expm1", "sin", "cos", "tanh"):
        setattr(np, name, _wrap_elementary(name, getattr(np, name)))
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is not None:
        ip.ast_transformers.append(_MatMulToCall())
