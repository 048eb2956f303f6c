"""JupyterLab leaves the chapters as they are: `make lab PORT=... LAB_ARGS=--no-browser` starts, and
opening and saving a chapter (its .md as a notebook through jupytext, and its .ipynb) through the
server's contents API, as JupyterLab's Save does, rewrites no byte of the tracked files (the
kernelspec and front matter are pinned by tools/execute_notebooks.py). In Chromium: a chapter
opens (never the jupytext error page), saves with `git status` unchanged, reopens and runs a cell,
also after every .ipynb has been touched newer than its .md; running all its cells, moving a
slider and saving changes nothing either (the save hook of sattn.presentation.lab keeps the stored
widget model ids and writes no folder of the machine). References that a notebook alone cannot
resolve show as links to the chapters that hold them, and solutions open collapsed."""

from __future__ import annotations

import difflib
import glob
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import ROOT

TOKEN = "book-lab-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    port = _free_port()
    # a workspace folder of its own: JupyterLab restores the notebooks a previous run left open
    # (kept in ~/.jupyter/lab/workspaces), and a restored tab must not stand in for the chapter
    workspaces = tmp_path_factory.mktemp("lab-workspaces")
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "lab", f"PORT={port}",
         f"LAB_ARGS=--no-browser --ServerApp.token={TOKEN} --ServerApp.open_browser=False"
         f" --LabApp.workspaces_dir={workspaces}"
         " --LabApp.expose_app_in_browser=True --NotebookNotary.db_file=:memory:"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    t0 = time.time()
    while True:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.time() - t0 > 90:
                os.killpg(proc.pid, signal.SIGTERM)
                pytest.fail("make lab did not start:\n" + proc.stdout.read().decode()[-3000:])
            time.sleep(0.5)
    yield base
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


def _api(base, path, method="GET", body=None):
    req = urllib.request.Request(f"{base}/api/contents/{path}?token={TOKEN}"
                                 + ("&type=notebook&content=1" if method == "GET" else ""),
                                 method=method, data=json.dumps(body).encode() if body else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


@pytest.mark.parametrize("name", ["07_experiments.md", "07_experiments.ipynb", "02_sparse_patterns.md"])
def test_open_and_save_changes_nothing(lab, name):
    stem = name.rsplit(".", 1)[0]
    files = [os.path.join(ROOT, "chapters", stem + ext) for ext in (".md", ".ipynb")]
    before = {f: open(f, "rb").read() for f in files}
    model = _api(lab, name)
    assert model["type"] == "notebook" and model["content"]["cells"]
    # what JupyterLab sends on Save: the notebook, with the metadata of the kernel it runs on
    model["content"]["metadata"]["kernelspec"] = {"display_name": "Python 3 (ipykernel)",
                                                  "language": "python", "name": "python3"}
    _api(lab, name, "PUT", {"type": "notebook", "format": "json", "content": model["content"]})
    after = {f: open(f, "rb").read() for f in files}
    changed = [os.path.relpath(f, ROOT) for f in files if before[f] != after[f]]
    for f in files:  # leave the checkout as it was, whatever happened
        open(f, "wb").write(before[f])
    assert not changed, f"saving {name} in JupyterLab rewrote {changed}"


CHAPTER = "02_sparse_patterns"  # 17 code cells, one precomputed slider figure (fig-sp-explorer)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# In the page: the open notebook panel and its kernel (JupyterLab exposes its app as
# window.jupyterapp when started with --LabApp.expose_app_in_browser=True).
_PANEL_JS = "(() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;" \
            " return w && w.content && w.sessionContext ? w : null; })()"
_KERNEL_IDLE_JS = f"""() => {{ const w = {_PANEL_JS};
  const k = w && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!(k && k.status === 'idle' && w.context.isReady); }}"""
# the execution counts of the code cells once every one has run and the kernel is idle (null
# before: Run All clears every count at once, and the kernel is idle for a moment between cells)
_COUNTS_JS = f"""() => {{ const w = {_PANEL_JS};
  if (!w || w.sessionContext.session.kernel.status !== 'idle') return null;
  const n = Array.from(w.content.model.cells).filter(c => c.type === 'code').map(c => c.executionCount);
  return n.every(c => c !== null) ? n : null; }}"""

#: Before a run: each code cell that builds a PrecomputedExplorer is scrolled into view (JupyterLab
#: renders cells lazily) and its rendered output is inspected: a picture (the stored image/png of the
#: default view) or the text fallback ("PrecomputedExplorer(...)", "VBox(...)").
_BEFORE_RUN_JS = f"""async () => {{ const w = {_PANEL_JS};
  const res = {{explorers: 0, pictures: 0, reprs: 0}};
  const cells = w.content.widgets;
  for (let i = 0; i < cells.length; i++) {{
    const cell = cells[i];
    if (cell.model.type !== 'code' ||
        !cell.model.sharedModel.getSource().includes('precomputed_explorer(')) continue;
    res.explorers++;
    await w.content.scrollToItem(i, 'center');
    // rendering is lazy and slower on a loaded machine: wait up to 10 s for the output to appear
    for (let t = 0; t < 50; t++) {{
      await new Promise(r => setTimeout(r, 200));
      const n = cell.outputArea.node;
      if (n.querySelector('img[src^="data:image/png"]') || /PrecomputedExplorer\\(|VBox\\(/.test(n.innerText)) break;
    }}
    const node = cell.outputArea.node;
    if (node.querySelector('img[src^="data:image/png"]')) res.pictures++;
    if (/PrecomputedExplorer\\(|VBox\\(/.test(node.innerText)) res.reprs++;
  }}
  return res; }}"""



def _json_differences(a, b, where="") -> list[str]:
    """Every place where two JSON values differ, as 'path: before -> after' (strings: around the
    first differing character)."""
    if type(a) is not type(b):
        return [f"{where}: {json.dumps(a)[:120]} -> {json.dumps(b)[:120]}"]
    if isinstance(a, dict):
        return [d for k in sorted(set(a) | set(b))
                for d in (_json_differences(a[k], b[k], f"{where}.{k}".lstrip(".")) if k in a and k in b
                          else [f"{where}.{k}: {'only after' if k in b else 'only before'}"])]
    if isinstance(a, list):
        out = [d for i, (x, y) in enumerate(zip(a, b)) for d in _json_differences(x, y, f"{where}[{i}]")]
        return out + ([f"{where}: {len(a)} items -> {len(b)} items"] if len(a) != len(b) else [])
    if a == b:
        return []
    if isinstance(a, str):
        i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        lo = max(0, i - 40)
        return [f"{where} (at character {i}): {a[lo:i + 60]!r} -> {b[lo:i + 60]!r}"]
    return [f"{where}: {a!r} -> {b!r}"]


def _text_differences(before: bytes, after: bytes) -> str:
    """A unified diff of two versions of a text file (repr of each line: shows whitespace)."""
    lines = difflib.unified_diff([repr(x) for x in before.decode().splitlines(keepends=True)],
                                 [repr(x) for x in after.decode().splitlines(keepends=True)],
                                 "before", "after", n=1, lineterm="")
    return "\n".join(list(lines)[:60])


def test_run_all_move_slider_and_save_in_the_browser(lab):
    """Issue #14 item 5, in the real JupyterLab of `make lab`: Chromium (outside requests
    blocked) opens a chapter's .ipynb, runs all its cells in a fresh kernel (notebook:run-all-cells),
    moves a slider of its precomputed figure with the keyboard (the figure shown must change),
    saves (docmanager:save; jupytext writes the paired .md too), and compares both files on disk
    with their bytes before the test.

    The .md must be byte for byte the same, and the .ipynb the same notebook: the kernel's random
    widget model ids and the checkout's folder in the ``File .../sattn/...`` lines of tracebacks
    are made portable by the save hook (sattn.presentation.lab.pre_save_hook), as
    tools/execute_notebooks.py does for the stored notebooks. Execution counts, stream texts,
    tracebacks, PNG bytes and all metadata must be identical. Any difference is reported key by
    key (.ipynb) or as a diff (.md), and the files are restored afterwards.
    """
    import browser as browser_mod  # tools/, put on sys.path by conftest.py

    files = [os.path.join(ROOT, "chapters", CHAPTER + ext) for ext in (".ipynb", ".md")]
    before = {f: open(f, "rb").read() for f in files}
    mtimes = {f: os.stat(f).st_mtime_ns for f in files}
    blocked, errors = [], []
    t0 = time.time()
    try:
        with browser_mod.chromium() as browser:
            ctx = browser_mod.new_context(browser, blocked=blocked, viewport=(1400, 1000))
            page = ctx.new_page()
            page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
            page.goto(f"{lab}/lab/tree/{CHAPTER}.ipynb?token={TOKEN}", wait_until="load")
            _wait(page, _KERNEL_IDLE_JS, "the kernel idle after opening", 60)
            # before anything runs, each precomputed figure shows its stored default view (the PNG
            # that PrecomputedExplorer puts next to the widget), not a text repr such as VBox(...)
            shown = page.evaluate(_BEFORE_RUN_JS)
            assert shown["explorers"] >= 1, shown
            assert shown["pictures"] == shown["explorers"] and not shown["reprs"], shown
            # cells tagged raises-exception do not stop Run All
            _command(page, "notebook:run-all-cells", 120)
            counts = _wait(page, _COUNTS_JS, "every code cell run after Run All", 90)
            assert counts == list(range(1, len(counts) + 1)), f"execution counts after Run All: {counts}"
            t_run = time.time()
            # the precomputed explorer: its sliders (noUiSlider handles) and the stack of views
            out = page.locator(".jp-OutputArea-output:has(.widget-slider)").first
            handle = out.locator(".noUi-handle").first
            handle.wait_for(timeout=20000)
            fingerprint = open(os.path.join(os.path.dirname(__file__), "figure_fingerprint.js"),
                               encoding="utf-8").read()
            shown = out.evaluate(fingerprint)
            assert "img:" in shown, f"the explorer shows no figure: {shown!r}"
            handle.scroll_into_view_if_needed()
            handle.focus()
            at_max = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
            page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
            moved, t1 = shown, time.time()
            while moved == shown and time.time() - t1 < 10:
                page.wait_for_timeout(100)
                moved = out.evaluate(fingerprint)
            assert moved != shown and "img:" in moved, "moving the slider did not change the figure"
            # the command's promise resolves when the server has written the file(s)
            _command(page, "docmanager:save")
            _wait(page, f"() => {{ const w = {_PANEL_JS}; return !!w && !w.context.model.dirty; }}",
                  "the notebook saved (not dirty)", 30)
            t_save = time.time()
            ctx.close()
        after = {f: open(f, "rb").read() for f in files}
        written = [f for f in files if os.stat(f).st_mtime_ns != mtimes[f]]
    finally:
        current = {f: open(f, "rb").read() for f in files}
        for f in files:  # leave the checkout as it was, whatever happened
            if current[f] != before[f]:
                open(f, "wb").write(before[f])
    print(f"\nopen+run all {t_run - t0:.1f} s, slider+save {t_save - t_run:.1f} s; page errors: {errors}")
    ipynb, md = files
    assert not blocked, "requests to outside hosts (blocked):\n" + "\n".join(blocked)
    assert written == files, f"the save did not write {sorted(set(files) - set(written))}"
    problems = []
    nb_before, nb_after = json.loads(before[ipynb]), json.loads(after[ipynb])
    if nb_before != nb_after:
        problems.append(f"{os.path.relpath(ipynb, ROOT)} changed after Run All and Save (widget model "
                        "ids and machine folders are the save hook's to keep):\n"
                        + "\n".join(_json_differences(nb_before, nb_after)[:30]))
    if after[md] != before[md]:
        problems.append(f"{os.path.relpath(md, ROOT)} was rewritten by jupytext on save:\n"
                        + _text_differences(before[md], after[md]))
    assert not problems, "\n\n".join(problems) + f"\n\n(uncaught page errors, not checked: {errors})"


# ---- open, save, reopen, run: also when every .ipynb is newer than its .md -------------------

REOPEN_CHAPTER = "12_rank_one"   # one of the chapters (09-14) jupytext refused once .ipynb was newer
_ERROR_JS = """() => Array.from(document.querySelectorAll('.jp-Dialog')).map(d => d.innerText).join('\\n')"""


#: What the page shows when a wait fails: its dialogs, the open document, its kernel, its cells.
_STATE_JS = f"""() => {{ const w = {_PANEL_JS};
  const dialogs = Array.from(document.querySelectorAll('.jp-Dialog')).map(d => d.innerText);
  if (!w) return {{dialogs, panel: null}};
  const s = w.sessionContext.session, k = s && s.kernel;
  return {{dialogs, panel: w.context.path, dirty: w.context.model.dirty, ready: w.context.isReady,
          kernel: k ? k.status : null, kernelName: k ? k.name : null,
          counts: Array.from(w.content.model.cells).filter(c => c.type === 'code')
                       .slice(0, 5).map(c => c.executionCount)}}; }}"""


def _page_state(page) -> str:
    try:
        return json.dumps(page.evaluate(_STATE_JS), indent=1)[:3000]
    except Exception as exc:  # the page itself is gone or stuck
        return f"(the page's state could not be read: {exc})"


def _wait(page, js, what, timeout_s):
    """page.wait_for_function, failing with what the page shows instead of a bare timeout."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    try:
        return page.wait_for_function(js, timeout=timeout_s * 1000, polling=250).json_value()
    except PlaywrightTimeout:
        pytest.fail(f"{what}: not within {timeout_s} s; the page shows:\n{_page_state(page)}")


def _command(page, command, timeout_s=60):
    """Run a JupyterLab command and wait for its promise. A command that waits on a dialog (a save
    that asks whether to overwrite a file changed on disk) would hold page.evaluate forever, which
    has no timeout of its own: the promise races a timer, and the test fails with the dialog."""
    settled = page.evaluate(f"""() => Promise.race([
        window.jupyterapp.commands.execute({json.dumps(command)}).then(() => 'done', e => 'error: ' + e),
        new Promise(r => setTimeout(() => r('timeout'), {timeout_s * 1000}))])""")
    if settled != "done":
        pytest.fail(f"{command}: {settled} after {timeout_s} s; the page shows:\n{_page_state(page)}")


def _git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "chapters"],
                          cwd=ROOT, capture_output=True, text=True, check=True).stdout


def _open_in_lab(page, lab, name, *, reset=False):
    """Open chapters/NAME in JupyterLab and wait until it is the current document, its kernel
    idle; fail with the dialog's text if jupytext refuses it. ``reset``: start from an empty
    workspace (no notebook of an earlier test restored beside it, whose panel could be current
    for a moment while the layout is restored)."""
    page.goto(f"{lab}/lab/tree/{name}?{'reset&' if reset else ''}token={TOKEN}", wait_until="load")
    ready = f"""() => {{ const w = {_PANEL_JS};
      return !!w && w.context.path === {json.dumps(name)} && ({_KERNEL_IDLE_JS})(); }}"""
    t0 = time.time()
    while time.time() - t0 < 90:
        dialog = page.evaluate(_ERROR_JS)
        if dialog:
            pytest.fail(f"JupyterLab shows an error dialog for {name}:\n{dialog[:1500]}")
        if page.evaluate(ready):
            return
        page.wait_for_timeout(250)
    pytest.fail(f"{name} did not open as the current document with an idle kernel within 90 s; "
                f"the page shows:\n{_page_state(page)}")


@pytest.fixture(params=["as stored", "every .ipynb newer than its .md"])
def chapter_times(request):
    """The chapters' files as stored, or with every .ipynb 10 s newer than its .md (after a save,
    a checkout of the .md, any touch); the modification times are restored afterwards."""
    files = sorted(glob.glob(os.path.join(ROOT, "chapters", "*.ipynb")))
    saved = {f: os.stat(f) for f in files}
    if request.param != "as stored":
        for f in files:
            md = f[:-6] + ".md"
            t = os.stat(md).st_mtime + 10
            os.utime(f, (t, t))
    yield request.param
    for f, st in saved.items():
        if os.path.exists(f):
            os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_every_chapter_opens_through_the_server(lab, chapter_times):
    """Every chapter (.ipynb and .md) opens through the contents API, as JupyterLab opens it: no
    jupytext refusal ("... is more recent than ...")."""
    refused = []
    for md in sorted(glob.glob(os.path.join(ROOT, "chapters", "*.md"))):
        if not os.path.exists(md[:-3] + ".ipynb"):
            continue
        for name in (os.path.basename(md), os.path.basename(md)[:-3] + ".ipynb"):
            try:
                _api(lab, name)
            except urllib.error.HTTPError as exc:
                refused.append(f"{name}: {exc.code} {exc.read().decode(errors='replace')[:300]}")
    assert not refused, f"{chapter_times}: JupyterLab cannot open:\n" + "\n".join(refused)


def test_open_save_reopen_and_run_in_the_browser(lab, chapter_times):
    """In Chromium: open a chapter, save it with no edit (git status unchanged, no byte changed),
    reopen it, run its first code cell. Fails on the jupytext error page."""
    import browser as browser_mod  # tools/, put on sys.path by conftest.py

    files = [os.path.join(ROOT, "chapters", REOPEN_CHAPTER + ext) for ext in (".ipynb", ".md")]
    before = {f: open(f, "rb").read() for f in files}
    status = _git_status()
    blocked = []
    try:
        with browser_mod.chromium() as browser:
            ctx = browser_mod.new_context(browser, blocked=blocked, viewport=(1400, 1000))
            page = ctx.new_page()
            _open_in_lab(page, lab, REOPEN_CHAPTER + ".ipynb", reset=True)
            _command(page, "docmanager:save")
            _wait(page, f"() => {{ const w = {_PANEL_JS}; return !!w && !w.context.model.dirty; }}",
                  "the notebook saved (not dirty)", 30)
            page.wait_for_timeout(500)
            after_save = {f: open(f, "rb").read() for f in files}
            status_after = _git_status()
            # reopen (a fresh page: JupyterLab reads the pair from disk again) and run a cell
            page.close()
            page = ctx.new_page()
            _open_in_lab(page, lab, REOPEN_CHAPTER + ".ipynb")
            # reopened after the save, its figures still show their stored pictures (the save hook
            # keeps the notebook unsigned: no widget whose model died with the kernel)
            shown = page.evaluate(_BEFORE_RUN_JS)
            page.evaluate(f"""() => {{ const w = {_PANEL_JS};
                const i = Array.from(w.content.model.cells).findIndex(c => c.type === 'code');
                w.content.activeCellIndex = i; return i; }}""")
            _command(page, "notebook:run-cell")
            count = _wait(page, f"""() => {{ const w = {_PANEL_JS};
                const c = Array.from(w.content.model.cells).find(c => c.type === 'code');
                return c && c.executionCount; }}""", "the first code cell run after reopening", 60)
            ctx.close()
    finally:
        for f in files:  # leave the checkout as it was, whatever happened
            if open(f, "rb").read() != before[f]:
                open(f, "wb").write(before[f])
    assert not blocked, blocked
    changed = [os.path.basename(f) for f in files if after_save[f] != before[f]]
    assert not changed, f"{chapter_times}: a save with no edit rewrote {changed}"
    assert status_after == status, f"git status changed by a save with no edit:\n{status_after}"
    assert isinstance(count, int) and count >= 1, f"the first code cell did not run after reopening ({count})"
    assert shown["explorers"] >= 1 and shown["pictures"] == shown["explorers"], \
        f"reopened after a save, the figures show no picture: {shown}"


# ---- references and solutions as JupyterLab renders them ----------------------------------------

#: chapters with forward references, references to figures made by code cells, citations, API roles
#: and solutions with code
REFERENCE_CHAPTERS = ("04_construction", "12_rank_one", "16_log_law", "18_width_bits")

#: Scroll through the whole notebook (JupyterLab renders cells lazily) and report what it shows:
#: the code cells of solutions (hidden or not), the links to other chapters, raw role text.
_RENDER_ALL_JS = f"""async () => {{ const w = {_PANEL_JS};
  const cells = w.content.widgets; let inside = false;
  const res = {{solutionCode: 0, solutionShown: 0, chapterLinks: 0, rawRoles: []}};
  for (let i = 0; i < cells.length; i++) {{
    await w.content.scrollToItem(i, 'center');
    await new Promise(r => setTimeout(r, 60));
    const cell = cells[i], src = cell.model.sharedModel.getSource();
    if (cell.model.type === 'markdown') {{
      const start = src.lastIndexOf('{{solution-start}}'), end = src.lastIndexOf('{{solution-end}}');
      if (start !== end) inside = start > end;
      // what the reader sees: jupyterlab-myst's rendering (.myst), once it is there (lazy, up to 10 s)
      let node = null;
      for (let t = 0; t < 100 && !node; t++) {{
        node = cell.node.querySelector('.myst');
        if (!node) await new Promise(r => setTimeout(r, 100));
      }}
      if (!node) {{ res.rawRoles.push(i + ': not rendered'); continue; }}
      res.chapterLinks += node.querySelectorAll('a[href*=".ipynb"]').length;
      const raw = node.textContent.match(/\\{{(prf:ref|ref|numref|eq|doc|cite:t|cite:p|py:func)\\}}`/g);
      if (raw) res.rawRoles.push(i + ': ' + raw.join(' '));
    }} else if (inside && cell.model.type === 'code') {{
      res.solutionCode++;
      if (!cell.inputHidden || !cell.outputHidden) res.solutionShown++;
    }}
  }}
  return res; }}"""


@pytest.mark.parametrize("chapter", REFERENCE_CHAPTERS)
def test_references_resolve_and_solutions_collapse_in_the_browser(lab, chapter):
    """JupyterLab shows no unresolved cross-reference (jupyterlab-myst logs 'Cross reference target
    was not found' for each), links references to other chapters to their notebooks (a click opens
    the notebook in JupyterLab), and starts each solution's code cells collapsed (input and
    output)."""
    import browser as browser_mod

    blocked, messages = [], []
    with browser_mod.chromium() as browser:
        ctx = browser_mod.new_context(browser, blocked=blocked, viewport=(1400, 1000))
        page = ctx.new_page()
        page.on("console", lambda m: messages.append(m.text))
        _open_in_lab(page, lab, chapter + ".ipynb", reset=True)
        path = page.evaluate(f"() => {_PANEL_JS}.context.path")
        assert path == chapter + ".ipynb", f"the open notebook is {path}, not {chapter}.ipynb"
        shown = page.evaluate(_RENDER_ALL_JS)
        page.wait_for_timeout(500)
        # a link to another chapter opens that chapter's notebook in JupyterLab (not a download)
        link = page.locator(".jp-Notebook .jp-MarkdownCell a[href*='.ipynb']").first
        target = link.get_attribute("href").split("/files/")[-1].split("?")[0]
        link.scroll_into_view_if_needed()
        link.click()
        _wait(page, f"() => {{ const w = {_PANEL_JS}; return !!w && w.context.path === {json.dumps(target)}; }}",
              f"the linked notebook {target} open", 60)
        ctx.close()
    unresolved = [m for m in messages if "target was not found" in m]
    assert not unresolved, f"{chapter}: {len(unresolved)} unresolved references, e.g. {unresolved[:5]}"
    assert not shown["rawRoles"], f"{chapter}: roles shown as raw text: {shown['rawRoles'][:5]}"
    assert shown["chapterLinks"] >= 1, f"{chapter}: no link to another chapter's notebook: {shown}"
    assert shown["solutionCode"] >= 1 and shown["solutionShown"] == 0, \
        f"{chapter}: solution code cells shown expanded: {shown}"
    assert not blocked, blocked
