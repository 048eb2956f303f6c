"""The chapters in JupyterLab: ``python -m sattn lab`` and what a save writes.

A chapter is a pair: ``NN_name.md`` (MyST, the source) and ``NN_name.ipynb`` (the executed
notebook), paired by jupytext (``formats: ipynb,md:myst`` in the front matter). Saving either one in
JupyterLab writes both. Three things keep the pair a faithful copy of the book after a save:

* ``chapters/jupytext.toml`` sets ``outdated_text_notebook_margin = inf``: the ``.md`` is always
  the source of the cells, even when the ``.ipynb`` is newer (a save, a checkout, a touch), so
  jupytext never refuses to open a chapter;
* the stored ``.md`` and ``.ipynb`` are written exactly as jupytext writes them (cell options in
  the sorted key order of the ``.ipynb``), so a save without an edit changes no byte;
* :func:`pre_save_hook` gives every widget view a model id derived from its cell (the kernel's
  random UUIDs would change on every run), renames the models of the stored widget state to match
  (:func:`portable_widget_state`), and drops the absolute folders of the machine from tracebacks
  and warnings (:func:`portable_text`), exactly as ``tools/execute_notebooks.py`` does for the
  stored notebooks.

References
----------
jupytext's contents manager and configuration: https://jupytext.readthedocs.io (``pairing``,
``outdated_text_notebook_margin``); Jupyter Server's ``ContentsManager.pre_save_hook``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys

# Machinery: none of its names is flat (the rule of the flat API: :mod:`sattn`).
__flat__: list[str] = []
__all__ = [*__flat__, "portable_text", "portable_notebook", "portable_widget_state",
           "is_book_chapter", "pre_save_hook", "LAB_REQUIREMENTS", "missing_lab_requirements",
           "lab_command", "main"]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: Where nbclient (and JupyterLab) keep the widget models in a notebook's metadata.
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
_MODEL_REF = re.compile(r"IPY_MODEL_([0-9A-Za-z_-]+)")

# An absolute folder up to an installed package (site-packages/...) or up to the sattn package
# of a checkout (/work/x/sattn/...): the part that depends on the machine.
# (what precedes the path, kept: start, a non-path character or an ANSI colour code)
_BEFORE = r"(^|[^\w./~-]|\x1b\[[0-9;]*m)"
_SITE = re.compile(_BEFORE + r"/(?:[\w.+@~-]+/)*?(?:site|dist)-packages/", re.M)
_CHECKOUT = re.compile(_BEFORE + r"/(?:[\w.+@~-]+/)*?(?=sattn/[\w/]*\w\.py)", re.M)


def portable_text(text: str) -> str:
    """``text`` with the machine's folders removed from file paths of Python modules.

    ``/home/me/book/.venv/lib/python3.11/site-packages/numpy/linalg.py`` becomes
    ``numpy/linalg.py`` and ``/home/me/book/sattn/attention.py`` becomes ``sattn/attention.py``.

    Parameters
    ----------
    text : str
        A traceback line, a warning, any printed text.

    Returns
    -------
    str

    References
    ----------
    Used by :func:`portable_notebook` (stored notebooks, saves in JupyterLab).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return _CHECKOUT.sub(r"\1", _SITE.sub(r"\1", text))


def _portable(value):
    if isinstance(value, str):
        return portable_text(value)
    if isinstance(value, list):
        return [_portable(v) for v in value]
    return value


def _stable_id(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:32]


def portable_widget_state(nb: dict, views: dict[str, str]) -> dict:
    """Rename the models of ``nb``'s widget state (``metadata.widgets``) to ids that do not depend
    on the run, in place; return ``nb``.

    ``views`` maps the model id of each widget view output (in cell order) to its new id. The models
    a view reaches through ``IPY_MODEL_`` references get ids derived from the view's new id and their
    place among the references (breadth first, in sorted key order); the models no view reaches (a
    ``jslink``) get ids derived from their content, with their references already renamed. Every
    reference is rewritten with the new ids. A view whose old id is not in the state but whose new
    id is keeps the models it reaches under their portable ids: that is the state JupyterLab saves
    when it does not write the kernel's live models (its default), the one the notebook was opened
    with. Whole floats become ints (``10.0`` as ``10``), as JavaScript writes them. Applied to a
    state that is already portable, it changes nothing.

    Parameters
    ----------
    nb : dict
        A notebook (nbformat 4 node or plain dict); a notebook without widget state is left alone.
    views : dict of str to str
        Old model id of each widget view output -> its new id.

    Returns
    -------
    dict
        ``nb`` itself.
    """
    blob = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE)
    if not isinstance(blob, dict) or not isinstance(blob.get("state"), dict):
        return nb
    state = blob["state"]
    refs = {old: list(dict.fromkeys(_MODEL_REF.findall(json.dumps(model, sort_keys=True))))
            for old, model in state.items()}
    new: dict[str, str] = {}
    queue = []
    for old, view in views.items():
        if old in state:
            new.setdefault(old, view)
            queue.append(old)
        elif view in state and view not in new:
            # a state that already has the view under its portable id: JupyterLab (which by
            # default does not write the live models) passes the stored state on unchanged
            new[view] = view
            queue.append(view)
    while queue:
        old = queue.pop(0)
        for k, ref in enumerate(refs[old]):
            if ref in state and ref not in new:
                new[ref] = _stable_id(f"{new[old]}/{k}")
                queue.append(ref)

    def renamed(model) -> str:
        text = json.dumps(model, sort_keys=True)
        return _MODEL_REF.sub(lambda m: "IPY_MODEL_" + new.get(m.group(1), "?"), text)

    while len(new) < len(state):  # models no view reaches, those whose references are named first
        rest = [old for old in state if old not in new]
        ready = [old for old in rest if all(r in new or r not in state for r in refs[old])] or rest
        seen: dict[str, int] = {}
        for sig, old in sorted((renamed(state[old]), old) for old in ready):
            n = seen[sig] = seen.get(sig, -1) + 1
            new[old] = _stable_id(f"{sig}/{n}")
    blob["state"] = {new[old]: json.loads(renamed(model), parse_float=_js_number)
                     for old, model in state.items()}
    return nb


def _js_number(text: str) -> float | int:
    # a widget state saved by JupyterLab went through JavaScript, which has one number type and
    # writes 10.0 as 10: a whole float is kept as an int, so kernel and browser write the same bytes
    value = float(text)
    return int(value) if value.is_integer() else value


def portable_notebook(nb: dict) -> dict:
    """Make a notebook's outputs independent of the run and the machine, in place; return it.

    Each widget view output gets the model id ``sha1(cell id / output index)[:32]``, the widget
    state (``metadata.widgets``, what a static page needs to draw the views) is renamed to match
    (:func:`portable_widget_state`), and every text output (streams, tracebacks, ``text/plain``,
    ``text/html``) goes through :func:`portable_text`. The cells' ``trusted`` flags are dropped, so
    Jupyter does not sign the saved notebook: reopened, it shows the picture stored next to each
    view rather than widgets whose models died with the kernel.

    Parameters
    ----------
    nb : dict
        A notebook (nbformat 4 node or plain dict).

    Returns
    -------
    dict
        ``nb`` itself.

    References
    ----------
    ``tools/execute_notebooks.py`` (stored notebooks) and :func:`pre_save_hook` (JupyterLab).
    """
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise TypeError("nb must be a notebook: a dict with a list of cells")
    views: dict[str, str] = {}
    for cell in nb["cells"]:
        # not signed as trusted on save: a trusted notebook reopened without its kernel asks the
        # widget manager for models that no longer exist (an error where the figure was); an
        # untrusted one shows the picture stored next to each widget view
        cell.get("metadata", {}).pop("trusted", None)
        for k, out in enumerate(cell.get("outputs", []) or []):
            data = out.get("data", {})
            view = data.get(WIDGET_VIEW)
            if isinstance(view, dict) and "model_id" in view and cell.get("id"):
                # a model shown twice keeps one id: the one of its first view
                view["model_id"] = views.setdefault(str(view["model_id"]),
                                                    _stable_id(f"{cell['id']}/{k}"))
            if "text" in out:
                out["text"] = _portable(out["text"])
            if "traceback" in out:
                out["traceback"] = _portable(out["traceback"])
            for mime in ("text/plain", "text/html"):
                if mime in data:
                    data[mime] = _portable(data[mime])
    return portable_widget_state(nb, views)


def is_book_chapter(nb: dict) -> bool:
    """Whether ``nb`` is one of the book's chapters (a notebook paired with MyST Markdown)."""
    formats = nb.get("metadata", {}).get("jupytext", {}).get("formats", "")
    return isinstance(formats, str) and "md:myst" in formats


def pre_save_hook(model, path=None, contents_manager=None, **kwargs):
    """Jupyter Server ``ContentsManager.pre_save_hook``: :func:`portable_notebook` on a chapter.

    Only notebooks paired with MyST Markdown (the book's chapters) are touched; other files and
    notebooks are saved as they are.

    References
    ----------
    Set by :func:`lab_command` (``make lab``, ``python -m sattn lab``).
    """
    if not isinstance(model, dict) or model.get("type") != "notebook":
        return
    nb = model.get("content")
    if isinstance(nb, dict) and is_book_chapter(nb):
        portable_notebook(nb)


#: What ``python -m sattn lab`` imports, by module, with its distribution (the ``lab`` extra).
LAB_REQUIREMENTS = {"jupyterlab": "jupyterlab", "jupytext": "jupytext", "yaml": "pyyaml"}


def missing_lab_requirements() -> list[str]:
    """The distributions of :data:`LAB_REQUIREMENTS` that are not installed (by name)."""
    return [dist for module, dist in LAB_REQUIREMENTS.items()
            if importlib.util.find_spec(module) is None]


def lab_command(folder: str = "chapters", args: list[str] | None = None, *,
                host: str = "127.0.0.1") -> list[str]:
    """The ``jupyter lab`` command line that ``python -m sattn lab`` runs.

    JupyterLab on ``folder``, bound to ``host``, with :func:`pre_save_hook`; ``--allow-root`` when
    run as root (containers), which JupyterLab refuses otherwise.

    Parameters
    ----------
    folder : str
        The folder of the chapters (it holds ``jupytext.toml``).
    args : list of str, optional
        More JupyterLab options (``--port=8890``, ``--no-browser``, ...).
    host : str
        The address to listen on.

    Returns
    -------
    list of str

    Raises
    ------
    ValueError
        If ``folder`` is not a folder.
    ModuleNotFoundError
        If JupyterLab, jupytext or PyYAML is missing: the message names them and the ``lab``
        extra that installs them (``pip install 'sattn[lab]'``).

    References
    ----------
    README, "JupyterLab".
    """
    missing = missing_lab_requirements()
    if missing:
        raise ModuleNotFoundError(
            f"python -m sattn lab needs {', '.join(LAB_REQUIREMENTS.values())}; missing: "
            f"{', '.join(missing)}. Install the lab extra: pip install 'sattn[lab]' (from the "
            "book's folder: pip install '.[lab]')")
    if not os.path.isdir(folder):
        raise ValueError(f"no folder {folder!r}: give the folder of the chapters (e.g. chapters)")
    exe = os.path.join(os.path.dirname(sys.executable), "jupyter")
    if not os.path.exists(exe):
        exe = shutil.which("jupyter") or "jupyter"
    cmd = [exe, "lab", f"--notebook-dir={folder}", f"--ip={host}",
           f"--ServerApp.contents_manager_class={__package__}.lab_contents.BookContentsManager",
           f"--ContentsManager.pre_save_hook={__name__}.pre_save_hook"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    return cmd + list(args or [])


def main(folder: str = "chapters", args: list[str] | None = None) -> int:
    """Run :func:`lab_command` in place of this process (Ctrl-C stops JupyterLab)."""
    cmd = lab_command(folder, args)
    os.execv(cmd[0], cmd) if os.path.isabs(cmd[0]) else os.execvp(cmd[0], cmd)
    return 0  # pragma: no cover
