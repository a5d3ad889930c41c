"""One Hypothesis profile for the fuzz tests, the same in CI and at a desk: derandomized
(the same examples every run, so a failure is never a fluke of the seed), no deadline
(two cores shared with another pytest worker make timings meaningless) and a budget
that keeps the whole folder well under a minute. KPYSCHED_FUZZ_EXAMPLES raises it for
a longer search by hand."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "kpysched-fuzz",
    derandomize=True,
    deadline=None,
    max_examples=int(os.environ.get("KPYSCHED_FUZZ_EXAMPLES", "100")),
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("kpysched-fuzz")
