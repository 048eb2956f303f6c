"""Sphinx extension: ``{py:func}`sattn.approximate``` resolves to where the function is documented.

The chapters use the package's flat public API (``sattn.approximate``), while the API page documents
each object once, in the module that holds it (``sattn.patterns.construction.approximate``). For a Python
cross-reference that nothing else resolved and whose target is ``sattn.<name>`` with ``<name>`` in
``sattn.__all__``, this looks up the object's defining module and resolves the reference to its entry
there. A name that is not public stays unresolved, so the ``-n -W`` build still fails on a typo or on
a private name.
"""

from __future__ import annotations

import importlib

from sphinx.util.nodes import make_refnode


def _resolve(app, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    head, _, name = target.partition(".")
    if head != "sattn" or not name:
        return None
    pkg = importlib.import_module("sattn")
    first, _, rest = name.partition(".")  # sattn.FastEngine.draw -> FastEngine, draw
    if first not in getattr(pkg, "__all__", ()):
        return None
    obj = getattr(pkg, first)
    module = getattr(obj, "__module__", None)
    if not module or module == "sattn":
        return None
    full = f"{module}.{first}" + (f".{rest}" if rest else "")
    domain = env.get_domain("py")
    for objname, _dispname, objtype, docname, anchor, _prio in domain.get_objects():
        if objname == full:
            return make_refnode(app.builder, node["refdoc"], docname, anchor, contnode, full)
    return None


def setup(app):
    app.connect("missing-reference", _resolve)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}


