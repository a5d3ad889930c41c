"""Side-by-side benchmarks of kpysched and upstream kube-scheduler.

`python -m benchmarks run --workload basic --nodes 1000 --schedulers kpysched,kube-scheduler`
starts a fresh loopback etcd + kube-apiserver for every scheduler run (reusing
tests.cluster), fills it with scheduler_perf-shaped nodes and pods, runs exactly one
scheduler, observes bindings by watch and reads each scheduler's own metrics, its
/proc CPU and peak RSS and the API server's per-user request counters. See
docs/benchmarks.md for the method and the latest figures.
"""
