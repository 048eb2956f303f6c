"""IPython startup file of ``make test-perturbed``: perturbed arithmetic in every chapter's kernel.

Copied into ``$IPYTHONDIR/profile_default/startup/`` by the Makefile; the kernel runs it before
the first cell. ``BOOK_ROOT`` names the repository (tests/perturbed_arithmetic.py is imported
from there).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.environ["BOOK_ROOT"], "tests"))
import perturbed_arithmetic  # noqa: E402

perturbed_arithmetic.install()
