"""`python -m optim ...` is the `treezoo` command."""

import sys

from optim.cli import main

sys.exit(main())
