"""sattn: the helper package of the book *The Expressive Power of Self-Attention*.

Each module holds one part of the book's mathematics; every public function cites the equation or
theorem it implements and the chapter that explains it.
"""

from .attention import attention_logits, causal_mask, row_softmax, sam, self_attention, usam

__version__ = "0.1.0"

__all__ = [
    "attention_logits",
    "causal_mask",
    "row_softmax",
    "sam",
    "self_attention",
    "usam",
]
