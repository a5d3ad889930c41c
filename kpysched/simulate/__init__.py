"""`kpysched snapshot` and `kpysched simulate`: where pods would go, decided by the
same framework, plugins and algorithm as the live scheduler, in-process, against a
cluster read once (list only) or a snapshot file, without writing anything."""
