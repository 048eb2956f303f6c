"""Sphinx extension with the book's reader features (loaded through ``sphinx.local_extensions``).

- Each chapter (a page built from a notebook) offers its executed ``.ipynb`` in the theme's
  download menu, and says how to run it in JupyterLab and live on the website.
- ``book_static/`` (dark-mode CSS, the live-kernel script) is added to every page.
- The ``book-build-info`` directive renders the package versions of the running build (status page).
- The ``book-reliability`` directive renders the committed reliability figures in
  ``data/reliability/`` that ``make status`` measured (``tests/reliability.py``; bad input,
  corrupted data, killed runs, attacks on the live server, ...).
- When the HTML build finishes, the runnable kit ``sattn-kit.zip`` (``tools/make_kit.py``) is
  written to the site's root; every chapter's run panel and the ``{book-kit}`` directive (used in
  the introduction) link it.
- sphinx-thebe's scripts are removed: they point at unpkg.com and Binder, and are replaced by the
  book's own live mode (``make live``; thebe served from the book, a kernel on 127.0.0.1).
"""

from __future__ import annotations

import datetime
import glob
import html
import importlib.metadata
import json
import os
import platform
import shutil

from docutils import nodes
from docutils.parsers.rst import Directive

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATIC = os.path.join(ROOT, "book_static")
LIVE_TAG = "live"

#: Packages listed on the status page, in this order (whatever is installed is shown).
STATUS_PACKAGES = [
    "sattn", "numpy", "scipy", "matplotlib", "ipywidgets", "ipykernel", "jupyter-book", "sphinx",
    "myst-nb", "myst-parser", "sphinx-book-theme", "pydata-sphinx-theme", "sphinx-proof",
    "sphinxcontrib-bibtex", "jupytext", "jupyter-cache", "nbclient", "nbval", "pytest",
    "hypothesis", "jupyterlab", "jupyter-server", "playwright",
]


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


class BuildInfo(Directive):
    """``{book-build-info}``: a table of the versions this build ran with (read every build)."""

    has_content = False

    def run(self):
        env = self.state.document.settings.env
        env.note_reread()  # the versions are facts about *this* build, so re-read every time
        rows = [("Python", platform.python_version()), ("Platform", platform.platform(terse=True))]
        rows += [(p, _version(p)) for p in STATUS_PACKAGES]
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        body = "".join(f"<tr><td>{html.escape(k)}</td><td><code>{html.escape(v)}</code></td></tr>"
                       for k, v in rows)
        table = (f'<p class="book-build-stamp">Built on {stamp}.</p>'
                 '<table class="table book-versions"><thead><tr><th>Package</th><th>Version</th>'
                 f"</tr></thead><tbody>{body}</tbody></table>")
        return [nodes.raw("", table, format="html")]


def reliability_dir() -> str:
    """The committed figures that ``make status`` writes (not what a test run leaves in _build)."""
    return os.path.join(ROOT, "data", "reliability")


class Reliability(Directive):
    """``{book-reliability}``: a table of the reliability figures the tests recorded."""

    has_content = False

    def run(self):
        env = self.state.document.settings.env
        figures = []
        for path in sorted(glob.glob(os.path.join(reliability_dir(), "*.json"))):
            with open(path, encoding="utf-8") as f:
                try:
                    figures.append(json.load(f))
                except ValueError as exc:
                    raise self.error(f"book-reliability: {path} is not valid JSON ({exc})") from exc
        if not figures:
            raise self.error(f"book-reliability: no figures in {reliability_dir()}; run "
                             "'make status' and commit data/reliability/")
        for path in sorted(glob.glob(os.path.join(reliability_dir(), "*.json"))):
            env.note_dependency(path)
        rows = []
        for fig in figures:
            ok = fig["passed"] == fig["tried"]
            result = f'{fig["passed"]:,} of {fig["tried"]:,} {html.escape(fig["unit"])}'
            extra = "; ".join(f"{html.escape(str(k))}: {html.escape(json.dumps(v) if not isinstance(v, str) else v)}"
                              for k, v in sorted(fig.get("details", {}).items()))
            fails = "".join(f"<li><code>{html.escape(x)}</code></li>" for x in fig.get("failures", []))
            rows.append(
                f'<tr data-reliability="{html.escape(fig["name"])}" data-passed="{fig["passed"]}" '
                f'data-tried="{fig["tried"]}"><td>{html.escape(fig["title"])}'
                + (f'<br><small>{extra}</small>' if extra else "")
                + (f"<ul>{fails}</ul>" if fails else "")
                + f'</td><td class="{"book-ok" if ok else "book-fail"}">{result}</td>'
                f'<td><code>{html.escape(fig["test"].split("::")[0])}</code><br>'
                f'<small>{html.escape(fig["measured"])}</small></td></tr>')
        table = ('<table class="table book-reliability"><thead><tr><th>What was tried, and what '
                 "was required</th><th>Behaved as required</th><th>Test, measured</th></tr></thead>"
                 f"<tbody>{''.join(rows)}</tbody></table>")
        return [nodes.raw("", table, format="html")]


def _drop_sphinx_thebe(app):
    """Disconnect sphinx-thebe (loaded by Jupyter Book): its scripts name unpkg.com."""
    for listeners in app.events.listeners.values():
        listeners[:] = [ls for ls in listeners
                        if not getattr(ls.handler, "__module__", "").startswith("sphinx_thebe")]
    app.registry.css_files[:] = [(f, a) for f, a in app.registry.css_files if f != "sphinx-thebe.css"]


def _is_notebook(app, docname: str) -> bool:
    return bool(app.env.metadata.get(docname, {}).get("kernelspec"))


def _notebook_file(app, docname: str) -> str | None:
    """The stored executed notebook of a chapter (``chapters/NN.ipynb``), else None."""
    path = os.path.join(app.srcdir, docname + ".ipynb")
    return path if os.path.exists(path) else None


KIT_NAME = "sattn-kit.zip"


def _kit_link(to_root: str) -> str:
    return (f'<a class="reference download book-kit-link" href="{to_root}{KIT_NAME}" download>'
            "the runnable kit</a> (<code>sattn-kit.zip</code>: the <code>sattn</code> wheel, every "
            "chapter as <code>.md</code> and <code>.ipynb</code>, the data they read, "
            "<code>requirements.txt</code> and a two-line <code>README.txt</code>)")


class KitLink(Directive):
    """``{book-kit}``: a paragraph with the link to the runnable kit."""

    has_content = False

    def run(self):
        env = self.state.document.settings.env
        to_root = "../" * env.docname.count("/")
        text = (f'<p class="book-kit">Take the chapters with you: download {_kit_link(to_root)}, '
                "unpack it, and follow its two lines to run every chapter in JupyterLab on your "
                "machine, without cloning the book.</p>")
        return [nodes.raw("", text, format="html")]


def _run_panel(docname: str, ipynb_url: str | None, has_live: bool, to_root: str = "") -> str:
    stem = os.path.basename(docname)
    dl = (f'<a class="reference download" href="{ipynb_url}" download>download '
          f"<code>{stem}.ipynb</code></a>" if ipynb_url else f"open <code>{docname}.md</code>")
    live = ("<li>Figures marked <em>live</em> recompute on this page itself when the book is served "
            "by <code>make live</code> (a Jupyter server on 127.0.0.1; press "
            "<em>Run live</em> above the figure).</li>") if has_live else ""
    return (
        '<details class="book-run-panel"><summary>Run this chapter yourself</summary><ul>'
        f"<li>In a clone of the book, <code>make lab</code> opens JupyterLab with the package "
        f"<code>sattn</code> importable; there, open <code>{docname}.md</code> (right click, "
        f"<em>Open With → Notebook</em>) or {dl} and choose <em>Run → Run All Cells</em>.</li>"
        "<li>Without <code>make</code>: <code>pip install -r requirements.txt</code> and "
        "<code>pip install -e .</code> in the book's folder, then <code>jupyter lab</code>.</li>"
        f"<li>Without a clone: download {_kit_link(to_root)}; its <code>README.txt</code> says in "
        "two lines how to install it and open the chapters.</li>"
        f"{live}</ul></details>"
    )


def _page_context(app, pagename, templatename, context, doctree):
    if doctree is None or not _is_notebook(app, pagename):
        return
    nb = _notebook_file(app, pagename)
    url = None
    if nb is not None:
        rel = pagename + ".ipynb"
        dest = os.path.join(app.outdir, "_sources", rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(nb, dest)
        context["ipynb_source"] = rel  # the theme's download menu then offers ".ipynb"
        url = f"{context['pathto']('_sources', 1)}/{rel}"
        if context.get("sourcename", "").endswith(".ipynb") and os.path.exists(nb[:-6] + ".md"):
            # the page is read from the stored notebook (tools/stored_notebooks.py); the source
            # offered next to it is still the .md that people edit (Sphinx copies the page's own
            # file under this name; _copy_md_sources puts the .md there when the build ends)
            context["sourcename"] = pagename + ".md"
            context["page_source_suffix"] = ".md"
    body = context.get("body", "")
    has_live = f"tag_{LIVE_TAG}" in body
    end = body.find("</h1>")
    if end >= 0:
        end += len("</h1>")
        to_root = "../" * pagename.count("/")
        context["body"] = body[:end] + _run_panel(pagename, url, has_live, to_root) + body[end:]


def _config_inited(app, config):
    if STATIC not in config.html_static_path:
        config.html_static_path.append(STATIC)
    _drop_sphinx_thebe(app)


def _copy_md_sources(app, exception):
    """``_sources/chapters/NN.md``: the .md of each chapter read from its stored notebook."""
    if exception is not None or app.builder.name != "html":
        return
    for md in glob.glob(os.path.join(app.outdir, "_sources", "chapters", "*.md")):
        src = os.path.join(app.srcdir, "chapters", os.path.basename(md))
        if os.path.exists(src[:-3] + ".ipynb") and os.path.exists(src):
            shutil.copyfile(src, md)


def _write_kit(app, exception):
    if exception is None and app.builder.name == "html":
        import make_kit

        path = make_kit.build_kit(app.outdir)
        from sphinx.util import logging
        logging.getLogger(__name__).info(f"runnable kit: {path} ({os.path.getsize(path) / 1e6:.1f} MB)")


def _portable_outputs(app, doctree, docname):
    """Printed outputs and tracebacks on the site name ``sattn/x.py`` and ``numpy/x.py``, not the
    folders of the machine that built it (the same rule as the stored notebooks:
    ``sattn.presentation.lab.portable_text``)."""
    from sattn.presentation.lab import portable_text

    for block in doctree.findall(nodes.literal_block):
        if "output" not in block.get("classes", []):
            continue
        plain = block.rawsource == block.astext()   # (Sphinx highlights only such blocks)
        for text in list(block.findall(nodes.Text)):
            new = portable_text(str(text))
            if new != str(text):
                text.parent.replace(text, nodes.Text(new))
        if plain:
            block.rawsource = block.astext()


def setup(app):
    app.connect("doctree-resolved", _portable_outputs)
    app.add_directive("book-build-info", BuildInfo)
    app.add_directive("book-kit", KitLink)
    app.connect("build-finished", _copy_md_sources)
    app.connect("build-finished", _write_kit)
    app.add_directive("book-reliability", Reliability)
    app.connect("config-inited", _config_inited)
    # before sphinx-book-theme's add_header_buttons (priority 501) so that it sees ipynb_source
    app.connect("html-page-context", _page_context, priority=400)
    # MathJax 2 call for ipywidgets labels; loaded before MathJax itself (defer)
    app.add_js_file("book-widget-typeset.js", priority=200)
    app.add_js_file("book-live-config.js", priority=800)
    app.add_js_file("book-live.js", priority=801)
    app.add_js_file("book-print.js", priority=802)
    app.add_css_file("book.css", priority=800)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
