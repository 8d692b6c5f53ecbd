"""`python -m benchmarks`, from a checkout: the benchmarks."""

import sys

from benchmarks import main

sys.exit(main())
