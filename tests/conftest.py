"""Makes ``tests/reliability.py`` importable from every test folder (``from reliability import record``)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` run first (a stable sort: the order is otherwise unchanged). Under
    ``-n 2`` a long test collected last, such as the wheel test, would run alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
