"""`python -m probes`: see `probes.cli`."""

import sys

from probes.cli import main

sys.exit(main())
