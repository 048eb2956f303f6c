"""Sphinx extension: redirect pages for URLs the book used to have.

When chapter files are renamed, readers' bookmarks and other sites' links keep the old address.
For every entry of ``book_redirects`` (old docname -> new docname, set in ``_config.yml``) this
writes ``<old>.html`` into the built site: a small page that sends the browser to the new page,
keeping the ``#fragment`` (so a link to a theorem still lands on it), with a plain link for readers
without JavaScript. Redirect pages carry ``<meta name="book-redirect">`` so that the site tests can
tell them from the book's pages.

When sections move from one page to another, ``book_anchor_redirects`` (old docname -> ``{to: new
docname, anchors: [ids]}``) keeps links to them working: the old page gets a small script that,
when the address names one of those ids (``#id``), replaces the address with the new page at the
same id, as soon as the page's head is read (before the rest of the old page is parsed) and on
every change of the fragment. So that no id of the old page can be sent away, the build fails
when a moved id is still an id of the old page.
"""

from __future__ import annotations

import html
import json
import os
import posixpath
import re

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="book-redirect" content="{target}">
<title>Moved: {title}</title>
<link rel="canonical" href="{target}">
<meta http-equiv="refresh" content="0; url={target}">
<script>location.replace({target_js} + location.hash);</script>
</head>
<body><p>This page has moved to <a href="{target}">{title}</a>.</p></body>
</html>
"""


def is_redirect_page(text: str) -> bool:
    """True if ``text`` (an HTML page) is one of the redirect pages written here."""
    return '<meta name="book-redirect"' in text


ANCHOR_SCRIPT = """(function () {{
  var moved = {anchors}, to = {target};
  function go() {{
    var id = decodeURIComponent(location.hash.slice(1));
    if (moved.indexOf(id) >= 0) location.replace(to + "#" + id);
    else document.documentElement.setAttribute("data-book-anchor-kept", id);
  }}
  go();
  window.addEventListener("hashchange", go);
}})();"""


def page_ids(path: str) -> set[str]:
    """Every ``id`` of the built HTML page at ``path``."""
    with open(path, encoding="utf-8") as f:
        return set(re.findall(r'\bid="([^"]+)"', f.read()))


def anchor_script(pagename: str, new: str, anchors: list[str]) -> str:
    """The script that sends ``pagename.html#id`` to ``new.html#id`` for every id of ``anchors``."""
    target = posixpath.relpath(new, posixpath.dirname(pagename) or ".") + ".html"
    return ANCHOR_SCRIPT.format(anchors=json.dumps(list(anchors)), target=json.dumps(target))


def _anchor_redirects(app, pagename, templatename, context, doctree):
    entry = app.config.book_anchor_redirects.get(pagename)
    if entry and app.builder.format == "html" and app.builder.name != "singlehtml":
        app.add_js_file(None, body=anchor_script(pagename, entry["to"], entry["anchors"]))


def _check_anchor_redirects(app, env):
    for old, entry in app.config.book_anchor_redirects.items():
        for key in (old, entry["to"]):
            if key not in env.found_docs:
                raise ValueError(f"book_anchor_redirects: {key!r} is not a page of the book")


def _write_redirects(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    found = set(app.env.found_docs)
    if app.builder.name != "singlehtml":
        for old, entry in app.config.book_anchor_redirects.items():
            ids = page_ids(os.path.join(app.outdir, old + ".html"))
            still = [a for a in entry["anchors"] if a in ids]
            if still:
                raise ValueError(f"book_anchor_redirects: {still} are still ids of {old!r}; the "
                                 f"page would send them to {entry['to']!r}. Remove them from the "
                                 "list or from the page.")
    for old, new in app.config.book_redirects.items():
        if new not in found:
            raise ValueError(f"book_redirects: {old!r} -> {new!r}, but {new!r} is not a page of the book")
        if old in found:
            raise ValueError(f"book_redirects: {old!r} is still a page of the book; redirecting it "
                             "would overwrite it")
        target = posixpath.relpath(new, posixpath.dirname(old) or ".") + ".html"
        title = app.env.titles[new].astext() if new in app.env.titles else new
        dest = os.path.join(app.outdir, old + ".html")
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "w", encoding="utf-8") as f:
            f.write(PAGE.format(target=html.escape(target), title=html.escape(title),
                                target_js=repr(target)))


def setup(app):
    app.add_config_value("book_redirects", {}, "html")
    app.add_config_value("book_anchor_redirects", {}, "html")
    app.connect("env-updated", _check_anchor_redirects)
    app.connect("html-page-context", _anchor_redirects)
    app.connect("build-finished", _write_redirects)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
