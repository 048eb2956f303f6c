"""Subpackages whose modules are imported on first use, as ``import sattn`` itself is.

``import sattn`` runs no module of the package but its root (see :mod:`sattn`), so that a reader's
first import is fast and pulls in neither matplotlib's pyplot nor IPython nor ipywidgets. A
subpackage whose ``__init__`` ends with ``__getattr__ = submodule_getattr(__name__)`` lets
``sattn.experiments.acceptance`` (and the like) work after a plain ``import sattn``: the module is
imported when the attribute is first read.

References
----------
The flat API and its rule in the docstring of :mod:`sattn`; :ref:`api`.
"""

from __future__ import annotations

import importlib
import importlib.util

__all__ = ["submodule", "submodule_getattr"]


def submodule(package: str, name: str):
    """The module ``package.name``, imported now if it is not yet.

    Parameters
    ----------
    package : str
        A package's dotted name (``"sattn.experiments"``).
    name : str
        The attribute read on it.

    Raises
    ------
    AttributeError
        If ``package`` has no module ``name`` (as a plain missing attribute would).
    """
    if name.startswith("__") or importlib.util.find_spec(f"{package}.{name}") is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return importlib.import_module(f"{package}.{name}")


def submodule_getattr(package: str):
    """A module ``__getattr__`` that imports the modules of ``package`` on first use."""
    def __getattr__(name):
        return submodule(package, name)
    return __getattr__
