"""`python -m optim.bench`: the treezoo-bench command line."""

import sys

from optim.bench import main

sys.exit(main())
