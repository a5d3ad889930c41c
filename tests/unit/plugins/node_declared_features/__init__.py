"""Tests of kpysched/plugins/node_declared_features/, one file per module there."""
