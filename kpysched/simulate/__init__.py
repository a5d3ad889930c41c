"""`kpysched snapshot` and `kpysched simulate`: where pods would go, decided by the
same framework, plugins and algorithm as the live scheduler, in-process, against a
cluster read once (list only) or a snapshot file, without writing anything.

A top-level room beside app.py: it may import everything below it (config/,
objects/, informers/, framework/, plugins/, scheduling/, decisions/, app's wiring)
and the API client to list the cluster; nothing imports it but kpysched.cli."""
