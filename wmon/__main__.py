"""`python -m wmon`: the `wmon` command."""

import sys

from wmon.main import main

sys.exit(main())
