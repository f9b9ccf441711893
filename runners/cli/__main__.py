"""``python -m runners.cli``: the same as the ``tba`` console script (the Makefile's TBA uses the script)."""

import sys

from .main import main

sys.exit(main())
