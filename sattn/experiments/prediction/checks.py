"""The model against the measurements and the checks of its assumptions (A1, A2, the errors).

References
----------
The model is the book's own (:ref:`ch-experiments`); the model itself is described in
:mod:`sattn.experiments.prediction`.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.stats as sst

from ..._validate import check_int, check_real, check_rng
from ...rounding import below_bound
from ..engine import FastEngine
from ..setups import ROOT_SEED
from ..target import draw_generator, prepare_target
from .dmin import as_target, search_law, setup_task, draw_success_probability, predict_setup
from .results import Comparison, DminPrediction, ModelCheck
from .row_model import DEFAULT_SAMPLES, projector_block, validate_support_logits, validate_n_draws, validate_model_width, offsupport_pass

#: The bound against which the (b1) check prints the error of the identity ||g_R|| = (L/d) r.
NORM_IDENTITY_BOUND = 1e-12

__flat__ = __all__ = ["compare_measured", "check_error_model", "check_offsupport_max",
                      "check_row_dependence", "check_success_probability", "naive_dmin"]


#: The most draws of the exact checks (each draws an (L, d) Stiefel matrix and its errors).
MAX_EXACT_DRAWS = 10**4


def compare_measured(rows, *, tolerance=0.25, n_samples=DEFAULT_SAMPLES, seed=0,
                     root_seed=ROOT_SEED, method="sampled") -> Comparison:
    """Predict d_min for measured rows of Figure 3 and compare.

    Parameters
    ----------
    rows : list of dict
        Rows as :func:`~sattn.experiments.protocol.load_figure` returns them for ``"fig3"``
        (keys ``setup``, ``L``, ``n_draws``, ``grid_start``, ``grid_stop``, ``grid_step``,
        ``d_min``); rows without a measured ``d_min`` are skipped.
    tolerance : float, default 0.25
        Largest relative error that the verdict allows.
    n_samples, seed, root_seed, method
        As in :func:`~sattn.predict_setup`.

    Returns
    -------
    Comparison
    """
    tolerance = check_real("tolerance", tolerance, low=0.0, low_open=True)
    if not isinstance(rows, (list, tuple)) or not rows:
        raise TypeError("rows must be a non-empty list of dicts (load_figure('fig3', ...))")
    recs = []
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            raise TypeError(f"rows[{i}] must be a dict, got {type(r).__name__}")
        try:
            setup, L, n = r["setup"], int(r["L"]), int(r["n_draws"])
            ws = list(range(int(r["grid_start"]), int(r["grid_stop"]) + 1, int(r["grid_step"])))
            meas = r["d_min"]
        except KeyError as exc:
            raise ValueError(f"rows[{i}] lacks the key {exc.args[0]!r}") from None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"rows[{i}] must hold integer L, n_draws and grid fields "
                             f"(load_figure('fig3', ...)), got {r!r}: {exc}") from None
        if meas is None or meas == "":
            continue
        meas = int(meas)
        pr = predict_setup(setup, L, n_draws=n, widths=ws, root_seed=root_seed,
                           n_samples=n_samples, seed=seed, method=method)
        pred = pr.median if pr.median is not None else math.nan
        recs.append(dict(setup=setup, L=L, n_draws=n, measured=meas, predicted=pred,
                         q10=pr.q10, q90=pr.q90, rel_error=(pred - meas) / meas))
    if not recs:
        raise ValueError("no row of rows has a measured d_min")
    return Comparison(records=recs, tolerance=tolerance)


def _exact_rows(L, d, b, n_draws, rows, rng):
    """Exact Stiefel draws (QR of a Gaussian): for ``rows`` rows with disjoint supports
    ``S_i = {i k, ..., i k + k - 1}`` and logits ``b``, yield per draw the logits
    ``G`` (L x rows, column i = row i), the blocks ``P_SS`` (rows x k x k)."""
    k = b.size
    for _ in range(n_draws):
        Y = np.linalg.qr(rng.standard_normal((L, d)))[0]
        YS = Y[: rows * k].reshape(rows, k, d)                    # (rows, k, d)
        V = np.einsum("k,rkd->dr", b, YS)                         # Y_S^T b per row
        G = (L / d) * (Y @ V)
        yield G, YS @ YS.transpose(0, 2, 1)


def _check_exact_args(L, d, b, n_draws, rows, rng):
    b = validate_support_logits(b)
    L = check_int("L", L, low=8, high=8192)
    d = check_int("d", d, low=1, high=L)
    validate_model_width(L, d, b.size)
    n_draws = validate_n_draws(n_draws, low=2, cap=MAX_EXACT_DRAWS)
    rows = min(check_int("rows", rows, low=2), L // (2 * b.size))
    rng = check_rng("rng", rng)
    return L, d, b, n_draws, rows, rng


def _moments(L, d, b):
    """Exact second moments of the errors under a uniform projector (module docs)."""
    s = L / d
    Epij2 = d * (L - d) / (L * (L - 1) * (L + 2))
    varpjj = 2 * d * (L - d) / (L ** 2 * (L + 2))
    nb2 = float(b @ b)
    var_off = s * s * nb2 * Epij2
    var_sup = s * s * (b * b * varpjj + (nb2 - b * b) * Epij2)
    return var_off, var_sup


def _ks_normal(x):
    return float(sst.kstest(x, "norm").statistic)


def check_error_model(L, d, b, *, n_draws=40, rows=128, rng) -> ModelCheck:
    """(a) The errors ``e = (L/d) P b - b`` of exact projectors against the models.

    Measures: the ratio of the empirical variance of the off-support and of the support errors
    to the exact second moments (module docs); the Kolmogorov-Smirnov distance of the
    standardised off-support errors to ``N(0, 1)``; for the support errors, the KS distance to
    the Gaussian of the same variance and the two-sample KS distance to the book's model (the
    matrix-beta block); the empirical 0.1% quantile of the standardised support error against
    the Gaussian's (-3.09) and the model's.

    Parameters
    ----------
    L : int
        Length, ``8 <= L <= 8192`` (exact QR draws: keep it moderate).
    d : int
        Width, ``k <= d <= L - k``.
    b : array_like, shape (k,)
        Support logits of the rows (positive).
    n_draws : int, default 40
        Exact draws (``2 <= n_draws <= 10**4``, ``MAX_EXACT_DRAWS``; above, a
        :class:`sattn.SizeTooLargeError`).
    rows : int, default 128
        Rows with disjoint supports per draw (``2 <= rows <= L / (2k)``; larger values are
        reduced to ``L / (2k)``).
    rng : numpy.random.Generator

    Returns
    -------
    ModelCheck
        ``ok``: variance ratios within 5%, off-support KS below 0.01, and the 1% quantile of
        the support errors closer to the model's than to the Gaussian's.
    """
    L, d, b, n_draws, rows, rng = _check_exact_args(L, d, b, n_draws, rows, rng)
    k = b.size
    var_off, var_sup = _moments(L, d, b)
    off, sup = [], []
    mask = np.ones((L, rows), dtype=bool)
    for i in range(rows):
        mask[i * k:(i + 1) * k, i] = False
    for G, _ in _exact_rows(L, d, b, n_draws, rows, rng):
        off.append(G[mask])
        sup.append(np.stack([G[i * k:(i + 1) * k, i] - b for i in range(rows)]))
    off = np.concatenate(off)
    sup = np.concatenate(sup)                                      # (n, k)
    vr_off = float(off.var() / var_off)
    vr_sup = float(sup.var(axis=0).sum() / var_sup.sum())
    sub = off[rng.choice(off.size, size=min(off.size, 200_000), replace=False)]
    ks_off = _ks_normal(sub / math.sqrt(var_off))
    z_sup = (sup / np.sqrt(var_sup)).ravel()
    ks_gauss = _ks_normal(z_sup)
    Pm = projector_block(k, L, d, 1 << 16, 12345)
    model = ((L / d) * (Pm @ b) - b) / np.sqrt(var_sup)
    ks_model = float(sst.ks_2samp(z_sup, model.ravel()).statistic)
    q = 1e-2
    qe, qg, qm = (float(np.quantile(z_sup, q)), float(sst.norm.ppf(q)),
                  float(np.quantile(model.ravel(), q)))
    vals = dict(L=L, d=d, k=k, var_ratio_off=vr_off, var_ratio_support=vr_sup, ks_off=ks_off,
                ks_support_gauss=ks_gauss, ks_support_model=ks_model,
                q01_support_empirical=qe, q01_support_gauss=qg, q01_support_model=qm)
    ok = bool(abs(vr_off - 1) < 0.05 and abs(vr_sup - 1) < 0.05 and ks_off < 0.01
              and abs(qe - qm) < abs(qe - qg))
    return ModelCheck("error model (a)", vals, ok,
                      "variances match the exact moments within 5%, off-support errors are "
                      "Gaussian (KS < 0.01), the lower tail of the support errors follows the "
                      "block model, not the Gaussian")


def check_offsupport_max(L, d, b, *, n_draws=40, rows=128, rng) -> ModelCheck:
    """(b1) The largest off-support logit of a row against the model (assumption A1).

    For every row of exact draws the probability integral transform
    ``u = F_m(max_j g_j / ((L/d) r))`` (``r`` from the row's own block ``P_SS``) should be
    uniform if A1 holds; the Kolmogorov-Smirnov distance of ``u`` to ``U(0, 1)`` is reported,
    next to that of the naive model (``L - k`` independent Gaussians of the unconditional
    variance, ``u' = Phi(max/sigma)^m``). Also checked: the identity ``||g_R|| = (L/d) r``
    (largest relative error).

    The tail matters for the criteria: ``tail5_model`` is the fraction of rows whose maximum
    exceeds the model's 95% quantile (0.05 if A1 holds), ``tail1_model`` the same at 99%.

    Parameters and returns as in :func:`check_error_model`; ``ok``: the identity holds to 1e-8
    and ``tail5_model`` is within three binomial standard deviations of 0.05. The identity's
    error is reported as a verdict against ``NORM_IDENTITY_BOUND`` (``"<= 1e-12"``; it is
    rounding, whose digits differ between machines), and raises if it is larger.
    """
    L, d, b, n_draws, rows, rng = _check_exact_args(L, d, b, n_draws, rows, rng)
    k = b.size
    m = L - k
    var_off, _ = _moments(L, d, b)
    mask = np.ones((L, rows), dtype=bool)
    for i in range(rows):
        mask[i * k:(i + 1) * k, i] = False
    u, u_naive, ident = [], [], 0.0
    for G, P in _exact_rows(L, d, b, n_draws, rows, rng):
        w = P @ b
        r = np.sqrt(np.maximum(w @ b - np.einsum("rk,rk->r", w, w), 0.0))
        Goff = np.where(mask, G, -np.inf)
        mx = Goff.max(axis=0)
        nrm = np.sqrt(np.where(mask, G, 0.0).__pow__(2).sum(axis=0))
        ident = max(ident, float(np.max(np.abs(nrm / ((L / d) * r) - 1))))
        u.append(offsupport_pass(mx / ((L / d) * r), m))
        u_naive.append(np.exp(m * sst.norm.logcdf(mx / math.sqrt(var_off))))
    u, u_naive = np.concatenate(u), np.concatenate(u_naive)
    ks = float(sst.kstest(u, "uniform").statistic)
    ks_naive = float(sst.kstest(u_naive, "uniform").statistic)
    n = u.size
    t5, t5n = float((u > 0.95).mean()), float((u_naive > 0.95).mean())
    vals = dict(L=L, d=d, k=k, n=n, ks_model=ks, ks_naive=ks_naive,
                crit_1pct=1.63 / math.sqrt(n), tail5_model=t5, tail5_naive=t5n,
                tail1_model=float((u > 0.99).mean()), tail1_naive=float((u_naive > 0.99).mean()),
                norm_identity_error=below_bound(ident, NORM_IDENTITY_BOUND))
    ok = bool(ident < 1e-8 and abs(t5 - 0.05) <= 3 * math.sqrt(0.05 * 0.95 / n))
    return ModelCheck("largest off-support logit (b1)", vals, ok,
                      "||g_R|| = (L/d) r exactly, and the upper 5% tail of the largest "
                      "off-support logit is the model's")


def check_row_dependence(L, d, b, *, n_draws=40, rows=128, rng) -> ModelCheck:
    """(b2) Dependence inside a row and between rows, measured on exact draws.

    Inside a row: the correlation of two off-support errors (the model: ``-1/(m-1)``, nearly 0)
    and of their squares (the model predicts it through the common scale ``r``; its value from
    the block samples is reported beside the measured one). Between rows with disjoint
    supports: the correlation of their smallest support logits, of their largest off-support
    logits, of their (7)-margins ``min g_S - max g_R``, and of their logits in a common
    off-support column; assumption A2 treats all of these as 0.

    Parameters and returns as in :func:`check_error_model`; ``ok``: every between-row
    correlation below 0.1 in absolute value and the model's correlation of squares within 0.02
    of the measured one.
    """
    L, d, b, n_draws, rows, rng = _check_exact_args(L, d, b, n_draws, rows, rng)
    k = b.size
    m = L - k
    c0 = rows * k                    # columns >= c0 are off the support of every row
    pairs_x, pairs_y, mins, maxs, margins, same = [], [], [], [], [], []
    for G, _ in _exact_rows(L, d, b, n_draws, rows, rng):
        off = G[c0:]                                              # (L - c0, rows)
        pairs_x.append(off[0::2][: (L - c0) // 2].ravel())
        pairs_y.append(off[1::2][: (L - c0) // 2].ravel())
        gs = np.stack([G[i * k:(i + 1) * k, i] for i in range(rows)])   # (rows, k)
        mask = np.ones((L, rows), dtype=bool)
        for i in range(rows):
            mask[i * k:(i + 1) * k, i] = False
        mx = np.where(mask, G, -np.inf).max(axis=0)
        mins.append(gs.min(axis=1))
        maxs.append(mx)
        margins.append(gs.min(axis=1) - mx)
        same.append(off[: min(64, L - c0)])
    x, y = np.concatenate(pairs_x), np.concatenate(pairs_y)

    def between(arrs):
        a = np.stack(arrs)                                        # (draws, rows)
        return float(np.corrcoef(a[:, 0::2].ravel(), a[:, 1::2].ravel())[0, 1])
    S = np.concatenate(same, axis=0)                              # (n, rows)
    corr_same = float(np.corrcoef(S[:, 0::2].ravel(), S[:, 1::2].ravel())[0, 1])
    Pm = projector_block(k, L, d, 1 << 16, 12345)
    w = Pm @ b
    R2 = (L / d) ** 2 * np.maximum(w @ b - np.einsum("nk,nk->n", w, w), 0.0)
    e2, e4 = R2.mean(), (R2 ** 2).mean()
    cov = e4 / (m * (m + 2)) - e2 ** 2 / m ** 2
    var = 3 * e4 / (m * (m + 2)) - e2 ** 2 / m ** 2
    vals = dict(L=L, d=d, k=k, corr_off_pair=float(np.corrcoef(x, y)[0, 1]),
                corr_off_pair_model=-1.0 / (m - 1),
                corr_off_squares=float(np.corrcoef(x * x, y * y)[0, 1]),
                corr_off_squares_model=float(cov / var),
                corr_rows_min_support=between(mins), corr_rows_max_off=between(maxs),
                corr_rows_margin7=between(margins), corr_rows_same_column=corr_same)
    betw = [vals[k_] for k_ in ("corr_rows_min_support", "corr_rows_max_off",
                                "corr_rows_margin7", "corr_rows_same_column")]
    ok = bool(max(abs(v) for v in betw) < 0.1
              and abs(vals["corr_off_squares"] - vals["corr_off_squares_model"]) < 0.02)
    return ModelCheck("dependence (b2)", vals, ok,
                      "rows are nearly uncorrelated (|corr| < 0.1) and the model reproduces the "
                      "within-row correlation of squared errors")


def check_success_probability(setup, L, widths, *, n_draws=200, root_seed=ROOT_SEED,
                              n_samples=DEFAULT_SAMPLES, seed=0, method="sampled") -> ModelCheck:
    """(c) Predicted vs measured acceptance probability of one draw, with the fast engine.

    The target is the experiments' (:func:`~sattn.sample_target`); at each width ``n_draws`` draws
    are decided by :class:`~sattn.experiments.engine.FastEngine` with seeds
    ``draw_generator(root_seed, (setup_key, L, 7, d, i))`` (a key the experiments do not use).
    The z-score of each measured frequency against the prediction uses the binomial standard
    deviation at the predicted ``p``.

    Parameters
    ----------
    setup : str
        A setup name.
    L : int
        Length.
    widths : sequence of int
        Widths (``k <= d <= L - k``).
    n_draws : int, default 200
        Engine draws per width (``10 <= n_draws <= 10**6``).
    root_seed, n_samples, seed, method
        As in :func:`~sattn.predict_setup`.

    Returns
    -------
    ModelCheck
        ``ok``: every ``|z| <= 3``, or the measured frequency within 0.05 of the prediction.
    """
    root_seed = check_int("root_seed", root_seed, low=0)
    task = setup_task(setup, L)
    A = task.sample_target(root_seed)
    n_draws = validate_n_draws(n_draws, low=10)
    s = task.setup
    if isinstance(widths, (str, bytes)) or not hasattr(widths, "__iter__"):
        raise TypeError(f"widths must be a sequence of integers, got {widths!r}")
    ws = [check_int(f"widths[{i}]", w, low=1) for i, w in enumerate(widths)]
    if not ws:
        raise ValueError("widths must contain at least one width")
    if any(b <= a for a, b in zip(ws, ws[1:])):
        raise ValueError(f"widths must be strictly increasing, got {ws}")
    t = prepare_target(A, s.eps1, s.eps2)
    eng = FastEngine(A, s.eps1, s.eps2)
    meas, pred, z = [], [], []
    for w in ws:
        p = draw_success_probability(t, s.eps1, s.eps2, w, n_samples=n_samples, seed=seed,
                                     method=method).p
        hits = sum(eng.draw(w, draw_generator(root_seed, (s.key(), task.L, 7, w, i))).ok
                   for i in range(n_draws))
        f = hits / n_draws
        meas.append(f)
        pred.append(p)
        sd = math.sqrt(max(p * (1 - p), 1e-12) / n_draws)
        z.append((f - p) / sd)
    vals = dict(setup=setup, L=task.L, n_draws=n_draws, widths=ws, measured=meas,
                predicted=pred, z=z)
    ok = bool(all(abs(zi) <= 3 or abs(f - p) <= 0.05 for zi, f, p in zip(z, meas, pred)))
    return ModelCheck("acceptance probability (c)", vals, ok,
                      "the measured acceptance frequency matches p(d) (|z| <= 3 or within 0.05)")


def naive_dmin(A, eps1, eps2, widths, n_draws) -> DminPrediction:
    """The naive Gaussian estimate, for comparison: support logits exact, off-support errors
    independent Gaussians of variance ``||b_l||^2 / d``.

    ``p(d) = exp(-sum_l (L - k_l) Phibar(ln(1 + eps1) sqrt(d) / ||b_l||))``: every off-support
    entry of row ``l`` must stay below its smallest support logit ``Delta`` minus
    ``ln(1/eps2)``, which leaves the room ``ln(1 + eps1)``. It ignores the fluctuation of the
    support logits (and criterion (6)) and the common scale of a row; the chapter shows what
    that costs. Same ladder law (A4) as :func:`~sattn.predict_dmin`, every width evaluated.

    Parameters
    ----------
    A, eps1, eps2, widths, n_draws
        As in :func:`~sattn.predict_dmin`.

    Returns
    -------
    DminPrediction
    """
    t = as_target(A, eps1, eps2)
    n_draws = validate_n_draws(n_draws)
    if isinstance(widths, (str, bytes)) or not hasattr(widths, "__iter__"):
        raise TypeError(f"widths must be a sequence of integers, got {widths!r}")
    ws = [check_int(f"widths[{i}]", w, low=1, high=t.L) for i, w in enumerate(widths)]
    if not ws or any(b <= a for a, b in zip(ws, ws[1:])):
        raise ValueError(f"widths must be non-empty and strictly increasing, got {ws}")
    kl = (t.bvals > 0).sum(axis=1)
    room = math.log1p(t.eps1)
    ps = []
    for w in ws:
        lf = np.sum((t.L - kl) * sst.norm.sf(room * math.sqrt(w) / t.row_norm))
        ps.append(math.exp(-lf))
    stop, med, mean, q10, q90, cross, beyond = search_law(np.array(ws), ps, n_draws)
    return DminPrediction(L=t.L, n_draws=n_draws, widths=ws, p=ps, stop=stop, median=med,
                          mean=mean, q10=q10, q90=q90, crossing=cross, p_beyond=beyond)
