"""``python -m bladefl.cli``: the same as the ``bladefl`` command."""

import sys

from bladefl.cli import main

sys.exit(main())
