"""What JupyterLab shows of a chapter, and the contents manager of ``python -m sattn lab``.

JupyterLab renders each notebook on its own: a cross-reference to another chapter, to a figure made
by a code cell, a citation or an API role has no target there and shows as a warning, and so does a
reference to a label defined further down the same notebook. On opening a chapter,
:class:`BookContentsManager` (jupytext's contents manager, which Jupyter Server loads by name) turns
each such role into a Markdown link to the notebook (or the bibliography, the API page) that holds
it, with the text a reader should see; the link's title keeps the role, so a save writes the role
back byte for byte. The code cells of a solution open collapsed, as a closed solution hides them on
the website. The module needs Jupyter Server and jupytext, which the rest of ``sattn`` does not.

References
----------
:mod:`sattn.presentation.lab` (the command and the save hook); jupytext's contents manager:
https://jupytext.readthedocs.io; Jupyter Server's ``ContentsManager``.
"""

from __future__ import annotations

import copy
import glob
import os
import re

import jupytext
import yaml
from jupytext.async_contentsmanager import AsyncTextFileContentsManager

from .lab import is_book_chapter, portable_notebook

# Machinery: none of its names is flat (the rule of the flat API: :mod:`sattn`).
__flat__: list[str] = []
__all__ = [*__flat__, "reference_index", "cell_labels", "references_for_lab", "references_from_lab",
           "notebook_for_lab", "notebook_from_lab", "BookContentsManager"]

# ----------------------------------------------------------------------------- references in JupyterLab
# JupyterLab renders a notebook on its own: a cross-reference to another chapter, to a figure made by
# a code cell, a citation or an API role has no target there and shows as a warning. On opening, such
# a role becomes a Markdown link to the chapter (or the bibliography, the API page) that holds it,
# with a readable text; the link's title keeps the role, so a save writes the role back unchanged.

_ROLE = re.compile(r"\{(prf:ref|ref|numref|eq|doc|cite:t|cite:p|cite|py:func|py:class|py:meth|"
                   r"py:mod|py:exc|py:data)\}`([^`]+)`")
_MARK = "sattn-role:"
_LINK = re.compile(r"\[((?:[^\[\]\\]|\\.)*)\]\(([^\s()]*) \"" + re.escape(_MARK)
                   + r"((?:[^\"\\]|\\.)*)\"\)")
_EXPLICIT = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.S)
_DIRECTIVE = re.compile(r"^(?::{3,}|`{3,})\{([\w:-]+)\}\s*(.*)$")
_KINDS = {"prf:theorem": "Theorem", "prf:lemma": "Lemma", "prf:definition": "Definition",
          "prf:proposition": "Proposition", "prf:corollary": "Corollary", "prf:remark": "Remark",
          "prf:algorithm": "Algorithm", "prf:example": "Example", "prf:conjecture": "Conjecture",
          "prf:assumption": "Assumption", "prf:observation": "Observation", "prf:property": "Property",
          "prf:proof": "Proof", "exercise": "Exercise", "figure": "Figure"}


def _chapter_numbers(folder: str) -> dict:
    """Chapter number of each numbered document, from ``_toc.yml`` beside ``folder`` (else none)."""
    toc = os.path.join(os.path.dirname(os.path.abspath(folder)), "_toc.yml")
    if not os.path.exists(toc):
        return {}
    with open(toc, encoding="utf-8") as f:
        spec = yaml.safe_load(f) or {}
    numbers, n = {}, 0
    for part in spec.get("parts", []):
        for ch in part.get("chapters", []):
            name = os.path.basename(str(ch.get("file", "")))
            if part.get("numbered", False):
                n += 1
                numbers[name] = n
    return numbers


def _plain(text: str) -> str:
    """``text`` with each role replaced by its text or target (for link texts and captions)."""
    def one(m):
        e = _EXPLICIT.match(m.group(2))
        return e.group(1) if e else m.group(2)
    return _ROLE.sub(one, text)


def _shorten(text: str, words: int = 10) -> str:
    """The first ``words`` words of ``text`` (more if needed to close an inline ``$...$``)."""
    parts = " ".join(text.split()).split(" ")
    n = min(words, len(parts))
    while n < len(parts) and " ".join(parts[:n]).count("$") % 2:
        n += 1
    return " ".join(parts[:n]) + (" …" if n < len(parts) else "")


def reference_index(folder: str = "chapters") -> dict:
    """Where each label of the chapters lives and the text a reader should see for it.

    Scans the MyST sources of ``folder``: targets ``(label)=`` (the heading that follows), directive
    labels (``:label:``/``:name:``; theorem-like kinds get their kind and title), equation labels
    ``$$ (label)`` (numbered per chapter, as the website numbers them) and the figures that code
    cells make (``mystnb.figure.name``, with a shortened caption).

    Parameters
    ----------
    folder : str
        The folder of the chapters.

    Returns
    -------
    dict
        ``{"labels": {label: (document, text, from_code_cell)}, "titles": {document: title},
        "cites": {key: (authors, year)}}``.

    References
    ----------
    Used by :func:`references_for_lab`.
    """
    if not os.path.isdir(folder):
        raise ValueError(f"no folder {folder!r}: give the folder of the chapters (e.g. chapters)")
    numbers = _chapter_numbers(folder)
    labels, titles = {}, {}
    for path in sorted(glob.glob(os.path.join(folder, "*.md"))):
        doc = os.path.splitext(os.path.basename(path))[0]
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        pending, kind, title, eqs = None, None, "", 0
        for i, line in enumerate(lines):
            s = line.strip()
            if s.startswith("# ") and doc not in titles:
                titles[doc] = s[2:].strip()
            m = re.match(r"^\(([\w:.-]+)\)=$", s)
            if m:
                pending = m.group(1)
                continue
            if pending and s:
                text = _plain(s.lstrip("#").strip()) if s.startswith("#") else pending
                labels.setdefault(pending, (doc, text, False))
                pending = None
            m = _DIRECTIVE.match(s)
            if m:
                kind, title = m.group(1), m.group(2).strip()
                continue
            m = re.match(r"^:(label|name):\s*(\S+)$", s)
            if m and kind:
                name = _KINDS.get(kind, kind.split(":")[-1].capitalize())
                labels.setdefault(m.group(2), (doc, f"{name} ({_shorten(_plain(title))})" if title else name,
                                               False))
                continue
            m = re.match(r"^\$\$\s*\(([\w:.-]+)\)\s*$", s)
            if m:
                eqs += 1
                num = f"{numbers[doc]}.{eqs}" if doc in numbers else str(eqs)
                labels.setdefault(m.group(1), (doc, f"({num})", False))
                continue
        for cell in jupytext.reads("\n".join(lines), fmt="md:myst").cells:
            figure = _figure_options(cell)
            if cell.get("cell_type") == "code" and isinstance(figure.get("name"), str):
                caption = _plain(str(figure.get("caption", "")))
                labels.setdefault(figure["name"], (doc, f"Figure ({_shorten(caption)})"
                                                   if caption else "Figure", True))
    return {"labels": labels, "titles": titles, "cites": _bib_entries(folder)}


def _bib_entries(folder: str) -> dict:
    out = {}
    for path in glob.glob(os.path.join(folder, "*.bib")):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in re.finditer(r"@\w+\{([^,\s]+),(.*?)\n\}", text, re.S):
            body = m.group(2)
            author = re.search(r"author\s*=\s*\{(.*?)\}\s*,?\s*\n", body, re.S)
            year = re.search(r"year\s*=\s*\{?(\d{4})", body)
            names = [a.split(",")[0].strip(" {}") for a in (author.group(1) if author else "")
                     .split(" and ")]
            who = (names[0] + (" and " + names[1] if len(names) == 2 else " et al." if
                               len(names) > 2 else "")) if names and names[0] else m.group(1)
            out[m.group(1)] = (who, year.group(1) if year else "n.d.")
    return out


def _escape(text: str, chars: str) -> str:
    return "".join("\\" + c if c in chars else c for c in text)


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _lab_link(role: str, content: str, doc: str, index: dict, defined) -> str | None:
    """The Markdown link that stands for one role in JupyterLab (``None``: leave the role)."""
    m = _EXPLICIT.match(content)
    text, target = (m.group(1), m.group(2)) if m else (None, content)
    labels = index["labels"]
    if role in ("prf:ref", "ref", "numref", "eq"):
        found = labels.get(target)
        if found is None:
            return None
        where, shown, in_code = found
        if where == doc and not in_code and (defined is None or target in defined):
            return None  # JupyterLab resolves a label defined earlier in the same notebook
        href, text = f"{where}.ipynb", text or shown
    elif role == "doc":
        name = os.path.basename(target)
        href, text = f"{name}.ipynb", text or index["titles"].get(name, name)
    elif role.startswith("cite"):
        keys = [k.strip() for k in target.split(",")]
        found = [index["cites"].get(k) for k in keys]
        if any(f is None for f in found):
            return None
        if role == "cite:t":
            text = "; ".join(f"{who} ({year})" for who, year in found)
        else:
            text = "(" + "; ".join(f"{who}, {year}" for who, year in found) + ")"
        href = "bibliography.md"
    else:  # py:...
        name = target.lstrip("~!.")
        href, text = "api.md", text or f"`{name.split('.')[-1] if target.startswith('~') else name}`"
    original = "{" + role + "}`" + content + "`"
    return f"[{_escape(text, '[]')}]({href} \"{_MARK}{_escape(original, chr(92) + chr(34))}\")"


_CELL_LABEL = re.compile(r"^(?:\(([\w:.-]+)\)=|:(?:label|name):\s*(\S+)|\$\$\s*\(([\w:.-]+)\))\s*$",
                         re.M)


def cell_labels(source: str) -> set:
    """The labels a Markdown cell defines (targets, directive labels, equation labels)."""
    return {a or b or c for a, b, c in _CELL_LABEL.findall(source)}


def references_for_lab(source: str, doc: str, index: dict, defined=None) -> str:
    """A Markdown cell's text for JupyterLab: roles it cannot resolve become links (see above).

    :func:`references_from_lab` undoes it exactly.

    Parameters
    ----------
    source : str
        The cell's Markdown, as in the chapter's ``.md``.
    doc : str
        The chapter's name (``04_construction``).
    index : dict
        From :func:`reference_index`.
    defined : set, optional
        Labels defined by this and the earlier cells of the notebook: a reference to one of them is
        left as a role (JupyterLab resolves it); a reference forward, to a later cell, is not
        resolved by JupyterLab and becomes a link. Default: every label of the chapter's Markdown.

    Returns
    -------
    str

    References
    ----------
    Used by :class:`BookContentsManager`.
    """
    return _ROLE.sub(lambda m: _lab_link(m.group(1), m.group(2), doc, index, defined)
                     or m.group(0), source)


def references_from_lab(source: str) -> str:
    """Undo :func:`references_for_lab`: every link it made becomes its role again."""
    return _LINK.sub(lambda m: _unescape(m.group(3)), source)


def _solution_cells(cells) -> list:
    """Indices of the code cells between a ``solution-start`` and its ``solution-end``."""
    out, inside = [], False
    for i, cell in enumerate(cells):
        src = "".join(cell.get("source", "")) if isinstance(cell.get("source"), list) \
            else cell.get("source", "")
        if cell.get("cell_type") == "markdown":
            start, end = src.rfind("{solution-start}"), src.rfind("{solution-end}")
            if start != end:  # the later of the two, in a cell that may hold both
                inside = start > end
        elif inside and cell.get("cell_type") == "code":
            out.append(i)
    return out


def _figure_options(cell) -> dict:
    """A code cell's ``mystnb.figure`` options (JupyterLab renders their caption too), or {}."""
    figure = cell.get("metadata", {}).get("mystnb", {})
    figure = figure.get("figure") if isinstance(figure, dict) else None
    return figure if isinstance(figure, dict) else {}


def notebook_for_lab(nb: dict, doc: str, index: dict) -> dict:
    """A chapter as JupyterLab shows it, in place; return it.

    Markdown cells and figure captions go through :func:`references_for_lab`; the code cells of a solution start
    collapsed (``jupyter.source_hidden`` and ``outputs_hidden``), so a closed solution hides its code
    and output as on the website. :func:`notebook_from_lab` undoes both.

    References
    ----------
    Used by :class:`BookContentsManager`.
    """
    defined = set()
    for cell in nb["cells"]:
        if cell.get("cell_type") == "markdown" and isinstance(cell.get("source"), str):
            defined |= cell_labels(cell["source"])
            cell["source"] = references_for_lab(cell["source"], doc, index, defined)
        figure = _figure_options(cell)
        if isinstance(figure.get("caption"), str):
            figure["caption"] = references_for_lab(figure["caption"], doc, index, defined)
    for i in _solution_cells(nb["cells"]):
        meta = nb["cells"][i].setdefault("metadata", {})
        meta.setdefault("jupyter", {}).update({"source_hidden": True, "outputs_hidden": True})
    return nb


def notebook_from_lab(nb: dict) -> dict:
    """Undo :func:`notebook_for_lab` in place (before a save); return ``nb``."""
    for cell in nb["cells"]:
        if cell.get("cell_type") == "markdown":
            src = cell.get("source", "")
            src = "".join(src) if isinstance(src, list) else src
            cell["source"] = references_from_lab(src)
        figure = _figure_options(cell)
        if isinstance(figure.get("caption"), str):
            figure["caption"] = references_from_lab(figure["caption"])
    for i in _solution_cells(nb["cells"]):
        meta = nb["cells"][i].get("metadata", {})
        meta.pop("collapsed", None)  # JupyterLab's older name for a collapsed output
        jup = meta.get("jupyter", {})
        jup.pop("source_hidden", None)
        jup.pop("outputs_hidden", None)
        if "jupyter" in meta and not jup:
            del meta["jupyter"]
    return nb


class BookContentsManager(AsyncTextFileContentsManager):
    """jupytext's contents manager, with the chapters shown for JupyterLab.

    A chapter (a notebook paired with MyST Markdown) is opened through
    :func:`notebook_for_lab` and saved through
    :func:`notebook_from_lab` and
    :func:`sattn.presentation.lab.portable_notebook`, so the files on disk stay those of the book.

    References
    ----------
    Set by :func:`sattn.presentation.lab.lab_command`.
    """

    _book_index = None

    def _index(self):
        if self._book_index is None:
            self._book_index = reference_index(self.root_dir)
        return self._book_index

    async def get(self, path, content=True, type=None, format=None, **kwargs):
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if content and model.get("type") == "notebook" and is_book_chapter(model["content"]):
            doc = os.path.splitext(os.path.basename(path))[0]
            notebook_for_lab(model["content"], doc, self._index())
        return model

    async def save(self, model, path=""):
        if model.get("type") == "notebook" and isinstance(model.get("content"), dict) \
                and is_book_chapter(model["content"]):
            model = dict(model, content=copy.deepcopy(model["content"]))
            notebook_from_lab(model["content"])
            portable_notebook(model["content"])
        return await super().save(model, path)
