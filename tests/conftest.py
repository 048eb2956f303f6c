"""Makes ``tests/reliability.py`` importable from every test folder (``from reliability import record``)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
