"""The runnable kit: one zip with everything a reader needs to run the chapters on their machine.

``sattn-kit.zip`` (at the root of the built site; every chapter's run panel and the introduction
link it) unpacks into ``sattn-kit-VERSION/``::

    README.txt                      two lines: make a venv and install, then start JupyterLab
                                    (``python -m sattn lab chapters``: 127.0.0.1, the save hook
                                    of sattn.presentation.lab, --allow-root when run as root)
    requirements.txt                what running the chapters needs, pinned as in the book's own
    sattn-VERSION-py3-none-any.whl  the helper package, built from this checkout
    chapters/NN_name.md, .ipynb     every chapter (MyST source and executed notebook), intro.md,
                                    jupytext.toml (the .md is the source of each pair)
    data/                           the experiment results the chapters read (as ../data)
    benchmarks/*.json               the benchmark results chapter 7 reads (engines, Dask run)
    KIT.json                        version, commit and build date of the book it came from

The kit's ``requirements.txt`` is cut from the book's ``requirements.txt`` (the same pins; nothing
typed twice): the packages the chapters import plus JupyterLab and jupytext to open them; the
book's build and test tools (jupyter-book, pytest, playwright, ...) are left out.

Next to it, ``sattn-kit.json`` says its size and number of files (what the README points to).
It is written by ``make book`` (``tools/book_reader.py`` calls :func:`build_kit` when the HTML build
finishes) and tested by ``tests/site/test_kit.py``, which installs it in a fresh venv and runs a
chapter. By hand: ``python tools/make_kit.py _build/html``.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import book_version  # noqa: E402

ROOT = os.path.dirname(HERE)
KIT_NAME = "sattn-kit.zip"
#: What running the chapters needs (names as in requirements.txt). ``import sattn`` needs ml-dtypes
#: (sattn.precision) and dask[distributed] (the experiments' cluster path); ipykernel runs the
#: chapters, jupyterlab and jupytext open them (.ipynb, and .md as notebooks), jupyterlab-myst
#: renders their MyST markup; nbclient comes with jupyterlab.
#: What the chapters read besides themselves (relative to the book's root; folders are taken whole).
KIT_DATA = ["data", "benchmarks/results.json", "benchmarks/dask_local.json"]
KIT_PACKAGES = ["numpy", "scipy", "matplotlib", "ipywidgets", "ipykernel", "tqdm", "joblib",
                "threadpoolctl", "mpmath", "ml-dtypes", "dask", "jupytext", "jupyterlab",
                "jupyterlab-myst"]


def kit_requirements(book_requirements: str = os.path.join(ROOT, "requirements.txt")) -> str:
    """The lines of the book's requirements.txt that pin a package of KIT_PACKAGES."""
    pins = {}
    for line in open(book_requirements, encoding="utf-8"):
        m = re.match(r"^\s*([A-Za-z0-9_.\-]+)(\[[A-Za-z0-9_,\-]+\])?\s*==\s*([^\s#;]+)", line)
        if m:
            pins[m.group(1).lower().replace("_", "-")] = f"{m.group(1)}{m.group(2) or ''}=={m.group(3)}"
    missing = [p for p in KIT_PACKAGES if p not in pins]
    if missing:
        raise SystemExit(f"make_kit: requirements.txt pins none of {missing}")
    return ("# Running the chapters of the book (pins from the book's requirements.txt).\n"
            + "\n".join(pins[p] for p in KIT_PACKAGES) + "\n")


def notebook_chapters() -> list[str]:
    out = []
    for md in sorted(glob.glob(os.path.join(ROOT, "chapters", "*.md"))):
        nb = md[:-3] + ".ipynb"
        if os.path.exists(nb):
            out += [md, nb]
    return out


def data_files() -> list[str]:
    out = []
    for item in KIT_DATA:
        path = os.path.join(ROOT, item)
        if os.path.isfile(path):
            out.append(path)
            continue
        for dirpath, dirnames, files in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
            out += [os.path.join(dirpath, f) for f in sorted(files)
                    if not f.startswith(".") and not f.endswith((".lock", ".tmp", ".part"))]
    return out


def build_wheel(dest: str) -> str:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", dest, ROOT],
                   check=True, capture_output=True, text=True)
    wheels = glob.glob(os.path.join(dest, "sattn-*.whl"))
    if len(wheels) != 1:
        raise SystemExit(f"make_kit: expected one sattn wheel, got {wheels}")
    return wheels[0]


def build_kit(outdir: str) -> str:
    """Write ``outdir/sattn-kit.zip``; return its path."""
    info = book_version.info()
    top = f"sattn-kit-{info['version']}"
    out = os.path.join(outdir, KIT_NAME)
    with tempfile.TemporaryDirectory() as tmp:
        wheel = build_wheel(tmp)
        whl = os.path.basename(wheel)
        readme = (f"The Expressive Power of Self-Attention, version {info['version']}: the chapters "
                  "as notebooks. In this folder:\n"
                  f"python3 -m venv .venv && .venv/bin/pip install {whl} -r requirements.txt\n"
                  ".venv/bin/python -m sattn lab chapters   # JupyterLab on 127.0.0.1: open a chapter "
                  "(.ipynb; or .md: Open With > Notebook), then Run > Run All Cells\n")
        tmp_out = out + ".part"
        with zipfile.ZipFile(tmp_out, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr(f"{top}/README.txt", readme)
            z.writestr(f"{top}/requirements.txt", kit_requirements())
            z.writestr(f"{top}/KIT.json", json.dumps(info, indent=1) + "\n")
            z.write(wheel, f"{top}/{whl}")
            for path in notebook_chapters() + [os.path.join(ROOT, "chapters", name)
                                               for name in ("intro.md", "jupytext.toml")]:
                z.write(path, f"{top}/chapters/{os.path.basename(path)}")
            for p in data_files():
                z.write(p, f"{top}/{os.path.relpath(p, ROOT)}")
        os.replace(tmp_out, out)
    with zipfile.ZipFile(out) as z:
        files = len(z.namelist())
    facts = {"kit": KIT_NAME, "bytes": os.path.getsize(out),
             "megabytes": round(os.path.getsize(out) / 1e6, 2), "files": files, **info}
    with open(os.path.splitext(out)[0] + ".json", "w", encoding="utf-8") as f:
        json.dump(facts, f, indent=1)
        f.write("\n")
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    outdir = argv[0] if argv else os.path.join(ROOT, "_build", "html")
    os.makedirs(outdir, exist_ok=True)
    path = build_kit(outdir)
    print(f"kit: {path} ({os.path.getsize(path) / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
