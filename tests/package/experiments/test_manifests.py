"""Shipped manifests and the ones a run writes record commands without machine paths."""

import json
from pathlib import Path

import pytest

from sattn.runs.store import command_line

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("argv, expected", [
    (["/home/someone/book/sattn/__main__.py", "reproduce", "fig3", "--jobs", "2"],
     "python -m sattn reproduce fig3 --jobs 2"),
    (["/opt/venv/bin/sattn-tool", "x"], "sattn-tool x"),
    ([], ""),
])
def test_command_line_drops_the_folder(argv, expected):
    assert command_line(argv) == expected


def _strings(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)
    elif isinstance(obj, str):
        yield obj


@pytest.mark.parametrize("manifest", sorted(p.relative_to(REPO).as_posix()
                                            for p in (REPO / "data").rglob("*manifest*.json")))
def test_shipped_manifests_hold_no_absolute_path(manifest):
    data = json.loads((REPO / manifest).read_text())
    bad = [s for s in _strings(data) if s.startswith("/") or "/work/" in s or "/home/" in s or "/root/" in s]
    assert not bad, f"{manifest} records machine paths: {bad[:3]}"
