"""Tests of kpysched/plugins/inter_pod_affinity/, one file per module there (test_<module>.py)."""
