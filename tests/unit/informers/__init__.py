"""Tests of kpysched/informers/, one file per module there (test_<module>.py)."""
