"""``python -m olacore``: see :mod:`olacore.cli`."""

import sys

from olacore.cli import main

sys.exit(main())
