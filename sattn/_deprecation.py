"""Old names kept for one release after a rename, each warning with its new name.

:data:`RENAMED` is the one place that lists them: for every module, ``{old name: new name}``. A
module with renamed names ends with ``__getattr__ = module_getattr(__name__)``, so that
``from sattn.<module> import <old>`` still works; the package's root resolves the flat ones
(``sattn.<old>``, listed in ``sattn.DEPRECATED``) the same way. An old name is in no ``__all__``
or ``__flat__``: it is found only on attribute access, and every access warns with a
:class:`DeprecationWarning` naming the new function. The old names go in the release after the one
that renamed them.

References
----------
The naming rule in the docstring of :mod:`sattn`; :ref:`api`.
"""

from __future__ import annotations

import sys
import warnings

__all__ = ["RENAMED", "module_getattr", "resolve"]

#: Every renamed public name, by module: ``{old: new}``. A function that raises on failure is
#: ``validate_*``; one that returns a report is ``check_*``; ``fit_log`` says what it fits.
RENAMED = {
    "sattn.attention": {"check_weights": "validate_weights"},
    "sattn.layers": {"check_heads": "validate_heads", "check_ffn": "validate_ffn"},
    "sattn.patterns.sparse": {
        "require_k_nonzero_bounded": "validate_k_nonzero_bounded",
        "require_gamma_variation_bounded": "validate_gamma_variation_bounded",
        "require_right_stochastic": "validate_right_stochastic",
        "require_lower_triangular": "validate_lower_triangular",
    },
    "sattn.patterns.criteria": {"check_tolerances": "validate_tolerances"},
    "sattn.patterns.construction": {"check_target": "validate_target"},
    "sattn.universality.contextual": {"check_separated": "validate_separated"},
    "sattn.universality.hardmax": {"check_draw_sizes": "validate_draw_sizes",
                                   "check_hardmax_d": "validate_hardmax_d"},
    "sattn.universality.rank_one": {"check_head_size": "validate_head_size"},
    "sattn.universality.memorize": {"check_consistent_labels": "validate_consistent_labels"},
    "sattn.runs.cluster": {"check_scheduler": "validate_scheduler"},
    "sattn.experiments.protocol": {"fit_log": "fit_dmin_log"},
}


def resolve(module: str, old: str, *, shown: str | None = None, stacklevel: int = 3):
    """The object an old name of ``module`` now has, with a :class:`DeprecationWarning`.

    Parameters
    ----------
    module : str
        The module's dotted name, a key of :data:`RENAMED`.
    old : str
        The old name.
    shown : str, optional
        The prefix the warning shows (``"sattn"`` for a flat name); default ``module``.
    stacklevel : int
        Passed to :func:`warnings.warn` (3: the frame that accessed the name through a
        ``__getattr__`` that calls this function).

    Raises
    ------
    AttributeError
        If ``old`` is not a renamed name of ``module`` (as a plain missing attribute would).
    """
    new = RENAMED.get(module, {}).get(old)
    if new is None:
        raise AttributeError(f"module {shown or module!r} has no attribute {old!r}")
    where = shown or module
    warnings.warn(f"{where}.{old} is deprecated and will be removed in the next release; "
                  f"use {where}.{new} (same arguments, same result)",
                  DeprecationWarning, stacklevel=stacklevel)
    return getattr(sys.modules[module], new)


def module_getattr(module: str):
    """A module ``__getattr__`` that resolves the old names of ``module`` (:func:`resolve`)."""
    def __getattr__(name):
        return resolve(module, name)
    return __getattr__
