"""The scheduling core: the loop and everything one pod's (or one pod group's) cycle runs.

Placeholder docstring, completed once the loop is split.
"""
