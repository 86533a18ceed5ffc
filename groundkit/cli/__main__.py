"""``python -m groundkit.cli``: the ``groundkit`` command, for an environment without its script on PATH."""

import sys

from groundkit.cli import main

sys.exit(main())
