"""The package's layout: imports go one way, none is function-local, the flat API follows its rule.

Every module's imports are read with ``ast`` (nothing is executed), so a violation is reported with
the file, the line and the rule it breaks.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
import subprocess
import sys
import tomllib
import typing
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest

import sattn
from sattn import _deprecation, _version

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "sattn"

#: The layers, bottom first. A module may import from a lower layer, or from an earlier module of
#: its own unit (the modules of a unit are listed in their import order); units of the same layer
#: never import each other (Part I and Part II are independent, and neither uses the presentation
#: helpers).
LAYERS = [
    {"sattn.errors": []},             # the package's own exception for sizes it will not compute
    {"sattn._version": [], "sattn._validate": [], "sattn._deprecation": [], "sattn._lazy": [],
     "sattn.results": []},
    {"sattn.rounding": []},           # rounding-error bounds and certified decisions
    {"sattn.linalg": []},             # canonical factorizations, products in a fixed order
    {"sattn.attention": [], "sattn.layers": []},
    {"sattn.patterns": ["sparse", "criteria", "construction", "optimize", "supports"],
     "sattn.universality": ["boltzmann", "contextual", "hardmax", "rank_one", "memorize", "universal"],
     "sattn.presentation": ["plotting", "widgets", "messages", "lab", "lab_contents"]},
    {"sattn.experiments": ["target", "engine", "setups", "reference"],   # the d_min engine and
     "sattn.precision": ["formats", "forward", "thresholds"]},            # what to compute; Part III:
    #                                 the constructions in finite precision (uses both parts)
    {"sattn.runs": ["host", "store", "cluster", "runner", "bench"]},   # the machinery that runs the experiments
    {"sattn.experiments": ["protocol", "laws", "prediction.results", "prediction.row_model", "prediction.row_exact",
                           "prediction.row_types", "prediction.dmin", "prediction.checks",
                           "prediction", "acceptance.design", "acceptance.analysis",
                           "acceptance.robust", "acceptance.out_of_sample",
                           "acceptance.row_model_test", "acceptance"]},
    #                                 the protocols and the science, above the machinery
    {"sattn.frontier": [],            # Part III: the constructions against the width x bits bound
     "sattn.codes": ["bounds", "inputs", "checker", "measure"]},  # codes of the book's weights
    {"sattn.__main__": []},
    {"sattn": []},                    # sattn/__init__.py: the flat API, above everything
]


def _place(module: str):
    """``(layer, unit, position in the unit)`` of a module ``sattn.x.y``. A unit may span two
    layers (the experiments: the engine below the machinery, the protocols above it); a
    subpackage's ``__init__`` belongs to its topmost layer, above all its modules."""
    found = None
    for rank, units in enumerate(LAYERS):
        for unit, order in units.items():
            if module == unit:
                found = rank, unit, len(order)    # a subpackage's __init__ (or a one-module unit)
            elif module.startswith(unit + "."):
                name = module[len(unit) + 1:]
                if name in order:
                    return rank, unit, order.index(name)
                found = found or (rank, unit, None)
    return found


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(REPO).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def _imports(module: str, path: Path):
    """``(line, imported module, in a function or class?, relative?)`` for every import."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_pkg = path.name == "__init__.py"
    here = module.split(".") if is_pkg else module.split(".")[:-1]
    out = []

    def visit(node, nested):
        for child in ast.iter_child_nodes(node):
            inner = nested or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                                 ast.Lambda))
            if isinstance(child, ast.Import):
                out.extend((child.lineno, a.name, nested, False) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = here[: len(here) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                    if not child.module:          # from . import x: modules x of that package
                        out.extend((child.lineno, f"{target}.{a.name}", nested, True)
                                   for a in child.names)
                        continue
                else:
                    target = child.module
                out.append((child.lineno, target, nested, bool(child.level)))
            visit(child, inner)

    visit(tree, False)
    return out


MODULES = list(_modules())


def test_every_module_has_a_place_in_the_layers():
    unplaced = [m for m, _ in MODULES if _place(m) is None or _place(m)[2] is None]
    assert not unplaced, f"modules missing from LAYERS in {__file__}: {unplaced}"


def test_no_module_named_utils():
    assert not [m for m, _ in MODULES if m.split(".")[-1] in ("utils", "util", "helpers", "misc")]


@pytest.mark.parametrize("module,path", MODULES, ids=[m for m, _ in MODULES])
def test_imports_go_one_way(module, path):
    rank, unit, pos = _place(module)
    bad = []
    for line, target, _, relative in _imports(module, path):
        if target != "sattn" and not target.startswith("sattn."):
            continue                              # numpy, scipy, the standard library, ...
        if module != "sattn" and (target == "sattn" or not relative):
            bad.append(f"line {line}: imports {target} absolutely or from the package root "
                       "(use a relative import from a lower layer)")
            continue
        placed = _place(target)
        if placed is None:
            bad.append(f"line {line}: imports {target}, which is not in LAYERS")
            continue
        t_rank, t_unit, t_pos = placed
        if module == "sattn":
            continue                              # the flat API may import every layer
        if t_rank > rank:
            bad.append(f"line {line}: {module} (layer {rank}) imports {target} (layer {t_rank}), "
                       "an upward import")
        elif t_rank == rank and t_unit != unit:
            bad.append(f"line {line}: {module} imports {target}, a sibling unit of the same layer")
        elif t_rank == rank and t_unit == unit and not (t_pos is not None and 0 <= t_pos < pos):
            bad.append(f"line {line}: {module} imports {target}, which is not an earlier module of "
                       f"{unit} (order: {LAYERS[rank][unit]})")
    assert not bad, f"{path.relative_to(REPO)}:\n  " + "\n  ".join(bad)


@pytest.mark.parametrize("module,path", MODULES, ids=[m for m, _ in MODULES])
def test_no_function_local_imports(module, path):
    local = [(line, target) for line, target, nested, _ in _imports(module, path) if nested]
    assert not local, (f"{path.relative_to(REPO)}: imports inside a function or class "
                       f"(move them to the top of the module): {local}")


def _private_imports(module: str, path: Path):
    """``(line, target module, name)`` for every private name (``_x``, not ``__x__``) imported."""
    tree = ast.parse(path.read_text(), filename=str(path))
    here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = here[: len(here) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
            out.extend((node.lineno, target, a.name) for a in node.names
                       if a.name.startswith("_") and not a.name.endswith("__"))
    return out


@pytest.mark.parametrize("module,path", MODULES, ids=[m for m, _ in MODULES])
def test_no_private_name_is_imported_across_modules(module, path):
    """A module keeps its private names: what another module needs is public (in the defining
    module's ``__all__``, documented) or moves to where it is used. Private *modules*
    (``sattn._validate``, ...) are the package's shared helpers and may be imported."""
    bad = [f"line {line}: {name} from {target}" for line, target, name in _private_imports(module, path)
           if f"{target}.{name}" not in dict(MODULES)]
    assert not bad, f"{path.relative_to(REPO)} imports private names of other modules: {bad}"


def test_the_private_import_checker_sees_violations(tmp_path):
    bad = tmp_path / "sattn" / "experiments" / "protocol.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("from ..runs.store import _sha256_file, versions\nfrom .. import _validate\n")
    found = _private_imports("sattn.experiments.protocol", bad)
    assert found == [(1, "sattn.runs.store", "_sha256_file"), (2, "sattn", "_validate")]
    assert "sattn._validate" in dict(MODULES) and "sattn.runs.store._sha256_file" not in dict(MODULES)


#: The subpackage of the machinery, and the experiments' modules that hold science only: no pool,
#: no store, no lock, no cluster of their own (they reach them through sattn.runs).
MACHINERY = "sattn.runs"
MACHINERY_LIBRARIES = ("joblib", "distributed", "dask", "fcntl", "threadpoolctl")
SCIENCE = ["sattn.experiments.target", "sattn.experiments.engine", "sattn.experiments.setups",
           "sattn.experiments.reference", "sattn.experiments.laws",
           "sattn.experiments.prediction.results", "sattn.experiments.prediction.row_model",
           "sattn.experiments.prediction.row_types", "sattn.experiments.prediction.dmin",
           "sattn.experiments.prediction.checks", "sattn.experiments.acceptance.analysis"]


def test_one_loop_runs_every_task_store():
    """The lock/store/run loop is written once (:func:`sattn.runs.runner.run_tasks`, which
    :func:`~sattn.runs.runner.run_in_store` opens a store for): the modules that run tasks into a
    store call one of them rather than loading, computing and saving themselves."""
    paths = dict(MODULES)
    for m in ("sattn.experiments.protocol", "sattn.experiments.acceptance.design",
              "sattn.frontier", "sattn.codes.measure"):
        text = paths[m].read_text()
        assert ("run_tasks(" in text or "run_in_store(" in text) and "store.save(" not in text \
            and "store.load(" not in text, m
    runner = paths["sattn.runs.runner"].read_text()
    assert "store.save(" in runner and "store.load(" in runner


def test_the_machinery_lives_in_its_own_subpackage():
    """The store, the cluster, the host process and the benchmark are in ``sattn.runs``; the
    science modules import none of the machinery's libraries (process pools, Dask, file locks,
    BLAS thread control): they run through ``sattn.runs``."""
    runs = {m for m, _ in MODULES if m.startswith(MACHINERY + ".")}
    assert {f"{MACHINERY}.{m}" for m in ("store", "cluster", "host", "runner", "bench")} <= runs
    assert not [m for m, _ in MODULES if m.startswith("sattn.experiments.")
                and m.rsplit(".", 1)[-1] in ("store", "cluster", "bench", "host", "runner")]
    paths = dict(MODULES)
    bad = {m: sorted({t for _, t, _, _ in _imports(m, paths[m])
                      if t.split(".")[0] in MACHINERY_LIBRARIES})
           for m in SCIENCE}
    assert not {m: t for m, t in bad.items() if t}, bad


MAX_LINES = 900
#: The one module allowed above MAX_LINES: the engine, whose stages share one vectorized state.
LONG_MODULES = {"sattn.experiments.engine"}


@pytest.mark.parametrize("module,path", MODULES, ids=[m for m, _ in MODULES])
def test_no_module_is_longer_than_the_limit(module, path):
    lines = len(path.read_text().splitlines())
    assert module in LONG_MODULES or lines <= MAX_LINES, (
        f"{path.relative_to(REPO)} has {lines} lines (at most {MAX_LINES}): split it by subject")


def test_the_import_checker_sees_violations(tmp_path):
    """The checker itself: an upward, an absolute and a function-local import are all found."""
    bad = tmp_path / "sattn" / "patterns" / "sparse.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("from ..experiments import engine\nimport sattn\n\n\ndef f():\n"
                   "    from .criteria import check_rows\n    return check_rows\n")
    found = _imports("sattn.patterns.sparse", bad)
    assert (1, "sattn.experiments", False, True) in found
    assert (2, "sattn", False, False) in found
    assert (6, "sattn.patterns.criteria", True, True) in found
    assert _place("sattn.experiments")[0] > _place("sattn.patterns.sparse")[0]


def test_flat_api_is_complete_and_points_to_the_defining_modules():
    for name in sattn.__all__:
        obj = getattr(sattn, name)
        module = getattr(obj, "__module__", None)
        if module is None or not isinstance(obj, type) and not callable(obj):
            continue                              # constants (SETUPS, PROFILES)
        assert module.startswith("sattn.") and module != "sattn", (name, module)
        assert getattr(importlib.import_module(module), name) is obj, (name, module)
        assert not any(p.startswith("_") for p in module.split(".")[1:]), (
            f"sattn.{name} is defined in the private module {module}")


# ------------------------------------------------------------------ the rule of the flat API
#: Every module of the package, imported (the rule is about the objects, not the text).
LOADED = {m: importlib.import_module(m) for m, _ in MODULES if m not in ("sattn.__main__",)}
#: The modules with public names: every module but the package's root, the private ones and the
#: subpackages' __init__ files (which hold only a docstring, or re-export a subpackage's rooms).
PUBLIC_MODULES = {m: mod for m, mod in LOADED.items()
                  if m != "sattn" and not any(p.startswith("_") for p in m.split(".")[1:])
                  and hasattr(mod, "__all__") and not mod.__file__.endswith("__init__.py")}


def _public_names():
    """``(module, name, object)`` for every name in a module's ``__all__`` that it defines."""
    for m, mod in PUBLIC_MODULES.items():
        for name in mod.__all__:
            obj = getattr(mod, name)
            if getattr(obj, "__module__", m) == m or not callable(obj):
                yield m, name, obj


def test_every_module_lists_its_flat_names_first_and_the_root_imports_them_explicitly():
    """``__flat__`` is a prefix of ``__all__``; ``sattn/__init__.py`` imports every flat name
    explicitly (``from .x import a, b`` under ``if TYPE_CHECKING:``, which type checkers read) and
    lists it in a literal ``__all__``; both equal the union of the modules' ``__flat__`` lists."""
    for m, mod in PUBLIC_MODULES.items():
        assert hasattr(mod, "__flat__"), f"{m} has __all__ but no __flat__"
        assert list(mod.__all__[:len(mod.__flat__)]) == list(mod.__flat__), (
            f"{m}: __all__ must start with the __flat__ names (written once, as [*__flat__, ...])")
        assert len(set(mod.__all__)) == len(mod.__all__), f"{m}: a name twice in __all__"
    declared = {m: list(mod.__flat__) for m, mod in PUBLIC_MODULES.items() if mod.__flat__}
    imported = {}
    for name, m in sattn._FLAT_MODULES.items():
        imported.setdefault(m, []).append(name)
    assert imported == declared, "sattn/__init__.py must import each module's __flat__, in order"
    tree = ast.parse((PKG / "__init__.py").read_text())
    literal, = [node.value for node in tree.body if isinstance(node, ast.Assign)
                and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["__all__"]]
    assert isinstance(literal, ast.List), "sattn.__all__ is a literal list (what type checkers read)"
    assert [ast.literal_eval(e) for e in literal.elts] == sattn.__all__ == list(sattn._FLAT_MODULES)
    assert len(set(sattn.__all__)) == len(sattn.__all__), "a flat name is in two modules"
    for name, m in sattn._FLAT_MODULES.items():
        assert getattr(sattn, name) is getattr(LOADED[m], name), (m, name)


def test_the_flat_names_are_visible_to_a_type_checker():
    """Every flat name is imported by name in sattn/__init__.py (no ``globals().update``)."""
    tree = ast.parse((PKG / "__init__.py").read_text())
    names = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             for a in node.names}
    assert set(sattn.__all__) <= names
    built = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Call)
             and ast.unparse(n.func) in ("globals().update", "vars().update")]
    assert not built, f"the flat API is built at run time, out of a type checker's sight: {built}"


#: What ``import sattn`` may not load: the plotting and notebook stacks, and the heavy numerics
#: (they load when a function that needs them is first used).
HEAVY = ("matplotlib", "matplotlib.pyplot", "IPython", "ipywidgets", "scipy", "ml_dtypes",
         "distributed", "dask", "joblib", "numpy")


def test_import_sattn_is_light():
    """In a fresh interpreter ``import sattn`` loads none of HEAVY and no module of the package
    but its root and two small private helpers; the first use of a name loads its module."""
    code = ("import sys, json, sattn; before = sorted(sys.modules); sattn.heatmap; "
            "print(json.dumps([before, sorted(sys.modules)]))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=REPO, timeout=120)
    before, after = json.loads(res.stdout)
    assert not set(HEAVY) & set(before), sorted(set(HEAVY) & set(before))
    own = sorted(m for m in before if m == "sattn" or m.startswith("sattn."))
    assert own == ["sattn", "sattn._deprecation", "sattn._lazy"], own
    assert "importlib.metadata" not in before                 # sattn.__version__ reads it on use
    assert {"matplotlib.pyplot", "sattn.presentation.plotting"} <= set(after)
    assert not {"IPython", "ipywidgets"} & set(after), "plotting alone pulls in the widget stack"


@pytest.mark.parametrize("package", ["sattn.precision", "sattn.experiments.prediction",
                                     "sattn.experiments.acceptance"])
def test_a_module_split_into_a_package_keeps_its_import_paths(package):
    """``sattn.precision.X`` (and the two others) still work: the package re-exports every public
    name of its modules, taken from their own ``__all__``."""
    pkg = importlib.import_module(package)
    modules = [LOADED[m] for m in LOADED if m.startswith(package + ".")]
    assert modules, package
    names = [n for mod in modules for n in mod.__all__]
    assert sorted(pkg.__all__) == sorted(names) and len(set(names)) == len(names)
    for mod in modules:
        for n in mod.__all__:
            assert getattr(pkg, n) is getattr(mod, n), (package, n)


def _sattn_classes(hint):
    out = set()
    if isinstance(hint, type) and hint.__module__.startswith("sattn."):
        out.add(hint)
    for arg in typing.get_args(hint):
        out |= _sattn_classes(arg)
    return out


def test_every_public_function_and_class_is_in_its_modules_all():
    """A name without a leading underscore is public: it is in ``__all__`` (flat or module-only)."""
    missing = {}
    for m, mod in PUBLIC_MODULES.items():
        names = [n for n, obj in vars(mod).items() if not n.startswith("_")
                 and (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == m
                 and n not in mod.__all__]
        if names:
            missing[m] = names
    assert not missing, f"public but in no __all__ (add it, or make it private): {missing}"


def test_classes_that_flat_functions_return_or_take_are_flat():
    """The rule's second clause: what a flat function or a flat class's method returns or takes."""
    flat = set(sattn.__all__)
    missing = set()
    for name in sattn.__all__:
        obj = getattr(sattn, name)
        if isinstance(obj, type):
            funcs = [f for k, f in vars(obj).items() if inspect.isfunction(f) and not k.startswith("_")]
        else:
            funcs = [obj] if inspect.isfunction(obj) else []
        for f in funcs:
            for hint in typing.get_type_hints(f).values():
                missing |= {(name, c.__name__) for c in _sattn_classes(hint) if c.__name__ not in flat}
    assert not missing, f"(flat name, the class it returns or takes, which is not flat): {missing}"


def test_every_exception_and_warning_is_flat():
    """The rule's third clause: a reader catches the package's errors as ``sattn.<Error>``."""
    errors = {n for _, n, obj in _public_names() if isinstance(obj, type) and issubclass(obj, BaseException)}
    assert errors and errors <= set(sattn.__all__), sorted(errors - set(sattn.__all__))


#: What stays in its module, and why (the rule's last clause): machinery, not subject.
MODULE_ONLY = {
    "sattn.experiments.acceptance.design": "the pre-registered experiment, reached as a module",
    "sattn.experiments.acceptance.analysis": "its registered analysis, reached as a module",
    "sattn.runs.bench": "the benchmark command",
    "sattn.runs.cluster": "the Dask runner of the engine",
    "sattn.runs.host": "the process a run runs in",
    "sattn.runs.runner": "the one loop of every experiment",
    "sattn.experiments.acceptance.robust": "the analyses beside the registered one, as a module",
    "sattn.experiments.acceptance.out_of_sample": "the registered out-of-sample decision, as a module",
    "sattn.experiments.prediction.row_model": "the one-row model behind the flat predictions",
    "sattn.experiments.prediction.row_exact": "the exact evaluation behind method='exact'",
    "sattn.experiments.acceptance.row_model_test": "the row model's registered test, reached as a module",
    "sattn.presentation.lab": "the lab command",
    "sattn.presentation.lab_contents": "the contents manager of the lab command",
}


def test_machinery_modules_have_no_flat_names_and_the_rest_have_some():
    for m, mod in PUBLIC_MODULES.items():
        if not hasattr(mod, "__flat__"):
            continue
        if m in MODULE_ONLY:
            assert not mod.__flat__, f"{m} is machinery ({MODULE_ONLY[m]}): nothing of it is flat"
        else:
            assert mod.__flat__, f"{m}: a subject module with no flat name (add it to MODULE_ONLY?)"


def test_chapters_call_only_flat_names():
    """Every ``sattn.<name>`` a chapter's code uses is flat, a subpackage or the acceptance module."""
    modules = {"experiments", "patterns", "universality", "presentation", "precision", "frontier",
               "codes"}
    bad = {}
    for md in sorted((REPO / "chapters").glob("*.md")):
        cells = re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", md.read_text(), re.S)
        used = {n for c in cells for n in re.findall(r"\bsattn\.(\w+)", c)}
        code = [re.sub(r"#[^\n]*", "", c) for c in cells]
        names = {n for c in code for m in re.finditer(r"from sattn import (\([^)]*\)|[^\n]*)", c)
                 for n in re.findall(r"\w+", m.group(1))}
        wrong = sorted((used | names) - set(sattn.__all__) - modules - {"__version__"})
        if wrong:
            bad[md.name] = wrong
    assert not bad, f"chapters use names that are not flat: {bad}"


def test_version_comes_from_the_package_metadata():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert sattn.__version__ == version("sattn") == meta["version"]
    assert _version._source_version() == meta["version"]


def test_the_version_is_read_in_one_place():
    """Only sattn/_version.py reads ``project.version``; tools/book_version.py loads that file."""
    readers = [str(p.relative_to(REPO)) for folder in ("sattn", "tools")
               for p in sorted((REPO / folder).rglob("*.py"))
               if re.search(r"""\[["']project["']\]\s*\[["']version["']\]""", p.read_text())]
    assert readers == ["sattn/_version.py"], readers


def test_chapters_use_the_flat_api_only():
    """Chapters import ``sattn`` or names from it, never its modules (private ones least of all)."""
    pat = re.compile(r"^\s*(?:from\s+sattn\.\w|import\s+sattn\.)|\bsattn\._\w", re.M)
    bad = {}
    for md in sorted((REPO / "chapters").glob("*.md")):
        cells = re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", md.read_text(), re.S)
        hits = [m.group(0).strip() for c in cells for m in pat.finditer(c)]
        if hits:
            bad[md.name] = hits
    assert not bad, f"chapters must use `import sattn` / `from sattn import name`: {bad}"


@pytest.mark.slow
def test_command_line_runs_outside_the_repository(tmp_path):
    res = subprocess.run([sys.executable, "-m", "sattn", "setups", "--profile", "quick"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "k1-g1-e3-0.9" in res.stdout


# ------------------------------------------------------------------ the naming rule for checks
def _functions(prefix):
    """``(module, name, function)`` for every public function named ``prefix*``."""
    return [(m, n, obj) for m, n, obj in _public_names()
            if n.startswith(prefix) and inspect.isfunction(obj)]


def test_every_check_returns_a_report():
    """``check_*`` (and ``*_report``) return a :class:`sattn.Result`; ``sattn.check`` is the one
    documented exception (the chapters' assertion)."""
    funcs = _functions("check_") + [(m, n, o) for m, n, o in _public_names()
                                   if n.endswith("_report") and inspect.isfunction(o)]
    assert len(funcs) >= 10, funcs
    bad = {}
    for m, n, f in funcs:
        if m == "sattn.results" and n == "check":
            continue
        ret = typing.get_type_hints(f).get("return")
        if not (isinstance(ret, type) and issubclass(ret, sattn.Result)):
            bad[f"{m}.{n}"] = ret
    assert not bad, f"check_* must return a report (a sattn.Result), or be named validate_*: {bad}"


#: A bad input for every public ``validate_*``: ``(args, kwargs, the exception it raises)``.
_SQ = np.array([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.2, 0.3, 0.5]])
BAD_INPUTS = {
    "validate_weights": ((np.ones((3, 2)), np.ones((3, 2)), np.ones((2, 2))), {}, ValueError),
    "validate_heads": (([(np.ones((1, 3)),) * 3 + (np.ones((3, 1)),)], 2, False), {}, ValueError),
    "validate_ffn": (("abc", 2), {}, (TypeError, ValueError)),
    "validate_k_nonzero_bounded": ((_SQ, 1), {}, sattn.PatternError),
    "validate_gamma_variation_bounded": ((_SQ, 2.0), {}, sattn.PatternError),
    "validate_right_stochastic": ((2 * _SQ,), {}, sattn.PatternError),
    "validate_lower_triangular": ((_SQ,), {}, sattn.PatternError),
    "validate_tolerances": ((1.0, 1.5), {}, ValueError),
    "validate_target": ((-_SQ,), {}, ValueError),
    "validate_separated": (([np.array([[1.0, 1.0], [0.0, 0.0]])],), {}, ValueError),
    "validate_consistent_labels": (([np.eye(2), np.eye(2)], [np.eye(2), np.eye(2)[:, ::-1]]), {},
                                   ValueError),
    "validate_draw_sizes": ((0, 1, 1, 1, 1), {}, ValueError),
    "validate_hardmax_d": ((0,), {}, ValueError),
    "validate_head_size": ((0,), {}, ValueError),
    "validate_scheduler": (("nope", 2), {}, ValueError),
    "validate_lengths": (([256, 128],), {}, sattn.ExperimentError),
    "validate_grid": (("k1-g1-e3-0.9", (40, 20, 4), (128,)), {}, sattn.ExperimentError),
    "validate_model": (("not a model",), {}, TypeError),
    "validate_model_width": ((64, 1, 2), {}, ValueError),
    "validate_n_draws": ((0,), {}, ValueError),
    "validate_n_samples": ((10,), {}, ValueError),
    "validate_support_logits": (([1.0, -1.0],), {}, ValueError),
    "validate_output_file": ((REPO,), {}, sattn.StoreError),
    "validate_estimates": (([10.0, 100.0, 1000.0], [1.0, 2.0, 3.0], [0.1, 0.0, 0.1]), {}, ValueError),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_every_validate_raises_on_a_bad_input(name):
    """``validate_*`` raises on failure; every public one is in BAD_INPUTS (checked below)."""
    (m, _, f), = [t for t in _functions("validate_") if t[1] == name]
    args, kwargs, exc = BAD_INPUTS[name]
    with pytest.raises(exc):
        f(*args, **kwargs)


def test_bad_inputs_cover_every_validate_and_no_function_is_named_require():
    names = {n for _, n, _ in _functions("validate_")}
    assert names == set(BAD_INPUTS), (names ^ set(BAD_INPUTS))
    assert not _functions("require_"), "a raising function is validate_*, not require_*"


def _old_names():
    return [(m, old, new) for m, names in _deprecation.RENAMED.items() for old, new in names.items()]


@pytest.mark.parametrize("module,old,new", _old_names(), ids=[f"{m}.{o}" for m, o, _ in _old_names()])
def test_every_old_name_warns_and_is_the_new_function(module, old, new):
    """For one release: ``module.<old>`` (and ``sattn.<old>`` when the new name is flat) is the
    new function, reached with a DeprecationWarning that names it; the old name is in no list."""
    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=rf"{module}\.{old} is deprecated.*{module}\.{new}\b"):
        obj = getattr(mod, old)
    assert obj is getattr(mod, new)
    assert old not in mod.__all__ and old not in getattr(mod, "__flat__", []) and old not in vars(mod)
    if new in sattn.__all__:
        assert sattn.DEPRECATED[old] == new
        with pytest.warns(DeprecationWarning, match=rf"sattn\.{old} is deprecated.*sattn\.{new}\b"):
            assert getattr(sattn, old) is getattr(sattn, new)
        with pytest.warns(DeprecationWarning):
            exec(f"from sattn import {old} as alias", ns := {})
        assert ns["alias"] is getattr(sattn, new)
    assert old not in sattn.__all__
    assert set(sattn.DEPRECATED) == {o for m, o, n in _old_names() if n in sattn.__all__}


def test_an_old_name_gives_the_same_result_and_unknown_names_still_fail():
    A = np.array([[0.5, 0.5], [0.0, 1.0]])
    with pytest.warns(DeprecationWarning):
        old = sattn.require_k_nonzero_bounded
    assert old(A, 2).ok == sattn.validate_k_nonzero_bounded(A, 2).ok
    with pytest.warns(DeprecationWarning):
        fit = sattn.fit_log
    L, d = np.array([64.0, 128.0, 256.0]), np.array([3.0, 4.0, 5.0])
    assert fit(L, d) == sattn.fit_dmin_log(L, d)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        sattn.no_such_name
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        importlib.import_module("sattn.patterns.sparse").no_such_name


def test_a_validate_beside_a_check_takes_the_same_arguments():
    """``validate_<p>`` is ``check_<p>(...).raise_if_failed()``: same parameters, same defaults."""
    pairs = [(m, n) for m, n, _ in _functions("validate_")
             if "check_" + n[len("validate_"):] in vars(LOADED[m])]
    assert len(pairs) >= 4, pairs
    for m, n in pairs:
        v, c = getattr(LOADED[m], n), getattr(LOADED[m], "check_" + n[len("validate_"):])
        assert inspect.signature(v).parameters == inspect.signature(c).parameters, (m, n)
