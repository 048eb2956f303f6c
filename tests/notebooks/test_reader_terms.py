"""What a reader meets in the chapters' prose: no project history, no undefined jargon.

* **No commit hash and no repository path in chapter prose.** The markdown cells of every
  ``chapters/*.md`` (not code cells, and not the fenced command blocks inside markdown, which show
  what to type) hold no string that looks like a commit hash (7 to 40 hexadecimal digits with both
  a letter and a digit) and no path into the repository (``sattn/…``, ``tests/…``, ``data/…``,
  ``tools/…``, ``benchmarks/…``, ``chapters/…``, ``docs/…``). Two back-matter pages are about the
  book's making by design and are exempt: the change log (:data:`EXEMPT`) names the versions it
  describes, and the status page says how its figures are produced.
* **Every setting code is decoded.** The codes of the experiments' settings (``k1-g1-e3-0.9``)
  are listed with their parameters in the glossary of the notation page, and a chapter whose prose
  or stored outputs show a code links to that glossary.
"""

from __future__ import annotations

import glob
import json
import os
import re

import jupytext
import pytest

import sattn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHAPTERS = sorted(glob.glob(os.path.join(ROOT, "chapters", "*.md")))
#: pages about the making of the book by design (see the module docstring)
EXEMPT = {"changes.md", "status.md"}
HASH = re.compile(r"(?<![\w/.#-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w-])")
REPO_PATH = re.compile(r"(?<![\w.-])(?:sattn|tests|tools|data|benchmarks|chapters|docs)/[\w./*-]*")
FENCE = re.compile(r"^\s*(`{3,}|~{3,}|:{3,})(.*)$")
SETTING = re.compile(r"\bk\d+-g[\d.]+-e[\d.]+-[\d.]+\b")
GLOSSARY = os.path.join(ROOT, "chapters", "notation.md")


def without_code_blocks(markdown: str) -> str:
    """The markdown without its fenced code blocks (a command to type); the prose inside a MyST
    directive (a fence whose info string starts with ``{``, e.g. an admonition) is kept."""
    kept, stack = [], []  # stack of (fence, is_code)
    for line in markdown.splitlines():
        m = FENCE.match(line)
        if m:
            fence, info = m.group(1), m.group(2).strip()
            if stack and not info and fence[0] == stack[-1][0][0] and len(fence) >= len(stack[-1][0]):
                stack.pop()
                continue
            if not (stack and stack[-1][1]):  # a fence inside a code block is text of the block
                stack.append((fence, not info.startswith("{")))
                continue
        if not any(is_code for _, is_code in stack):
            kept.append(line)
    return "\n".join(kept)


def prose_problems(markdown: str) -> list[str]:
    """Commit-hash-like strings and repository paths in a markdown cell's prose."""
    text = without_code_blocks(markdown)
    # MyST labels and targets are names, not prose: (label)= and {ref}`label`
    text = re.sub(r"^\([\w-]+\)=\s*$", "", text, flags=re.M)
    return ([f"commit-like {m.group()!r}" for m in HASH.finditer(text)]
            + [f"repository path {m.group()!r}" for m in REPO_PATH.finditer(text)])


def _markdown_cells(md: str) -> list[str]:
    return [c.source for c in jupytext.read(md).cells if c.cell_type == "markdown"]


@pytest.mark.parametrize("md", [c for c in CHAPTERS if os.path.basename(c) not in EXEMPT],
                         ids=os.path.basename)
def test_no_commit_hash_or_repository_path_in_prose(md):
    bad = [p for cell in _markdown_cells(md) for p in prose_problems(cell)]
    assert not bad, (f"{os.path.basename(md)}: the prose speaks of the repository, not the subject "
                     "(say what the file holds, not where it lies):\n  " + "\n  ".join(bad))


def test_the_scan_sees_hashes_and_paths():
    assert prose_problems("registered at commit d295ebb in `sattn/experiments/acceptance.py`") == [
        "commit-like 'd295ebb'", "repository path 'sattn/experiments/acceptance.py'"]
    assert prose_problems("see `tests/package/test_x.py` and data/fig3.csv") == [
        "repository path 'tests/package/test_x.py'", "repository path 'data/fig3.csv'"]
    # not a hash: a word, a number, a decimal; a command block is what to type, not prose
    assert prose_problems("the cafe sold 1234567 items, 0.1234567 each, in the faded room") == []
    assert prose_problems("```bash\npython -m sattn bench  # writes benchmarks/results.json\n```") == []
    # prose inside a directive is prose
    assert prose_problems(":::{admonition} Registered\nat commit d295ebb\n:::\n") == [
        "commit-like 'd295ebb'"]
    assert prose_problems("```{note}\nsee data/x.csv\n```\n") == ["repository path 'data/x.csv'"]


def _glossary() -> dict[str, tuple]:
    rows = re.findall(r"^\| `(k[^`]+)` \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$",
                      open(GLOSSARY, encoding="utf-8").read(), re.M)
    return {code: tuple(float(x) for x in vals) for code, *vals in rows}


def test_the_glossary_decodes_every_setting():
    glossary = _glossary()
    assert "(setting-codes)=" in open(GLOSSARY, encoding="utf-8").read()
    assert set(glossary) == set(sattn.SETUPS), sorted(set(glossary) ^ set(sattn.SETUPS))
    for code, s in sattn.SETUPS.items():
        assert glossary[code] == (s.k, s.gamma, s.eps1, s.eps2), code


def _shown_text(md: str) -> str:
    """The chapter's prose and the text of its stored outputs."""
    text = "\n".join(_markdown_cells(md))
    ipynb = md[:-3] + ".ipynb"
    if os.path.exists(ipynb):
        for cell in json.load(open(ipynb, encoding="utf-8"))["cells"]:
            for out in cell.get("outputs", []):
                text += "".join(out.get("text", ""))
                for mime in ("text/plain", "text/html", "text/markdown"):
                    text += "".join(out.get("data", {}).get(mime, ""))
    return text


@pytest.mark.parametrize("md", [c for c in CHAPTERS if c != GLOSSARY], ids=os.path.basename)
def test_a_chapter_showing_setting_codes_links_the_glossary(md):
    codes = sorted(set(SETTING.findall(_shown_text(md))))
    if not codes:
        return
    prose = "\n".join(_markdown_cells(md))
    assert "setting-codes" in prose, (
        f"{os.path.basename(md)} shows setting codes {codes[:4]} but does not link their glossary: "
        "add {ref}`setting codes <setting-codes>` where the first one appears")
