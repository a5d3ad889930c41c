"""Scheduler extenders (KubeSchedulerConfiguration `extenders:`), called over HTTP as
kube-scheduler calls them.

config/extenders.py reads the configuration; here live the transport (kept-alive
connections on the calling loop), the request and answer bodies (wire),
one extender's verbs (extender), the ordered set a scheduler uses and how a cycle
waits on it (registry), and the steps of a cycle that ask them (steps). The
scheduling loop, the binding cycle and DefaultPreemption (through the handle) call
them; nothing here imports scheduling/.
"""
