"""Tests of kpysched/config/flags/: the pflag parser and what a command line means."""
