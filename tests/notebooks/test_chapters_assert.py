"""Chapters assert what they print: a cell that prints a verdict also checks it.

nbval only compares a cell's output with the stored one, so a stored ``False`` that the execute
script saved again passes. The house style (``shared/style.md``, "Assert the claim, print the
evidence") therefore asks every cell that prints a boolean verdict to assert it in the same cell,
with ``sattn.check(...)`` or ``assert``. This module checks that statically, on the MyST sources.

A *verdict* is an expression whose value is a truth value: a comparison, ``not ...``, ``and``/``or``
of verdicts, ``bool(...)``, ``all(...)``, ``any(...)``, ``np.all/any/allclose/isclose/array_equal``,
the attributes ``.ok``, ``.holds``, ``.success`` and ``.passed`` of a report, or a name assigned from
a verdict earlier in the chapter. A cell *prints* one when a ``print`` argument (or a value
formatted into an f-string argument) is a verdict, when its last expression is one (the notebook
displays it), or when it formats one by hand (``"PASS" if rep.ok else "FAIL"``). Cells tagged
``raises-exception`` are exempt: they show a deliberate failure.
"""

from __future__ import annotations

import ast
import glob
import os
import re

import jupytext
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHAPTERS = sorted(
    p for p in glob.glob(os.path.join(ROOT, "chapters", "*.md")) if "jupytext:" in open(p).read(400)
)

VERDICT_CALLS = {"all", "any", "bool", "allclose", "isclose", "array_equal", "array_equiv"}
VERDICT_ATTRS = {"ok", "holds", "success", "passed"}
CHECK_CALLS = {"check"}
VERDICT_WORDS = re.compile(r"\b(PASS|FAIL|VIOLATED|OK|ok|yes|no|True|False|holds|fails?)\b")


def _call_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def is_verdict(node: ast.AST, bool_names: set[str]) -> bool:
    """Whether the value of ``node`` is a truth value that a reader would read as a verdict."""
    if isinstance(node, ast.Compare):
        return True
    if isinstance(node, ast.BoolOp):
        return any(is_verdict(v, bool_names) for v in node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return True
    if isinstance(node, ast.Call):
        return _call_name(node) in VERDICT_CALLS
    if isinstance(node, ast.Attribute):
        return node.attr in VERDICT_ATTRS
    if isinstance(node, ast.Name):
        return node.id in bool_names
    if isinstance(node, ast.IfExp):  # "PASS" if rep.ok else "FAIL": a verdict formatted by hand
        return hand_formatted(node, bool_names)
    if isinstance(node, ast.JoinedStr):
        return any(isinstance(v, ast.FormattedValue) and is_verdict(v.value, bool_names)
                   for v in node.values)
    if isinstance(node, ast.BinOp):  # "text" + f"{...}"
        return is_verdict(node.left, bool_names) or is_verdict(node.right, bool_names)
    return False


def _text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant))
    return None


def hand_formatted(node: ast.IfExp, bool_names: set[str]) -> bool:
    """``"PASS" if ok else "FAIL"``: both branches text, one of them a verdict word."""
    texts = [_text(node.body), _text(node.orelse)]
    return (None not in texts and any(VERDICT_WORDS.search(t) for t in texts)
            and is_verdict(node.test, bool_names))


def _assigned_verdicts(tree: ast.AST, bool_names: set[str]) -> None:
    """Add the names that ``tree`` assigns from a verdict (``ok = rep.ok``) to ``bool_names``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and is_verdict(node.value, bool_names):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bool_names.add(target.id)


def _asserts(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            return True
        if isinstance(node, ast.Call) and _call_name(node) in CHECK_CALLS:
            return True
    return False


def printed_verdicts(source: str, bool_names: set[str]) -> list[str]:
    """The verdicts a cell shows, as source snippets (empty if it shows none)."""
    tree = ast.parse(source)
    _assigned_verdicts(tree, bool_names)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node) == "print":
            found += [ast.unparse(a) for a in node.args if is_verdict(a, bool_names)]
        elif isinstance(node, ast.IfExp) and hand_formatted(node, bool_names):
            found.append(ast.unparse(node))
    if tree.body and isinstance(tree.body[-1], ast.Expr) and is_verdict(tree.body[-1].value, bool_names):
        found.append(ast.unparse(tree.body[-1].value))
    return found


def unchecked_cells(cells) -> list[tuple[int, list[str]]]:
    """``(index, verdicts)`` for every code cell that shows a verdict but asserts nothing.

    ``cells`` are ``(source, tags)`` pairs of the code cells, in order.
    """
    bool_names: set[str] = set()
    bad = []
    for i, (source, tags) in enumerate(cells):
        if "raises-exception" in tags:
            continue
        lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        shown = printed_verdicts("\n".join(lines), bool_names)
        if shown and not _asserts(ast.parse("\n".join(lines))):
            bad.append((i, shown))
    return bad


def _code_cells(md: str):
    nb = jupytext.read(md)
    return [(c.source, c.metadata.get("tags", [])) for c in nb.cells if c.cell_type == "code"]


@pytest.mark.parametrize("md", CHAPTERS, ids=os.path.basename)
def test_printed_verdicts_are_asserted(md):
    bad = unchecked_cells(_code_cells(md))
    report = "\n".join(f"  code cell {i}: prints {', '.join(v)}" for i, v in bad)
    assert not bad, (
        f"{os.path.relpath(md, ROOT)}: cells print a verdict without asserting it "
        f"(add sattn.check(condition, 'what must hold') to the cell):\n{report}"
    )


# --- the checker itself can fail --------------------------------------------------------------

def test_checker_flags_a_printed_comparison():
    bad = 'err = 1e-14\nprint("agrees to 1e-12:", err < 1e-12)\n'
    assert unchecked_cells([(bad, [])]) == [(0, ["err < 1e-12"])]


def test_checker_flags_report_attributes_hand_formatted_verdicts_and_bool_names():
    cells = [
        ("ok = rep.ok\n", []),
        ("print(ok)\n", []),                                              # a bool variable
        ('print(f"criteria {\'PASS\' if rep.ok else \'FAIL\'}")\n', []),  # PASS/FAIL by hand
        ("np.allclose(a, b)\n", []),                                      # displayed last value
        ('print("all rows:", all(r > 0 for r in rows))\n', []),
    ]
    assert [i for i, _ in unchecked_cells(cells)] == [1, 2, 3, 4]


def test_checker_passes_asserted_cells_and_plain_numbers():
    cells = [
        ('ok = err < 1e-12\nprint("agrees:", ok)\nsattn.check(ok, "agrees to 1e-12")\n', []),
        ('print(rep.ok)\nassert rep.ok, rep.message\n', []),
        ('print(f"weight {M[S == 1].sum():.3f}")\n', []),   # a comparison inside an index is no verdict
        ("sattn.usam(X, W, W) > 0\n", ["raises-exception"]),  # deliberate failures are exempt
    ]
    assert unchecked_cells(cells) == []
