"""A numbered result's title does not repeat its kind: sphinx-proof (and jupyterlab-myst) print
"Theorem 4.2 (TITLE)", so a title that starts "Theorem 1′ (...)" read "Theorem 4.2 (Theorem 1′
(...))". Name the result by what it says; the paper's number may follow, after a colon."""

from __future__ import annotations

import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIRECTIVE = re.compile(r"^(?::::+|```+)\{prf:(\w+)\}[ \t]*(.*)$", re.M)


def test_no_result_title_starts_with_its_kind():
    bad = []
    for md in sorted(glob.glob(os.path.join(ROOT, "chapters", "*.md"))):
        for m in DIRECTIVE.finditer(open(md, encoding="utf-8").read()):
            kind, title = m.group(1), m.group(2).strip()
            if kind != "proof" and title and re.match(rf"{kind}\b", title, re.I):
                bad.append(f"{os.path.basename(md)}: {{prf:{kind}}} {title}")
    assert not bad, "titles that repeat their kind (printed twice):\n" + "\n".join(bad)
