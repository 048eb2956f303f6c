"""The book speaks of its subject: no chapter and no reader's section of the README talks about how
the book was made, and no chapter paragraph runs over 150 words.

What is scanned
---------------
* **Chapters**: every ``chapters/*.md`` (numbered chapters, appendix, front and back matter), the
  whole file: prose, code cells and their comments, since a reader sees all of them.
* **README.md, the sections a reader needs** (:data:`README_READER_SECTIONS`): the opening, the
  quickstart, the commands, the Dask section and "The website as readers use it" with its
  subsections except the browser tests. The sections for whoever maintains the book (layout,
  editing a chapter, how the website is made offline, the browser tests) may speak of the build.

What fails
----------
* a phrase of :data:`MAKING_OF` (a machine the book was built on, a session, a build-time budget,
  a pin conflict, an issue number, a one-off measurement no reader can repeat, earlier versions);
  machine facts belong in the manifests, which chapters may print from;
* a **paragraph** of a chapter over :data:`MAX_WORDS` words, counted as ``wc -w`` counts
  (whitespace-separated tokens). A paragraph is a run of consecutive non-blank prose lines; code
  cells and code blocks, display math (``$$`` … ``$$``), tables, headings, labels, directive fences
  and a directive's option lines are not prose and end a paragraph, and so does a list item (each
  item is its own paragraph). Prose inside a directive (a theorem, a proof, an exercise, an
  admonition) counts.
"""

from __future__ import annotations

import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHAPTERS = sorted(glob.glob(os.path.join(ROOT, "chapters", "*.md")))
README = os.path.join(ROOT, "README.md")
MAX_WORDS = 150

#: Phrases that speak of the making of the book (regular expressions, matched case-insensitively).
#: Tuned against false positives: "session" alone is also the live server's session cookie and a
#: reader's live session, so only the making-of uses are listed.
MAKING_OF = [
    r"\bthis machine\b",
    r"\bbuild machine\b",
    r"\bthe book's machine\b",
    r"\bproject's (?:two-core |2-core )?machine\b",
    r"\b(?:two|2)[- ]core\b",
    r"\bshared (?:cpu|cores?)\b",
    r"\bcpu cores\b",
    r"\bbuild short\b",
    r"\bbuild[- ]?(?:time )?budget\b",
    r"\bto keep the (?:book's )?build\b",
    r"\b(?:this|our|the|a|one|each|every) session\b(?! (?:cookie|token))",
    r"\bsessions? of the project\b",
    r"\b(?:issue|pr|pull request)s? #?\d+",
    r"\bpin conflict",
    r"\bconflicting pins?\b",
    r"\b(?:cpu|gpu|pytorch|torch|jax)\W+wheel\b",
    r"\bwheel (?:unpacks|size)\b",
    r"\bmeasured once\b",
    r"\bwhile this was written\b",
    r"\bearlier versions?\b",
    r"\bprevious versions? of (?:the|this) book\b",
    r"\bhour of task time\b",
    r"\btask time\b",
    r"\bon the machine as it was\b",
]

#: README sections (their headings, exactly) that a reader needs; the text before the first ``##``
#: heading counts too. A subsection belongs to the section above it unless listed in
#: :data:`README_MAINTAINER_SECTIONS`.
README_READER_SECTIONS = [
    "Quickstart",
    "Other commands",
    "Running the experiments on a Dask cluster",
    "The website as readers use it",
    "Using `sattn` as a library",
]
README_MAINTAINER_SECTIONS = [
    "Layout",
    "Editing a chapter",
    "How the website works offline",
    "Browser tests (part of `make test`)",
    "Licence",
]

CODE_DIRECTIVES = {"code-cell", "code-block", "code", "sourcecode", "math", "raw", "eval-rst",
                   "mermaid", "literalinclude", "list-table", "csv-table", "table"}
FENCE = re.compile(r"^(\s*)(`{3,}|:{3,}|~{3,})\s*(.*)$")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def readme_reader_text(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of the README's reader sections."""
    out, keep = [], True
    stack: list[tuple[int, bool]] = []          # enclosing headings: (level, kept)
    fence = False
    for no, line in enumerate(text.split("\n"), start=1):
        if line.startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"^(#{2,6})\s+(.*?)\s*$", line)
        if m:
            title, level = m.group(2), len(m.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            if title in README_READER_SECTIONS:
                keep = True
            elif title in README_MAINTAINER_SECTIONS:
                keep = False
            elif level == 2:
                raise AssertionError(f"README section {title!r} is neither a reader's nor a "
                                     "maintainer's section: add it to one list of "
                                     "tests/notebooks/test_chapter_prose.py")
            else:
                keep = stack[-1][1] if stack else True
            stack.append((level, keep))
        if keep:
            out.append((no, line))
    return out


def making_of(lines: list[tuple[int, str]]) -> list[str]:
    """``'line N: phrase: text'`` for every phrase of :data:`MAKING_OF` found."""
    hits = []
    for no, line in lines:
        for pat in MAKING_OF:
            m = re.search(pat, line, flags=re.IGNORECASE)
            if m:
                hits.append(f"line {no}: {m.group(0)!r}: {line.strip()[:120]}")
    return hits


def paragraphs(text: str) -> list[tuple[int, int]]:
    """``(first line, word count)`` of every prose paragraph of a MyST chapter (see module doc)."""
    lines = text.split("\n")
    i = 0
    if lines and lines[0].strip() == "---":                      # front matter
        i = next(j for j in range(1, len(lines)) if lines[j].strip() == "---") + 1
    out: list[tuple[int, int]] = []
    stack: list[tuple[str, int, bool]] = []   # open fences: (char, length, is code)
    start, words = None, 0
    in_math = False
    options = False                           # just after a prose directive's opening fence

    def close():
        nonlocal start, words
        if start is not None:
            out.append((start, words))
        start, words = None, 0

    for no in range(i, len(lines)):
        line = lines[no]
        s = line.strip()
        code = bool(stack) and stack[-1][2]
        m = FENCE.match(line)
        if m and not (code and not (m.group(2)[0] == stack[-1][0]
                                    and len(m.group(2)) >= stack[-1][1] and not m.group(3))):
            close()
            options = False
            ch, n, info = m.group(2)[0], len(m.group(2)), m.group(3).strip()
            if stack and not info and ch == stack[-1][0] and n >= stack[-1][1]:
                stack.pop()
            else:
                name = re.match(r"\{([^}]*)\}", info)
                is_code = (name.group(1) in CODE_DIRECTIVES) if name else True
                stack.append((ch, n, is_code))
                options = not is_code
            continue
        if code:
            continue
        if options:
            if s == "---":                       # a YAML block of options
                options = "yaml" if options is True else False
                continue
            if options == "yaml" or re.match(r"^\s*:[\w-]+:", line):
                continue
            options = False
        if in_math:
            if s.startswith("$$"):
                in_math = False
            continue
        if s.startswith("$$"):
            close()
            in_math = "$$" not in s[2:]
            continue
        if (not s or s.startswith("#") or s.startswith("|") or s.startswith("+++")
                or re.match(r"^\(.*\)=$", s) or s.startswith("<!--")):
            close()
            continue
        if LIST_ITEM.match(line):
            close()
        if start is None:
            start = no + 1
        words += len(s.split())
    close()
    return out


@pytest.mark.parametrize("path", CHAPTERS, ids=os.path.basename)
def test_chapter_does_not_speak_of_its_making(path):
    with open(path, encoding="utf-8") as f:
        lines = list(enumerate(f.read().split("\n"), start=1))
    hits = making_of(lines)
    assert not hits, f"{os.path.relpath(path, ROOT)} speaks of how the book was made:\n  " + \
        "\n  ".join(hits)


def test_readme_reader_sections_do_not_speak_of_the_making():
    with open(README, encoding="utf-8") as f:
        hits = making_of(readme_reader_text(f.read()))
    assert not hits, "README.md (reader sections) speaks of how the book was made:\n  " + \
        "\n  ".join(hits)


@pytest.mark.parametrize("path", CHAPTERS, ids=os.path.basename)
def test_chapter_paragraphs_are_at_most_150_words(path):
    with open(path, encoding="utf-8") as f:
        long = [(no, n) for no, n in paragraphs(f.read()) if n > MAX_WORDS]
    assert not long, f"{os.path.relpath(path, ROOT)}: paragraphs over {MAX_WORDS} words " \
        "(first line, words): " + ", ".join(f"{no}: {n}" for no, n in long)


def test_the_checks_catch_what_they_should():
    """The phrase list and the paragraph rule on a small made-up chapter."""
    assert making_of([(1, "It fits on two shared CPU cores.")])
    assert making_of([(1, "as measured on this machine")])
    assert making_of([(1, "the attack of issue #16")])
    assert making_of([(1, "Earlier versions of Part I used Delta.")])
    assert making_of([(1, "to keep the book's build short")])
    assert not making_of([(1, "The request must carry the session cookie.")])
    assert not making_of([(1, "a browser that holds a live session")])
    assert not making_of([(1, "it answers with a session token for this tab")])
    assert not making_of([(1, "the `sattn` wheel and the chapters")])
    assert not making_of([(1, "the version is stamped at build time")])
    readme = "intro\n## Layout\nthis machine\n### Sub\nthis machine\n## Quickstart\nok\n"
    assert [no for no, _ in readme_reader_text(readme)] == [1, 6, 7, 8]
    long = " ".join(["word"] * 151)
    text = "\n".join([
        "---", "jupytext: x", "---", "", "# Title", "", long[:300], long[300:], "",
        "```{code-cell} ipython3", long, "```", "",
        ":::{prf:proof}", ":label: p", "", "short proof", ":::", "",
        "- item one " + " ".join(["w"] * 100), "- item two " + " ".join(["w"] * 100), "",
        "$$", long, "$$", "",
        "| a | b |", "",
    ])
    paras = paragraphs(text)
    assert [n for _, n in paras] == [151, 2, 103, 103], paras
