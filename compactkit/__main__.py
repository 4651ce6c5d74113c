"""``python -m compactkit``: the command line."""

import sys

from compactkit.cli import main

sys.exit(main())
