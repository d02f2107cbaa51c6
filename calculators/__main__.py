"""`python -m calculators`: see calculators.cli."""

import sys

from calculators.cli import main

sys.exit(main())
