"""Tests of kpysched/writes/: each writer against a recording API double, and the Writes bundle."""
