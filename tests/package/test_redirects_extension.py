"""tools/redirects.py in a real Sphinx build of a two-page project.

The browser tests (tests/site/test_redirects.py) check the book's own redirects; these check the
extension's rules on a project small enough to build in a second: a moved id is forwarded by a
script that runs in the old page's head, and a build whose moved id is still an id of the old
page fails with a message naming it.
"""

from __future__ import annotations

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import redirects  # noqa: E402

sphinx_application = pytest.importorskip("sphinx.application")


def build(tmp_path, old_text: str):
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {os.path.join(ROOT, 'tools')!r})\n"
        "extensions = ['redirects']\n"
        "book_anchor_redirects = {'old': {'to': 'new', 'anchors': ['moved-part']}}\n",
        encoding="utf-8")
    (src / "index.rst").write_text("Home\n====\n\n.. toctree::\n\n   old\n   new\n", encoding="utf-8")
    (src / "old.rst").write_text(old_text, encoding="utf-8")
    (src / "new.rst").write_text("New\n===\n\n.. _moved-part:\n\nMoved part\n----------\n\nText.\n",
                                 encoding="utf-8")
    app = sphinx_application.Sphinx(str(src), str(src), str(tmp_path / "html"),
                                    str(tmp_path / "doctrees"), "html", status=None,
                                    warning=None, freshenv=True)
    app.build()
    return tmp_path / "html"


def test_the_old_page_forwards_a_moved_id_from_its_head(tmp_path):
    out = build(tmp_path, "Old\n===\n\nSummary\n-------\n\nWhat stayed.\n")
    page = (out / "old.html").read_text(encoding="utf-8")
    script = redirects.anchor_script("old", "new", ["moved-part"])
    assert script in page
    # it runs where it is read (no wait for the rest of the page) and on every change of fragment
    assert page.index(script) < page.index("<body")
    assert "DOMContentLoaded" not in script and "go();" in script
    assert 'addEventListener("hashchange", go)' in script
    assert 'id="moved-part"' in (out / "new.html").read_text(encoding="utf-8")


def test_a_moved_id_still_on_the_old_page_fails_the_build(tmp_path):
    errors = pytest.importorskip("sphinx.errors")
    with pytest.raises(errors.ExtensionError, match=r"\['moved-part'\] are still ids of 'old'"):
        build(tmp_path, "Old\n===\n\n.. _moved-part:\n\nMoved part\n----------\n\nStill here.\n")
