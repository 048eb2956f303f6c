"""The book's version, commit and build date, from one source (Sphinx extension and a module).

- **Version**: the ``version`` of ``[project]`` in ``pyproject.toml`` (the package's version; it is
  typed nowhere else: ``CITATION.cff`` is checked against it by ``tests/site/test_versions.py``).
- **Commit**: ``git rev-parse --short HEAD`` at build time, with ``+ local changes`` when the work
  tree differs from it; ``$BOOK_COMMIT`` overrides it; outside a git checkout (the runnable kit,
  an unpacked archive) it says so.
- **Build date**: today in UTC, or ``$SOURCE_DATE_EPOCH`` when set (reproducible builds).

As a Sphinx extension it puts the three on every page's footer, with a link to the Changes and
corrections page, and adds the directives ``{book-version}`` (a line with the three) and
``{book-citation-bibtex}`` (the cite page's BibTeX entry, with the version filled in). When the
version or commit changes, every page is re-read so no footer keeps an old commit.

Also ``python tools/book_version.py [--version|--commit|--json]`` for the Makefile and scripts.
"""

from __future__ import annotations

import datetime
import html
import importlib.util
import json
import os
import subprocess
import sys

from docutils import nodes
from docutils.parsers.rst import Directive

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NO_GIT = "unknown (not built from a git checkout)"
CHANGES_DOC = "chapters/changes"


def _package_version_module():
    """``sattn/_version.py`` loaded on its own (not the whole package, which needs numpy & co)."""
    spec = importlib.util.spec_from_file_location(
        "_sattn_version", os.path.join(ROOT, "sattn", "_version.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_SATTN_VERSION = _package_version_module()


def version(root: str = ROOT) -> str:
    """``[project] version`` of ``pyproject.toml`` (the only place the version is written), read
    by the package's own reader, :func:`sattn._version.pyproject_version`."""
    return _SATTN_VERSION.pyproject_version(root)


def commit(root: str = ROOT) -> str:
    """Short commit of the checkout, ``+ local changes`` if it differs; a clear text outside git."""
    if os.environ.get("BOOK_COMMIT"):
        return os.environ["BOOK_COMMIT"]
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], check=True,
                              capture_output=True, text=True, timeout=20).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return NO_GIT
    return f"{head} + local changes" if dirty else head


def build_date() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch
            else datetime.datetime.now(datetime.timezone.utc))
    return when.strftime("%Y-%m-%d")


def info(root: str = ROOT) -> dict:
    return {"version": version(root), "commit": commit(root), "date": build_date()}


def line_html(data: dict, changes_url: str | None = None) -> str:
    parts = [f'Version <span class="book-version-number">{html.escape(data["version"])}</span>',
             f'commit <code class="book-version-commit">{html.escape(data["commit"])}</code>',
             f'built <span class="book-version-date">{html.escape(data["date"])}</span>']
    if changes_url:
        parts.append(f'<a href="{html.escape(changes_url)}">changes and corrections</a>')
    return '<span class="book-version">' + " · ".join(parts) + "</span>"


class VersionLine(Directive):
    """``{book-version}``: 'Version X · commit Y · built Z' (re-read on every build)."""

    has_content = False

    def run(self):
        env = self.state.document.settings.env
        env.note_reread()
        return [nodes.raw("", f'<p class="book-version-line">{line_html(env.book_version_info)}</p>',
                          format="html")]


class CitationBibtex(Directive):
    """``{book-citation-bibtex}``: the book's BibTeX entry with this build's version."""

    has_content = False

    def run(self):
        env = self.state.document.settings.env
        env.note_reread()
        data = env.book_version_info
        year = data["date"][:4]
        text = ("@book{sattn_book,\n"
                "  title     = {The Expressive Power of Self-Attention: an Executable Book},\n"
                "  author    = {{The sattn book contributors}},\n"
                f"  year      = {{{year}}},\n"
                f"  version   = {{{data['version']}}},\n"
                "  note      = {Executable Jupyter Book with the Python package \\texttt{sattn};\n"
                f"               version {data['version']}, commit {data['commit']}}},\n"
                "  license   = {MIT}\n"
                "}")
        block = nodes.literal_block(text, text)
        block["language"] = "bibtex"
        return [block]


def _builder_inited(app):
    app.env.book_version_info = info(app.srcdir if os.path.exists(
        os.path.join(app.srcdir, "pyproject.toml")) else ROOT)


def _env_get_outdated(app, env, added, changed, removed):
    """Re-read every page when version or commit changed: each page's footer shows them."""
    stamp = (env.book_version_info["version"], env.book_version_info["commit"])
    if getattr(env, "book_version_stamp", None) != stamp:
        env.book_version_stamp = stamp
        return sorted(set(env.found_docs) - set(added) - set(changed) - set(removed))
    return []


def _page_context(app, pagename, templatename, context, doctree):
    changes = (context["pathto"](CHANGES_DOC) if CHANGES_DOC in app.env.all_docs else None)
    context["theme_extra_footer"] = line_html(app.env.book_version_info, changes)
    context["book_version"] = app.env.book_version_info


def setup(app):
    app.add_directive("book-version", VersionLine)
    app.add_directive("book-citation-bibtex", CitationBibtex)
    app.connect("builder-inited", _builder_inited)
    app.connect("env-get-outdated", _env_get_outdated)
    app.connect("html-page-context", _page_context)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}


def main(argv: list[str]) -> int:
    data = info()
    if argv[1:] in (["--version"], []):
        print(data["version"])
    elif argv[1:] == ["--commit"]:
        print(data["commit"])
    elif argv[1:] == ["--json"]:
        print(json.dumps(data))
    else:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
