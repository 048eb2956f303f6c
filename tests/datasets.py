"""Small random datasets shared by the package tests (importable as ``from datasets import …``;
``tests/conftest.py`` puts this folder on the path)."""

import numpy as np


def token_dataset(seed, *, d=3, n=4, N=20, V=12, C=5, duplicates=False):
    """``N`` input sequences ``(d, n)`` drawn from a vocabulary of ``V`` tokens, with random labels.

    The tokens are random directions in R^d with norms in [0.5, 2]; a sequence is ``n`` of them
    (distinct unless ``duplicates``), and no sequence is a permutation of an earlier one (random
    labels would conflict otherwise). Labels are integer matrices ``(d, n)`` with entries 1..C.

    Returns ``(Xs, Ys, rng)``: the generator is returned so a test can keep drawing from it.
    """
    rng = np.random.default_rng(seed)
    vocab = rng.standard_normal((V, d))
    vocab *= rng.uniform(0.5, 2.0, (V, 1)) / np.linalg.norm(vocab, axis=1, keepdims=True)
    Xs, seen = [], set()
    while len(Xs) < N:
        idx = rng.choice(V, n, replace=duplicates)
        key = tuple(sorted(idx))
        if key in seen:
            continue
        seen.add(key)
        Xs.append(vocab[idx].T)
    Ys = [rng.integers(1, C + 1, (d, n)).astype(float) for _ in range(N)]
    return Xs, Ys, rng
