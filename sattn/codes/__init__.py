"""Codes that serve a target with few bits: width x bits for the book's weights, bounds and codes.

With the book's fixed weights ``W_Q = [I; 0]``, ``W_K = [0; I]`` the input of token ``l`` is
``x_l = [q_l, k_l]`` (``d_hid = 2 d``) and the logits are ``G[l, j] = <q_l, k_j>``. This module
holds what the chapter on width x bits proves and measures about that setting:

**Bounds** (every entry of the input in a set ``V`` of ``2**b`` values).

* :func:`~sattn.book_weights_bound`: under criterion (7) with ``eps2 < 1`` two rows with different
  supports cannot share a query and two columns that some row separates cannot share a key, so
  ``d b >= ceil(log2 L)`` for each half; with the counting bound of :ref:`ch-width-bits`,
  ``d_hid b >= 2 max(ceil(log2 L), ceil(log2 N(L, k) / (2 L)))``.
* :func:`~sattn.antichain_length`: on the two's-complement grid of one bit (``{-R, 0}``) the keys of a
  permutation target form an antichain, so ``d >= min{m : C(m, floor(m/2)) >= L}`` (Sperner).
* :func:`~sattn.bilinear_min_bits`: for *any* bilinear attention ``G = X W X^T`` every input that lies in
  some support is among the first or last ``k`` points on each axis-parallel line (a support is cut
  off by a hyperplane), so ``L <= 2 k 2**(b (d_hid - 1))``: width and bits do not trade freely.
* :func:`~sattn.serving_obstruction`: the lemma behind the first bound made executable: for an input with
  a repeated query or key it returns the row where (7) fails.

**Codes** (:class:`CodeInput`: integer matrices ``Q``, ``K`` and a grid).

* :func:`~sattn.sign_code_input` (``k = 1``): keys the ``m = ceil(log2 L)`` signs of the column's index,
  each query the key of its target; one bit per entry on the symmetric grid ``{-R/2, R/2}``;
  ``d_hid b = 2 ceil(log2 L)``, equal to the bound.
* :func:`~sattn.constant_weight_input` (``k = 1``): keys the first ``L`` words of weight
  ``floor(m/2)``, on the two's-complement grid of one bit; equal to the antichain bound.
* :func:`~sattn.cycle_code_input` (``k = 2``): the target's column graph is a union of cycles; each cycle
  is laid into its own subcube of the sign cube so that the two keys of every row span a subcube
  holding no other key, and the query is their average (values ``-1, 0, 1``: two bits).
* :func:`~sattn.hash_code_input` (any ``k``): keys made of ``T`` one-hot blocks (a seeded hash per block),
  each query the union of its support's keys; blocks are added until every column off a row's
  support misses that union in some block (a cover-free code for this one target), one bit.

**One checker** (:func:`~sattn.check_code_input`): criteria (6)-(7) in exact integer arithmetic, never
an ``L x L`` array: by enumerating the keys nearest each query (codes whose keys take two values,
``O(L m)`` per radius) or in row blocks of exact products; the same per-row extremes decide the
float format (the whole pass with a ``p``-bit significand), with the softmax's division bounded.

Four modules, in the order in which they may import each other: :mod:`~sattn.codes.bounds`,
:mod:`~sattn.codes.inputs`, :mod:`~sattn.codes.checker` and :mod:`~sattn.codes.measure` (the
task store). The book explains all of this in :ref:`ch-width-bits`.
"""

from __future__ import annotations

from . import bounds, inputs, checker, measure  # noqa: E401 (in import order)

# Every public name of the four modules is importable as sattn.codes.<name>.
__all__ = [*bounds.__all__, *inputs.__all__, *checker.__all__, *measure.__all__]
globals().update({name: getattr(module, name) for module in (bounds, inputs, checker, measure)
                  for name in module.__all__})
