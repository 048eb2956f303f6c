"""Sphinx extension: the book as one page (``singlehtml`` builder), the source of ``make pdf``.

- sphinx-exercise registers translation handlers for the ``singlehtml`` builder, so Sphinx no
  longer falls back to the ``html`` handlers for every other extension's nodes (sphinx-proof's
  theorem nodes then fail with "unknown node type"). Here every ``html`` handler missing for
  ``singlehtml`` is copied over when that builder starts.
- myst-nb adds each notebook's widget state (and the widget scripts) only to that notebook's own
  page; in the one-page build every chapter's state is added to the one page, so that every
  widget renders in its default view.
- The API reference (generated from the docstrings, a third of the printed pages) is left to the
  website: on the one page its chapter keeps its title (the PDF's outline lists it) and says where
  to find it (:data:`API_DOC`, :func:`_api_to_website`).
- The print styles themselves are in ``book_static/book.css`` (``@media print``), so printing any
  page of the website gives the same result; ``tools/make_pdf.py`` prints the single page.
"""

from __future__ import annotations

from docutils import nodes

#: The document the PDF leaves to the website.
API_DOC = "chapters/api"
API_NOTE = ("The reference of the sattn package, generated from its docstrings, is on the website: "
            "the page API reference (chapters/api.html of the built site, next to the chapters). "
            "Every function the chapters use says there what it computes, what it expects, what "
            "it raises and which equation or theorem it implements.")


def _builder_inited(app):
    if app.builder.name != "singlehtml":
        return
    handlers = app.registry.translation_handlers
    single = handlers.setdefault("singlehtml", {})
    for name, pair in handlers.get("html", {}).items():
        single.setdefault(name, pair)


def _all_widget_states(app, pagename, templatename, context, doctree):
    """On the one page, add the per-page scripts (widget states) of every other document."""
    if app.builder.name != "singlehtml" or pagename != app.config.root_doc:
        return
    from myst_nb.sphinx_ext import NbMetadataCollector

    seen = set()
    for docname in sorted(app.env.all_docs):
        if docname == pagename:
            continue
        for path, kwargs in NbMetadataCollector.get_js_files(app.env, docname).values():
            key = path or kwargs.get("body")
            if key in seen:
                continue
            seen.add(key)
            app.add_js_file(path, **kwargs)


def _api_to_website(app, doctree, docname):
    """On the one page only: the API chapter keeps its title and a note, not its 130 pages."""
    if app.builder.name != "singlehtml":
        return
    from sphinx import addnodes

    for start in list(doctree.findall(addnodes.start_of_file)):
        if start.get("docname") != API_DOC:
            continue
        for section in start.findall(nodes.section):
            title = next(iter(section.findall(nodes.title)), None)
            section.children = ([title] if title is not None else []) + [
                nodes.paragraph(text=API_NOTE, classes=["book-api-note"])]
            break


def setup(app):
    app.connect("builder-inited", _builder_inited)
    app.connect("html-page-context", _all_widget_states, priority=400)
    app.connect("doctree-resolved", _api_to_website)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
