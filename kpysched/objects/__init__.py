"""Slim typed views of the API objects, decoded from raw JSON with msgspec, and the
arithmetic on them: core/v1 and friends (api.py), the DRA objects of resource.k8s.io
(dra.py), storage (storage.py), scheduling.k8s.io and scheduler-plugins PodGroups
(scheduling.py, coscheduling.py), PodInfo (pod.py), resource vectors and pod
requests (resource_vectors.py), quantities, durations, labels, taints, pod affinity
terms and extended resource classes.

The lowest layer: imports nothing else of kpysched.
"""
