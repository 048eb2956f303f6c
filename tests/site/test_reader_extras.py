"""What a reader takes away and sees beyond the page itself (issue #14): the version line on every
page, the Changes and corrections page, CITATION.cff in step with the one version source, and hover
previews of references with typeset math (sphinx-tippy, tippy.js vendored from npm)."""

from __future__ import annotations

import os
import re

import pytest

from conftest import ROOT, built_pages

import book_version  # noqa: E402  (tools/, put on sys.path by conftest.py)

VERSION_LINE = re.compile(r'class="book-version-number">([^<]+)</span> · commit '
                          r'<code class="book-version-commit">([^<]+)</code> · built '
                          r'<span class="book-version-date">(\d{4}-\d{2}-\d{2})</span>')


def _text(html_dir, name):
    return open(os.path.join(html_dir, name), encoding="utf-8").read()


def test_citation_cff_has_the_book_version():
    """CITATION.cff is not a second version source: it must say what pyproject.toml says."""
    cff = open(os.path.join(ROOT, "CITATION.cff"), encoding="utf-8").read()
    m = re.search(r'^version:\s*"?([^"\n]+)"?\s*$', cff, re.M)
    assert m, "CITATION.cff has no version"
    assert m.group(1) == book_version.version(), (
        f"CITATION.cff says {m.group(1)}, pyproject.toml says {book_version.version()}")


def test_every_page_footer_shows_version_commit_and_date(html_dir):
    want = book_version.version()
    pages = [p for p in built_pages(html_dir) if "http-equiv=\"refresh\"" not in _text(html_dir, p).lower()]
    assert len(pages) > 10
    commits = set()
    for name in pages:
        text = _text(html_dir, name)
        footer = text[text.find('class="extra_footer"'):]
        m = VERSION_LINE.search(footer)
        assert m, f"{name}: no version line in the footer"
        assert m.group(1) == want, f"{name}: footer says version {m.group(1)}, the book is {want}"
        commits.add(m.group(2))
        if name != "chapters/changes.html":
            assert "changes.html" in footer[:2000], f"{name}: footer does not link the changes page"
    assert len(commits) == 1, f"pages of one build show different commits: {commits}"
    commit = commits.pop()
    assert re.fullmatch(r"[0-9a-f]{7,}( \+ local changes)?", commit) or commit == book_version.NO_GIT


@pytest.mark.parametrize("page", ["chapters/status.html", "chapters/cite.html",
                                  "chapters/changes.html", "chapters/intro.html"])
def test_status_cite_changes_pages_show_the_version(html_dir, page):
    body = _text(html_dir, page)
    main = body[body.find("<main"):body.find('class="extra_footer"')]
    m = VERSION_LINE.search(main)
    assert m and m.group(1) == book_version.version(), f"{page}: no version line in the page body"


def test_cite_page_bibtex_carries_the_version(html_dir):
    text = re.sub(r"<[^>]+>", "", _text(html_dir, "chapters/cite.html"))
    assert re.search(r"version\s*=\s*\{" + re.escape(book_version.version()) + r"\}", text)


def test_changes_page_has_a_section_for_this_version(html_dir):
    text = _text(html_dir, "chapters/changes.html")
    heads = re.findall(r"<h2>([^<]+)", text)
    assert any(h.split()[0] == book_version.version() for h in heads), heads
    # entries name commits; the page links every chapter it corrects
    assert len(re.findall(r"<code[^>]*><span class=\"pre\">[0-9a-f]{7}</span></code>", text)) >= 20


def test_commit_outside_git_is_said_plainly(tmp_path, monkeypatch):
    monkeypatch.delenv("BOOK_COMMIT", raising=False)
    assert book_version.commit(str(tmp_path)) == book_version.NO_GIT


# ---------------------------------------------------------------------------------------------
# Hover previews
# ---------------------------------------------------------------------------------------------

PREVIEW_PAGE = "chapters/05_why_it_works.html"


@pytest.fixture(scope="module")
def preview_page(browser_page):
    """The shared browser page (tests/site/conftest.py) on :data:`PREVIEW_PAGE`, typeset."""
    base, page, errors, blocked = browser_page
    page.goto(base + PREVIEW_PAGE, wait_until="load")
    page.wait_for_function("() => window.MathJax && MathJax.typesetPromise && window.tippy")
    page.wait_for_function("() => document.querySelector('article a[data-tippy-content], "
                           "article a[aria-expanded]') || document.querySelectorAll('a').length")
    return page, errors, blocked


def _hover_preview(page, selector: str) -> dict:
    link = page.locator(selector).first
    assert link.count() if hasattr(link, "count") else True
    page.mouse.move(0, 0)
    page.wait_for_timeout(150)
    # the previous preview must be gone, or `.last` below could read it instead of the new one
    page.wait_for_function("() => !document.querySelector('.tippy-box')", timeout=10000)
    link.scroll_into_view_if_needed()
    link.hover()
    box = page.locator(".tippy-box[data-theme~='book']").last
    box.wait_for(state="visible", timeout=10000)
    page.wait_for_function(
        """() => { const b = Array.from(document.querySelectorAll(".tippy-box")).pop();
                   return b && (b.querySelector("mjx-container") || !/\\\\\\(|\\\\\\[/.test(b.textContent)); }""",
        timeout=10000)
    return box.evaluate("""b => ({ text: b.innerText, math: b.querySelectorAll("mjx-container").length,
                                   raw: /\\\\\\(|\\\\\\[|\\\\frac|\\\\mathbb/.test(b.textContent),
                                   width: b.getBoundingClientRect().width })""")


@pytest.mark.parametrize("kind,selector,expect", [
    ("lemma", "article a.reference.internal[href='#why-lem-jl']", r"^Lemma \d+\.\d+"),
    ("equation", "article a.reference.internal[href^='#equation-']", None),
    ("citation", "article a.reference.internal[href*='bibliography.html#']", r"\d{4}"),
])
def test_hovering_a_reference_shows_a_typeset_preview(preview_page, kind, selector, expect):
    page, errors, blocked = preview_page
    if page.locator(selector).count() == 0:
        pytest.fail(f"{PREVIEW_PAGE} has no {kind} reference ({selector})")
    info = _hover_preview(page, selector)
    assert info["text"].strip(), f"{kind} preview is empty"
    assert not info["raw"], f"{kind} preview shows raw TeX: {info['text'][:200]}"
    if kind in ("lemma", "equation"):
        assert info["math"] > 0, f"{kind} preview has no typeset math: {info['text'][:200]}"
    if expect:
        assert re.search(expect, info["text"].strip(), re.M), info["text"][:200]
    assert not errors and not blocked, (errors, blocked)
