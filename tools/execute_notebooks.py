"""Re-create and execute the stored reference notebooks from their MyST sources.

Usage::

    python tools/execute_notebooks.py chapters/01_self_attention.md [more.md ...]
    python tools/execute_notebooks.py --all
    python tools/execute_notebooks.py --pin-only --all   # only pin the metadata (no execution)

For each ``chapters/NAME.md`` (the file people edit), jupytext writes ``chapters/NAME.ipynb``
with the same cells and nbclient executes it in the chapter's folder. The widget state nbclient
stores (what a static page needs to draw the widgets) is kept, with the kernel's random model ids
replaced by ids derived from the cells (:func:`stable_widget_ids`), so re-executing an unchanged
chapter gives no diff in the notebook. The ``.ipynb`` files are what the book is built from
(``tools/stored_notebooks.py``; the build executes nothing) and the references nbval compares.
The run time of each execution goes to ``chapters/executions.json`` (with the SHA-256 of the
notebook it wrote), which the status page shows.

Both files get the metadata that JupyterLab and jupytext write when a reader saves a chapter
(:func:`pin_metadata`): the kernelspec of ipykernel 7 ("Python 3 (ipykernel)") and the ``.md``
front matter as jupytext writes it (block YAML), so opening and saving a chapter in JupyterLab
does not rewrite tracked files.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import sys
import time

import jupytext
import nbclient
from jupyter_client.manager import AsyncKernelManager

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from sattn.presentation.lab import portable_notebook  # noqa: E402  (the checkout's sattn)
from tools import private_kernels  # noqa: E402

# Kernels inherit this: the chapters' small SVD/QR calls are several times slower with
# oversubscribed BLAS threads on a small machine (the Makefile sets the same default).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# The Makefile runs nbval and the book build with PYTHONHASHSEED=0; the stored outputs must come
# from the same string-hash order when this script is run directly (README, "Editing a chapter").
os.environ.setdefault("PYTHONHASHSEED", "0")


_FOLDER: list[str] = []


def _kernel_folder() -> str:
    """The private folder of this run's kernels (tools/private_kernels.py), made once."""
    if not _FOLDER:
        _FOLDER.append(private_kernels.private_folder())
    return _FOLDER[0]


def stable_cell_ids(nb) -> None:
    """Give every cell an id derived from its type and source, so ids survive re-execution.

    jupytext invents random ids when it reads a .md file; that alone would make every
    re-execution a diff. Repeated identical cells get a counter suffix.
    """
    seen: dict[str, int] = {}
    for cell in nb.cells:
        digest = hashlib.sha1(f"{cell.cell_type}\n{cell.source}".encode()).hexdigest()[:10]
        n = seen.get(digest, 0)
        seen[digest] = n + 1
        cell.id = digest if n == 0 else f"{digest}-{n}"


#: The kernelspec JupyterLab writes into a saved notebook (ipykernel 7's python3 kernel).
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def _sorted(value):
    """``value`` with the keys of every dict in sorted order, as nbformat writes an .ipynb."""
    if isinstance(value, dict):
        return type(value)((k, _sorted(value[k])) for k in sorted(value))
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def sort_cell_metadata(nb) -> None:
    """Order each cell's options as they come back from the .ipynb (nbformat sorts JSON keys).

    jupytext compares the .md with the text it would write from the .ipynb when the .ipynb is the
    newer file; with ``tags:`` before ``mystnb:`` in the .md but after it in the .ipynb, the two
    "differ" and JupyterLab refused to open the chapter. Written in sorted order, they are equal.
    """
    for cell in nb.cells:
        cell.metadata = _sorted(cell.metadata)


def pin_metadata(md_path: str) -> bool:
    """Rewrite ``md_path`` as jupytext writes it when JupyterLab saves it (block-YAML front matter,
    :data:`KERNELSPEC`, cell options in the sorted key order of the .ipynb); return True when the
    file changed. Cells keep their sources and metadata (checked here); only the YAML layout and
    order of cell options may change, as jupytext writes them from the stored .ipynb."""
    with open(md_path, encoding="utf-8") as f:
        before = f.read()
    nb = jupytext.reads(before, fmt="md:myst")
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    sort_cell_metadata(nb)
    after = jupytext.writes(nb, fmt="md:myst")
    # jupytext may re-wrap a cell's YAML options (long captions) on save; that is the form JupyterLab
    # writes, so it is accepted -- but only when every cell's source and metadata stay the same
    cells = lambda text: [(c.cell_type, c.source, c.metadata)  # noqa: E731
                          for c in jupytext.reads(text, fmt="md:myst").cells]
    if cells(after) != cells(before):
        raise SystemExit(f"{md_path}: jupytext would change its cells on save; not pinning it")
    if after != before:
        with open(md_path, "w", encoding="utf-8") as f:
            f.write(after)
    return after != before


def pin_notebook(ipynb_path: str) -> bool:
    """Set :data:`KERNELSPEC` in a stored notebook and make its outputs portable
    (:func:`stable_widget_ids`) without executing it; return True when the file changed."""
    if not os.path.exists(ipynb_path):
        return False
    with open(ipynb_path, encoding="utf-8") as f:
        before = f.read()
    nb = jupytext.reads(before, fmt="ipynb")
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    stable_widget_ids(nb)
    after = jupytext.writes(nb, fmt="ipynb").rstrip("\n") + "\n"   # as jupytext.write ends it
    if after != before:
        with open(ipynb_path, "w", encoding="utf-8") as f:
            f.write(after)
    return after != before


def stable_widget_ids(nb) -> None:
    """Make the outputs independent of the run and the machine (:func:`portable_notebook`, the
    same function JupyterLab's save hook runs): widget views get model ids derived from the cell
    id instead of random ones, the widget state is renamed to match (the book draws the widgets
    from it), and absolute folders leave tracebacks and warnings (``sattn/x.py``, not
    ``/home/.../sattn/x.py``)."""
    portable_notebook(nb)


def merge_streams(nb) -> None:
    """Join consecutive stdout (or stderr) outputs of a cell into one output.

    How a kernel splits printed text into messages depends on timing; merged, the stored
    notebook is the same on every execution (nbval compares the joined text either way).
    """
    for cell in nb.cells:
        merged = []
        for out in cell.get("outputs", []):
            if (out.get("output_type") == "stream" and merged
                    and merged[-1].get("output_type") == "stream"
                    and merged[-1].get("name") == out.get("name")):
                merged[-1]["text"] = merged[-1]["text"] + out["text"]
            else:
                merged.append(out)
        if "outputs" in cell:
            cell["outputs"] = merged


def execute(md_path: str) -> float:
    if not md_path.endswith(".md"):
        raise SystemExit(f"expected a MyST .md chapter, got {md_path!r}")
    if not os.path.exists(md_path):
        raise SystemExit(f"no such chapter source: {md_path}")
    pin_metadata(md_path)
    nb = jupytext.read(md_path)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    stable_cell_ids(nb)
    if not any(c.cell_type == "code" for c in nb.cells):
        raise SystemExit(f"{md_path} has no code cells; it is not a notebook chapter")
    t0 = time.perf_counter()
    client = nbclient.NotebookClient(
        nb,
        # ZeroMQ's ipc transport, sockets in a private folder: no kernel port that another user
        # of the machine could connect to (tools/private_kernels.py)
        kernel_manager_class=private_kernels.kernel_manager_class(_kernel_folder(),
                                                                  AsyncKernelManager),
        timeout=900,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": os.path.dirname(os.path.abspath(md_path))}},
    )
    client.execute()
    stable_widget_ids(nb)
    merge_streams(nb)
    out = md_path[:-3] + ".ipynb"
    jupytext.write(nb, out, fmt="ipynb")
    seconds = time.perf_counter() - t0
    record_execution(out, seconds)
    return seconds


#: Per stored notebook: the run time of the execution that wrote it, and the file's SHA-256.
EXECUTIONS = os.path.join("chapters", "executions.json")


def record_execution(ipynb_path: str, seconds: float, executions: str | None = None) -> None:
    """Note in ``executions`` (default: ``chapters/executions.json`` next to the notebook) that
    ``ipynb_path`` was written by an execution of ``seconds`` s (the status page shows it while the
    file's SHA-256 is unchanged)."""
    folder = os.path.dirname(os.path.abspath(ipynb_path))
    executions = executions or os.path.join(folder, os.path.basename(EXECUTIONS))
    key = "chapters/" + os.path.basename(ipynb_path)
    with open(ipynb_path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    data = {}
    if os.path.exists(executions):
        with open(executions, encoding="utf-8") as f:
            data = json.load(f)
    data[key] = {"seconds": round(seconds, 1), "sha256": sha}
    tmp = executions + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, executions)


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
    ap.add_argument("--pin-only", action="store_true",
                    help="only pin the kernelspec and front matter (no execution)")
    args = ap.parse_args(argv)
    paths = notebook_chapters() if args.all else args.paths
    if not paths:
        ap.error("give chapter .md files or --all")
    if args.pin_only:
        for p in paths:
            changed = [f for f, c in ((p, pin_metadata(p)), (p[:-3] + ".ipynb", pin_notebook(p[:-3] + ".ipynb"))) if c]
            print(f"pinned {', '.join(changed)}" if changed else f"{p}: already pinned", flush=True)
        return 0
    for p in paths:
        dt = execute(p)
        print(f"executed {p} -> {p[:-3]}.ipynb in {dt:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
