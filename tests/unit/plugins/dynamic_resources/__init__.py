"""Tests of kpysched/plugins/dynamic_resources/, one file per module there (test_<module>.py)."""
