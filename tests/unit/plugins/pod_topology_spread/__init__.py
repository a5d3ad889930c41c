"""Tests of kpysched/plugins/pod_topology_spread/, one file per module there (test_<module>.py)."""
