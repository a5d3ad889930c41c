"""Tests of kpysched/explain/: the client that asks the scheduler and the renderer."""
