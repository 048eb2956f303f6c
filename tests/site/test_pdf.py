"""The whole book as one PDF (`make pdf`: the one-page build printed by the test browser). The test
opens the PDF with pypdf: page count, outline, no raw TeX, no unresolved reference or raw MyST
markup, numbered theorems and equations, the bibliography, widgets labelled as printed in their
default view, solutions expanded, no run panel or live controls, the version on every page."""

from __future__ import annotations

import os
import re
import unicodedata

import pytest

from conftest import ROOT

import book_version  # noqa: E402  (tools/)

PDF = os.environ.get("BOOK_PDF") or os.path.join(ROOT, "_build", "pdf", "sattn-book.pdf")
SINGLE = os.path.join(os.path.dirname(os.path.dirname(PDF)), "singlehtml", "book.html")
RAW_TEX = re.compile(r"\\(frac|mathbb|mathrm|mathcal|sum|prod|sqrt|alpha|varepsilon|begin|end|"
                     r"left|right|top|cdot|operatorname|le|ge)\b|\\\(|\\\)|\\\[|\\\]|\$\$")
#: printed code (plot labels with TeX in strings, comments) may hold backslashes legitimately
CODE_LINE = re.compile(r"""print\(|\b[rf]["']|["']\$|=\s*["']|#|\bdef |\bimport\b|\.set_\w+\(""")
RAW_MYST = re.compile(r"\{(prf:\w+|cite:\w+|cite|ref|eq|numref|doc|py:\w+|code-cell|exercise|"
                      r"solution-start|solution-end)\}|:label:|```")


@pytest.fixture(scope="module")
def pdf_pages():
    import pypdf  # a hard import: a missing pypdf must fail, not skip
    if not os.path.exists(PDF):
        pytest.fail(f"no PDF at {PDF}: run 'make pdf' (make test does) or set BOOK_PDF")
    reader = pypdf.PdfReader(PDF)
    # NFKC: the PDF's text has typographic ligatures ("ﬁ" in "Deﬁnition")
    return reader, [unicodedata.normalize("NFKC", p.extract_text() or "") for p in reader.pages]


def test_page_count_and_outline(pdf_pages):
    reader, pages = pdf_pages
    assert 150 <= len(pages) <= 800, f"{len(pages)} pages"
    assert reader.outline, "the PDF has no outline (bookmarks)"
    assert all(p.strip() for p in pages), "empty pages: " + str([i + 1 for i, p in enumerate(pages)
                                                                 if not p.strip()][:10])


def test_no_raw_tex_or_markup_or_broken_reference(pdf_pages):
    _, pages = pdf_pages
    problems = []
    for i, text in enumerate(pages, 1):
        # code listings may legitimately contain backslashes and markup: skip lines with code
        for line in text.splitlines():
            if RAW_TEX.search(line) and not CODE_LINE.search(line):
                problems.append(f"page {i}: raw TeX: {line.strip()[:100]}")
            if RAW_MYST.search(line):
                problems.append(f"page {i}: raw MyST: {line.strip()[:100]}")
            if "???" in line:
                problems.append(f"page {i}: unresolved reference: {line.strip()[:100]}")
    assert not problems, "\n".join(problems[:30])


def _single_page() -> str:
    if not os.path.exists(SINGLE):
        pytest.fail(f"no one-page build at {SINGLE}: run 'make pdf'")
    return open(SINGLE, encoding="utf-8").read()


def _flat(text: str) -> str:
    """Whitespace collapsed and hyphens dropped (a hyphen at a line end may be the word's own)."""
    return re.sub(r"\s+", " ", re.sub(r"-\s*\n\s*", "", text)).replace("-", "").replace("’", "'")


def test_numbered_results_equations_and_bibliography(pdf_pages):
    _, pages = pdf_pages
    text = "\n".join(pages)
    for kind in ("Definition", "Theorem", "Lemma", "Proposition"):
        assert re.search(rf"{kind} \d+\.\d+", text), f"no numbered {kind}"
    numbers = set(re.findall(r'class="eqno">\((\d+\.\d+)\)', _single_page()))
    assert len(numbers) >= 20, f"only {len(numbers)} numbered equations in the book?"
    missing = {n for n in numbers if f"({n})" not in text}
    assert not missing, f"equation numbers not in the PDF: {sorted(missing)}"
    for key in ("Likhosherstov", "Kajitsuka", "Vaswani", "Johnson"):
        assert key in text, f"bibliography entry {key} missing"
    assert re.search(r"Bibliography", text)


def test_widgets_say_they_are_printed_in_their_default_view(pdf_pages):
    _, pages = pdf_pages
    notes = sum(p.count("printed in its default view") for p in pages)
    single = open(SINGLE, encoding="utf-8").read() if os.path.exists(SINGLE) else ""
    views = single.count('type="application/vnd.jupyter.widget-view+json"')
    assert notes >= 1 and (not views or notes == views), (notes, views)


def test_print_hides_controls_and_expands_solutions(pdf_pages):
    _, pages = pdf_pages
    text = "\n".join(pages)
    assert "Run this chapter yourself" not in text, "the run panel is printed"
    assert "Run live" not in text, "live controls are printed"
    assert "Show code cell" not in text, "toggle buttons are printed"
    # Solutions are dropdowns on the website: printed, each one's text must be there. For each
    # dropdown, three or more plain words of its first paragraph (math left out) are looked up.
    flat = _flat(text)
    snippets = []
    # (sphinx-exercise writes "solution dropdown admonition" with a linked title and a section)
    for body in re.findall(r'<div class="(?:solution )?dropdown admonition"[^>]*>\s*'
                           r'<p class="admonition-title">.*?</p>\s*(?:<section[^>]*>\s*)?'
                           r"<p>(.*?)</p>", _single_page(), re.S):
        plain = re.sub(r'<span class="math[^"]*">.*?</span>', " | ", body, flags=re.S)
        plain = re.sub(r"<[^>]+>", " ", plain).replace("’", "'")
        runs = [r.split() for r in re.split(r"[|;:,.()]", plain)]
        best = max(runs, key=len, default=[])
        if len(best) >= 3:
            snippets.append(" ".join(best[:5]))
    assert len(snippets) >= 10, f"only {len(snippets)} solutions found in the one-page build"
    missing = [sn for sn in snippets if _flat(sn) not in flat]
    assert not missing, f"{len(missing)} of {len(snippets)} solutions not printed: {missing[:5]}"


def test_every_page_carries_the_version(pdf_pages):
    _, pages = pdf_pages
    v = book_version.version()
    missing = [i + 1 for i, p in enumerate(pages) if f"version {v}" not in p]
    assert not missing, f"pages without 'version {v}' in the footer: {missing[:10]}"


# ---- nothing cut at the right edge -------------------------------------------------------------

_FOOTER = re.compile(r"^.*version \S+ · commit .*$", re.M)
_HIDDEN = re.compile(r'<details class="[^"]*\bhide\b[^"]*">.*?</details>', re.S)
_PRE = re.compile(r"<pre[^>]*>(.*?)</pre>", re.S)


def _squeeze(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).split())


def _printed_lines():
    """Every line of every monospaced box the one-page build prints: code cells (but those whose
    input the chapter hides), printed outputs, tracebacks, listings."""
    import html as html_mod
    page = _HIDDEN.sub("", _single_page())
    out = []
    for block in _PRE.findall(page):
        text = html_mod.unescape(re.sub(r"<[^>]+>", "", block))
        out += [line for line in text.splitlines() if line.strip()]
    return out


def test_no_code_or_output_line_is_cut(pdf_pages):
    """Each line of code and printed output, whitespace aside, is in the PDF's text layer: a line
    cut at the right edge of its box (924 of 3,499 code lines were) is missing its end there."""
    _, pages = pdf_pages
    text = _squeeze("\n".join(_FOOTER.sub("", p) for p in pages))
    lines = _printed_lines()
    assert len(lines) > 1000, f"only {len(lines)} printed lines found in the one-page build"
    squeezed = [_squeeze(_FOOTER.sub("", p)) for p in pages]

    def across_a_page_break(line):
        """A line wrapped at the foot of a page continues on the next one, and the text layer may
        put that page's other text first: its head must end one page and its tail be on the next."""
        sq = _squeeze(line)
        return any(page.endswith(sq[:k]) and sq[k:] in nxt
                   for page, nxt in zip(squeezed, squeezed[1:]) for k in range(1, len(sq)))

    missing = [line for line in lines if _squeeze(line) not in text and not across_a_page_break(line)]
    assert not missing, (f"{len(missing)} of {len(lines)} lines are not whole in the PDF (cut at the "
                         "right edge?):\n" + "\n".join(f"  {line.strip()[:110]}" for line in missing[:25]))


def _numbered_chapters():
    """The chapters of the numbered parts of _toc.yml."""
    import yaml
    with open(os.path.join(ROOT, "_toc.yml"), encoding="utf-8") as f:
        toc = yaml.safe_load(f)
    return [c["file"] for part in toc["parts"] if part.get("numbered") for c in part["chapters"]]


def test_outline_is_clean(pdf_pages):
    """One bookmark per chapter and section, each title once, no number printed twice."""
    reader, _ = pdf_pages
    titles = []

    def walk(items, depth=0):
        for it in items:
            if isinstance(it, list):
                walk(it, depth + 1)
            else:
                titles.append((depth, it.title))
    walk(reader.outline)
    top = [t for d, t in titles if d == 0]
    problems = [t for _, t in titles if re.match(r"^\s*(\d+(\.\d+)*\.)\s+\1", t)]
    problems += [f"{t} (twice at the top level)" for t in set(top) if top.count(t) > 1]
    assert not problems, f"garbled outline entries: {problems[:10]}"
    for chapter in ("Notation", "Bibliography", "API reference"):
        assert any(chapter in t for t in top), f"{chapter} is not a top-level bookmark: {top}"
    assert len([t for t in top if re.match(r"\d+\. ", t)]) == len(_numbered_chapters()), top


def test_every_chapter_starts_on_a_new_page(pdf_pages):
    """Each top-level bookmark (the 16 chapters, the notation, the back matter) points to a page
    whose text begins with its title (within its first lines: the text layer of the bibliography
    lists its labels first): the chapter starts that page, and the outline is right."""
    reader, pages = pdf_pages
    bad = []
    for it in reader.outline:
        if isinstance(it, list) or it.title == "The Expressive Power of Self-Attention":
            continue
        n = reader.get_destination_page_number(it)
        if _squeeze(it.title) not in _squeeze(pages[n])[:400]:
            bad.append(f"{it.title!r} -> page {n + 1}, which begins {pages[n].strip()[:60]!r}")
    assert not bad, "chapters that do not start their page (or wrong bookmarks):\n" + "\n".join(bad)


def test_the_api_reference_is_left_to_the_website(pdf_pages):
    """The API chapter keeps its bookmark and a note; its entries are not printed."""
    reader, pages = pdf_pages
    text = "\n".join(pages)
    assert "reference of the sattn package" in text
    top = [(it.title, reader.get_destination_page_number(it)) for it in reader.outline
           if not isinstance(it, list)]
    i = [t for t, _ in top].index("API reference")
    assert top[i + 1][1] - top[i][1] <= 1, f"the API reference takes pages {top[i][1] + 1}-{top[i + 1][1]}"


def test_readme_takes_no_pdf_or_kit_numbers_from_prose():
    """Pages and sizes of the PDF and the kit come from the build (make pdf and make book print
    them and write _build/pdf/sattn-book.json and _build/html/sattn-kit.json), not the README."""
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    sections = re.findall(r"^### (?:The book as a PDF|The runnable kit).*?(?=^##)", readme, re.M | re.S)
    assert len(sections) == 2
    for s in sections:
        s = re.sub(r"\nLaTeX was measured.*?\n\n", "\n", s, flags=re.S)  # sizes of TeX packages
        hits = re.findall(r"\b\d[\d,.]*\s*(?:pages|MB)\b", s)
        assert not hits, f"README states PDF/kit numbers by hand: {hits}"


def test_build_facts_of_the_pdf():
    import json
    facts = json.load(open(os.path.splitext(PDF)[0] + ".json", encoding="utf-8"))
    import pypdf
    assert facts["pages"] == len(pypdf.PdfReader(PDF).pages)
    assert facts["bytes"] == os.path.getsize(PDF)
