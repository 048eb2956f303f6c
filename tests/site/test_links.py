"""Internal link check of the built book (tools/linkcheck.py): no broken file link or anchor."""

from __future__ import annotations

import os
import shutil

import linkcheck


def test_no_broken_internal_links(html_dir):
    problems, internal, _ = linkcheck.check(html_dir)
    assert internal > 0
    assert not problems, f"{len(problems)} broken internal links:\n" + "\n".join(problems[:50])


def test_linkcheck_detects_a_broken_anchor(html_dir, tmp_path):
    """The checker can fail: a copy of one page with a dangling anchor and a missing file."""
    book = tmp_path / "html"
    os.makedirs(book)
    shutil.copy(os.path.join(html_dir, "index.html"), book / "index.html")
    (book / "page.html").write_text('<a href="index.html#nowhere">x</a><img src="missing.png">'
                                    '<a id="here" href="#here">ok</a>')
    problems, internal, _ = linkcheck.check(str(book))
    assert any("nowhere" in p for p in problems) and any("missing.png" in p for p in problems)
    assert not any("#here" in p for p in problems)
