"""The version of :mod:`sattn`, from one source: ``version`` in ``pyproject.toml``.

An installed package (``pip install .`` or ``pip install -e .``) reads it from the package
metadata that pip wrote from ``pyproject.toml``. A source checkout that was never installed (only
on ``PYTHONPATH``) reads ``pyproject.toml`` next to the package; anything else is ``0+unknown``.
"""

from __future__ import annotations

import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = ["__version__", "pyproject_version"]

_PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def pyproject_version(root) -> str:
    """``project.version`` of ``root/pyproject.toml``: the one reader of the one place the version
    is written (``tools/book_version.py`` loads this file to read it too)."""
    meta = tomllib.loads((Path(root) / "pyproject.toml").read_text(encoding="utf-8"))
    return str(meta["project"]["version"])


def _source_version() -> str:
    """``project.version`` of the ``pyproject.toml`` beside the source tree, or ``0+unknown``."""
    try:
        meta = tomllib.loads(_PYPROJECT.read_text(encoding="utf-8"))
        if meta["project"]["name"] == "sattn":
            return pyproject_version(_PYPROJECT.parent)
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
        pass
    return "0+unknown"


try:
    __version__ = version("sattn")
except PackageNotFoundError:  # not installed: a source checkout on PYTHONPATH
    __version__ = _source_version()
