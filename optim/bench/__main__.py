"""`python -m optim.bench`: the treezoo-bench command line."""

import sys

from optim.bench.runner import main

sys.exit(main())
