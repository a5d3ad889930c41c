"""Tests of kpysched/objects/, one file per module there (test_<module>.py, with a
suffix where one module has several)."""
