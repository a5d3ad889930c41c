"""Tests of kpysched/framework/runtime/, the engine: Framework against upstream's
frameworkImpl (test_framework.py) and the two-pass filter's node-only shortcut."""
