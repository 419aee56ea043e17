"""``python -m bench.harness``: see cli.py, or ``--help``."""

import sys

from .cli import main

sys.exit(main())
