"""Sphinx extension: the book is built from the stored, executed notebooks; no chapter is executed.

Each chapter is a jupytext pair, ``chapters/NN_name.md`` (the source people edit) and
``chapters/NN_name.ipynb`` (executed by ``tools/execute_notebooks.py``, with its outputs and the
widget state a static page needs to draw its widgets). The build reads the ``.ipynb`` of every pair
and not its ``.md`` (the ``.md`` files are added to ``exclude_patterns`` here; pages without a pair,
such as the introduction, are read from their ``.md``), and ``execute_notebooks: "off"`` in
``_config.yml`` keeps myst-nb from running anything. ``make test`` checks that each ``.md`` and its
``.ipynb`` hold the same cells (``tests/notebooks``) and that every stored output is what a fresh
execution prints (nbval), so the site shows exactly the outputs that were verified.

* With ``BOOK_NBVAL_RECORD`` set to the record of nbval's run (``tools/nbval_record.py``; ``make
  book-after-nbval`` sets it), the build stops unless every stored notebook it reads passed under
  nbval in that run and is byte for byte the file nbval read: it hashes each notebook as Sphinx
  reads it (``source-read``), and every notebook of the book before reading any.
* ``{book-execution-table}`` (the status page): one row per chapter with the run time of the
  execution really made: nbval's time for its cells in the recorded run when there is a record,
  otherwise the time ``tools/execute_notebooks.py`` took to execute the stored notebook
  (``chapters/executions.json``, written by that script; a notebook changed since that execution
  says so instead of a time).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx import addnodes
from sphinx.errors import ExtensionError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Written by tools/execute_notebooks.py: per stored notebook, its run time and the file's SHA-256.
EXECUTIONS = os.path.join("chapters", "executions.json")
RECORD_ENV = "BOOK_NBVAL_RECORD"


def paired_chapters(srcdir: str) -> list[str]:
    """The chapters kept as a jupytext pair, as docnames (``chapters/NN_name``): a ``.md`` with a
    jupytext header and its ``.ipynb`` next to it."""
    names = []
    for md in sorted(glob.glob(os.path.join(srcdir, "chapters", "*.md"))):
        with open(md, encoding="utf-8") as f:
            head = f.read(400)
        if head.startswith("---") and "jupytext:" in head and os.path.exists(md[:-3] + ".ipynb"):
            names.append(os.path.relpath(md[:-3], srcdir).replace(os.sep, "/"))
    return names


def _record(app):
    path = os.environ.get(RECORD_ENV)
    if not path:
        return None
    import nbval_record

    try:
        return nbval_record.load(path if os.path.isabs(path) else os.path.join(app.srcdir, path))
    except FileNotFoundError as exc:
        raise ExtensionError(str(exc)) from None


def _config_inited(app, config):
    pairs = paired_chapters(app.srcdir)
    # the .ipynb of a pair is the page; its .md is the source people edit, not a second page
    config.exclude_patterns = [p for p in config.exclude_patterns if p != "chapters/*.ipynb"]
    config.exclude_patterns += [name + ".md" for name in pairs]
    app.stored_notebook_record = _record(app)


def _check(app, notebooks: dict[str, bytes]) -> None:
    import nbval_record

    found = nbval_record.problems(app.stored_notebook_record, notebooks)
    if found:
        raise ExtensionError(
            "the book is built only from stored notebooks that nbval verified in the recorded run "
            f"({os.environ.get(RECORD_ENV)}); run 'make test-nbval' again:\n  " + "\n  ".join(found))


def _before_read(app, env, docnames):
    """Every stored notebook of the book, also those Sphinx will not read again, must be verified."""
    if app.stored_notebook_record is None:
        return
    files = {}
    for name in paired_chapters(app.srcdir):
        with open(os.path.join(app.srcdir, name + ".ipynb"), "rb") as f:
            files[name + ".ipynb"] = f.read()
    _check(app, files)


def _source_read(app, docname, source):
    """The text Sphinx is about to parse is the text nbval verified."""
    if app.stored_notebook_record is None or docname not in paired_chapters(app.srcdir):
        return
    _check(app, {docname + ".ipynb": source[0].encode("utf-8")})


def _executions(srcdir: str) -> dict:
    path = os.path.join(srcdir, EXECUTIONS)
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def execution_rows(srcdir: str, record: dict | None) -> list[tuple[str, str, str]]:
    """(docname, run time in seconds or a dash, what ran it) for every paired chapter."""
    executions = _executions(srcdir)
    rows = []
    for name in paired_chapters(srcdir):
        key = name + ".ipynb"
        with open(os.path.join(srcdir, key), "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        if record is not None:
            entry = record[key]   # the build has already stopped when it is missing
            rows.append((name, f"{entry['seconds']:.1f}", "nbval, in the run of make test that "
                         "verified this build"))
            continue
        entry = executions.get(key)
        if entry and entry.get("sha256") == sha:
            rows.append((name, f"{entry['seconds']:.1f}", "tools/execute_notebooks.py, which "
                         "wrote the stored notebook"))
        else:
            rows.append((name, "–", "unknown: the stored notebook is not the one its recorded "
                         "execution wrote" if entry else "unknown: no execution recorded"))
    return rows


class ExecutionTable(Directive):
    """``{book-execution-table}``: per chapter, the time of the execution that produced or verified
    its outputs."""

    has_content = False

    def run(self):
        env = self.state.document.settings.env
        env.note_reread()   # which run verified the book is a fact about *this* build
        for name in paired_chapters(env.srcdir):
            env.note_dependency(os.path.join(env.srcdir, name + ".ipynb"))
        rows = execution_rows(env.srcdir, env.app.stored_notebook_record)
        table = nodes.table(classes=["table", "book-executions"])
        group = nodes.tgroup(cols=3)
        table += group
        for width in (3, 1, 4):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        group += head
        head += self._row([nodes.Text(t) for t in ("Chapter", "Run time (s)", "Executed by")])
        body = nodes.tbody()
        group += body
        for name, seconds, how in rows:
            ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget="/" + name,
                                        refexplicit=True, refdoc=env.docname)
            ref += nodes.literal(name, name)
            body += self._row([ref, nodes.Text(seconds), nodes.Text(how)])
        return [table]

    @staticmethod
    def _row(cells):
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            entry += nodes.paragraph("", "", cell)
            row += entry
        return row


def setup(app):
    app.connect("config-inited", _config_inited)
    app.connect("env-before-read-docs", _before_read)
    app.connect("source-read", _source_read)
    app.add_directive("book-execution-table", ExecutionTable)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
