"""Re-create and execute the stored reference notebooks from their MyST sources.

Usage::

    python tools/execute_notebooks.py chapters/01_self_attention.md [more.md ...]
    python tools/execute_notebooks.py --all

For each ``chapters/NAME.md`` (the file people edit), jupytext writes ``chapters/NAME.ipynb``
with the same cells, nbclient executes it in the chapter's folder, and the widget-state blob
(random model ids) is dropped, so re-executing an unchanged chapter gives no diff. The book itself
is built from the ``.md`` files; the ``.ipynb`` files are the executed references nbval compares.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

import jupytext
import nbclient
import nbformat


def execute(md_path: str) -> float:
    if not md_path.endswith(".md"):
        raise SystemExit(f"expected a MyST .md chapter, got {md_path!r}")
    if not os.path.exists(md_path):
        raise SystemExit(f"no such chapter source: {md_path}")
    nb = jupytext.read(md_path)
    if not any(c.cell_type == "code" for c in nb.cells):
        raise SystemExit(f"{md_path} has no code cells; it is not a notebook chapter")
    t0 = time.perf_counter()
    client = nbclient.NotebookClient(
        nb,
        timeout=900,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": os.path.dirname(os.path.abspath(md_path))}},
    )
    client.execute()
    nb.metadata.pop("widgets", None)
    out = md_path[:-3] + ".ipynb"
    jupytext.write(nb, out, fmt="ipynb")
    return time.perf_counter() - t0


def notebook_chapters() -> list[str]:
    """Every chapter source that is paired with an .ipynb (has a jupytext header)."""
    paths = []
    for md in sorted(glob.glob("chapters/*.md")):
        with open(md, encoding="utf-8") as fh:
            head = fh.read(400)
        if "jupytext:" in head:
            paths.append(md)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help="chapter .md files")
    ap.add_argument("--all", action="store_true", help="every paired chapter")
    args = ap.parse_args(argv)
    paths = notebook_chapters() if args.all else args.paths
    if not paths:
        ap.error("give chapter .md files or --all")
    for p in paths:
        dt = execute(p)
        print(f"executed {p} -> {p[:-3]}.ipynb in {dt:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
