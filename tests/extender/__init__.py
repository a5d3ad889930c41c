"""A scheduler extender written for the tests: a small HTTP(S) server on loopback
speaking kube-scheduler's extender API (k8s.io/kube-scheduler/extender/v1), whose
answers follow node and pod labels (rules.py), with faults set per route and verb,
and which records every request body it is sent (server.py)."""
