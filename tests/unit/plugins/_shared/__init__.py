"""Tests of kpysched/plugins/_shared/, one file per module there (test_<module>.py)."""
