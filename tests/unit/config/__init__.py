"""Tests of kpysched/config/, one file per module there (test_<module>.py); flags/
for config/flags/; fakes.py holds a small plugin registry for the profile tests."""
