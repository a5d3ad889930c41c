"""Tests of kpysched/plugins/coscheduling/, one file per module there (test_<module>.py)."""
