"""`python -m benchmarks run --workload basic --nodes 1000 ...` (see benchmarks.cli)."""

import sys

from benchmarks.cli import main

sys.exit(main())
