"""``python -m planner``: see :mod:`planner.cli.main`."""

import sys

from planner.cli.main import main

sys.exit(main())
