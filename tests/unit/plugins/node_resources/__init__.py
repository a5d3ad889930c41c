"""Tests of kpysched/plugins/node_resources/, one file per module there (test_<module>.py)."""
