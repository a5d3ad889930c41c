"""Tests of kpysched/plugins/: single-file plugins here (test_<name>.py), package plugins in
a folder of the same name; hints.py and runner.py are helpers the plugin tests share."""
