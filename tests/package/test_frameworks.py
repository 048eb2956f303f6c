"""JAX as an independent client: the book's weights and inputs through a framework's attention.

``jax.nn.dot_product_attention`` scales the logits by ``1/sqrt(head_dim)`` unless ``scale`` is
given; the book's logits are unscaled, so every call passes ``scale=1.0``. Each test compares JAX
with ``sattn`` (never JAX with JAX). Measured on JAX 0.10.2 (CPU): ``dot_product_attention``
computes its softmax in float32 even for float64 inputs (``_dot_product_attention_core`` casts the
logits), so it differs from the float64 formula by about 1e-7, while the plain
``jax.nn.softmax`` path agrees to 1e-15.
"""

import jax
import numpy as np
import pytest

import sattn
from sattn import precision as P
from datasets import token_dataset

jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def _jax_sam(X, W_Q, W_K, dtype, *, causal=False, fused=True):
    """SAM(X) from JAX: the fused kernel with value = identity (q, k zero-padded), or softmax(q k^T)."""
    Q, K = X @ W_Q, X @ W_K
    L, d = Q.shape
    if not fused:
        q, k = jnp.asarray(Q, dtype), jnp.asarray(K, dtype)
        G = q @ k.T
        if causal:
            G = jnp.where(jnp.tril(jnp.ones((L, L), bool)), G, -jnp.inf)
        return np.asarray(jax.nn.softmax(G, axis=-1), dtype=np.float64)
    pad = np.zeros((L, L - d))
    q = jnp.asarray(np.hstack([Q, pad])[None, :, None, :], dtype)  # (B, T, N, H) with H = L
    k = jnp.asarray(np.hstack([K, pad])[None, :, None, :], dtype)
    v = jnp.asarray(np.eye(L)[None, :, None, :], dtype)
    out = jax.nn.dot_product_attention(q, k, v, scale=1.0, is_causal=causal, implementation="xla")
    return np.asarray(out[0, :, 0, :], dtype=np.float64)


def _rand(seed, L=24, d_hid=6, d=4):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((L, d_hid)), rng.standard_normal((d_hid, d)), rng.standard_normal((d_hid, d))


@pytest.mark.parametrize("causal", [False, True])
def test_jax_float64_agrees_with_sattn(causal):
    X, WQ, WK = _rand(0)
    ref = sattn.sam(X, WQ, WK, causal=causal)
    plain = _jax_sam(X, WQ, WK, jnp.float64, causal=causal, fused=False)
    fused = _jax_sam(X, WQ, WK, jnp.float64, causal=causal)
    assert np.abs(plain - ref).max() < 1e-14
    # the fused path's softmax runs in float32: it agrees with the formula only to ~1e-7
    dfused = np.abs(fused - ref).max()
    assert 1e-12 < dfused < 1e-6
    if causal:
        assert np.triu(fused, 1).max() == 0.0


def test_jax_default_scale_is_not_the_books():
    X, WQ, WK = _rand(1, L=8, d=8)
    q = jnp.asarray((X @ WQ)[None, :, None, :])
    k = jnp.asarray((X @ WK)[None, :, None, :])
    v = jnp.asarray(np.eye(8)[None, :, None, :])
    scaled = np.asarray(jax.nn.dot_product_attention(q, k, v)[0, :, 0, :])
    G = (X @ WQ) @ (X @ WK).T
    assert np.abs(scaled - sattn.row_softmax(G / np.sqrt(8))).max() < 1e-6
    assert np.abs(scaled - sattn.row_softmax(G)).max() > 1e-2


def test_jax_float32_against_sattn_float32_emulation():
    X, WQ, WK = _rand(2)
    ours = P.attention_matrix_in(X, WQ, WK, "float32")
    ref = sattn.sam(X, WQ, WK)
    for fused in (True, False):
        theirs = _jax_sam(P.round_to(X, "float32"), P.round_to(WQ, "float32"), P.round_to(WK, "float32"),
                          jnp.float32, fused=fused)
        # two float32 implementations: both within float32 rounding of the exact value and of each other
        assert np.abs(theirs - ref).max() < 1e-5
        assert np.abs(theirs - ours).max() < 1e-5


@pytest.mark.parametrize("causal", [False, True])
def test_algorithm1_input_satisfies_criteria_in_jax_float32(causal):
    L, eps1, eps2 = 64, 1.0, 0.5
    A = sattn.band_pattern(L, 2, gamma=2.0, causal=causal)
    res = sattn.approximate(A, eps1, eps2, d=60, rng=np.random.default_rng(1), causal=causal)
    for fused in (True, False):
        M = _jax_sam(res.X, res.W_Q, res.W_K, jnp.float32, causal=causal, fused=fused)
        assert ((A > 0) <= (M > 0)).all()
        with np.errstate(divide="ignore"):
            G = np.where(M > 0, np.log(np.where(M > 0, M, 1.0)), -1e300)
        if causal:
            G = np.where(np.tri(L, dtype=bool), G, -np.inf)
        rep = sattn.check_approximation(G, A, eps1, eps2, causal=causal)
        assert rep.ok, rep.message
        margin = min(rep.margin6, rep.margin7)
        ours = P.algorithm1_precision(res, A, "float32")
        assert abs(margin - ours.margin) < 1e-4  # JAX and sattn's float32 pass give the same margin


def _jax_column_head(Z, head, dtype):
    q = jnp.asarray((head.W_Q @ Z).T[None, :, None, :], dtype)
    k = jnp.asarray((head.W_K @ Z).T[None, :, None, :], dtype)
    v = jnp.asarray((head.W_V @ Z).T[None, :, None, :], dtype)
    out = jax.nn.dot_product_attention(q, k, v, scale=1.0, implementation="xla")
    return np.asarray(out[0, :, 0, :], dtype=np.float64).T  # (s, n)


def _dataset(seed, N=10, V=10, d=3, n=4):
    return token_dataset(seed, N=N, V=V, d=d, n=n)[:2]


def test_memorizing_layer_through_jax_attention():
    Xs, Ys = _dataset(0)
    model, _ = sattn.memorize(Xs, Ys, np.random.default_rng(1))
    head = model.attention.head
    err64 = err_bf16 = 0.0
    for X, Y in zip(Xs, Ys):
        att = X + head.W_O @ _jax_column_head(X, head, jnp.float64)
        assert np.abs(att - sattn.multihead_attention(X, [head])).max() < 1e-6
        err64 = max(err64, float(np.abs(sattn.feed_forward(att, model.ffn) - Y).max()))
        att16 = P.round_to(P.round_to(X, "bfloat16") + P.round_to(
            head.W_O @ _jax_column_head(X, head, jnp.bfloat16), "bfloat16"), "bfloat16")
        err_bf16 = max(err_bf16, float(np.abs(P.feed_forward_in(att16, model.ffn, "bfloat16") - Y).max()))
    # JAX's float32 softmax inside the float64 pass costs labels nothing at tolerance 1/2 ...
    assert err64 < 0.5
    # ... but JAX's bfloat16 attention destroys the ids, as sattn's bfloat16 emulation says
    assert err_bf16 > 0.5
    assert not P.memorization_precision(model, Xs, Ys, "bfloat16").ok
