"""Tests of kpysched/plugins/node_affinity/, one file per module there (test_<module>.py)."""
