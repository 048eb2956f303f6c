"""Sphinx extension: redirect pages for URLs the book used to have.

When chapter files are renamed, readers' bookmarks and other sites' links keep the old address.
For every entry of ``book_redirects`` (old docname -> new docname, set in ``_config.yml``) this
writes ``<old>.html`` into the built site: a small page that sends the browser to the new page,
keeping the ``#fragment`` (so a link to a theorem still lands on it), with a plain link for readers
without JavaScript. When sections move from one page to another, ``book_anchor_redirects`` sends
a link to a moved ``#fragment`` of the old page on to the new page. Redirect pages carry ``<meta name="book-redirect">`` so that the site tests can
tell them from the book's pages.
"""

from __future__ import annotations

import html
import os
import posixpath

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


def _write_redirects(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    found = set(app.env.found_docs)
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


ANCHOR_SCRIPT = """<script>(function () {{
  var moved = {moved_js};
  var h = decodeURIComponent(location.hash.slice(1));
  if (h && moved.indexOf(h) >= 0) {{ location.replace({target_js} + "#" + h); }}
}})();</script>"""


def _anchor_redirects(app, pagename, templatename, context, doctree):
    """On a page whose sections moved to another page (``book_anchor_redirects``: page ->
    ``{"target": new page, "anchors": [ids]}``), a link to a moved ``#id`` goes on to the new
    page at that id; every other fragment stays."""
    spec = app.config.book_anchor_redirects.get(pagename)
    if not spec:
        return
    found = set(app.env.found_docs)
    if spec["target"] not in found:
        raise ValueError(f"book_anchor_redirects: {pagename!r} -> {spec['target']!r}, but "
                         f"{spec['target']!r} is not a page of the book")
    target = posixpath.relpath(spec["target"], posixpath.dirname(pagename) or ".") + ".html"
    script = ANCHOR_SCRIPT.format(moved_js=repr(list(spec["anchors"])), target_js=repr(target))
    context["metatags"] = context.get("metatags", "") + script


def setup(app):
    app.add_config_value("book_redirects", {}, "html")
    app.add_config_value("book_anchor_redirects", {}, "html")
    app.connect("build-finished", _write_redirects)
    app.connect("html-page-context", _anchor_redirects)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
