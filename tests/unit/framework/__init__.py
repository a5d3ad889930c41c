"""Tests of kpysched/framework/, the contract (test_<module>.py); fake_plugins.py holds
scripted plugins and a Framework builder the runtime, algorithm and decision tests share."""
