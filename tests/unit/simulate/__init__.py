"""Tests of kpysched/simulate/: expanding workloads to pods, the snapshot round trip
and the simulation runner."""
