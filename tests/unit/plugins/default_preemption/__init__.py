"""Tests of kpysched/plugins/default_preemption/, one file per module there (test_<module>.py)."""
