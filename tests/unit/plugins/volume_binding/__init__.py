"""Tests of kpysched/plugins/volume_binding/, one file per module there (test_<module>.py)."""
