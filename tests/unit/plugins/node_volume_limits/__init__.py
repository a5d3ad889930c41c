"""Tests of kpysched/plugins/node_volume_limits/, one file per module there (test_<module>.py)."""
