#!/usr/bin/env bash
# Set up (idempotent) and run the whole suite: lint, types, unit and e2e tests.
# The e2e tests start their own etcd + kube-apiserver on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
KPYSCHED_SETUP_CORE_ONLY=1 bash scripts/setup.sh
# Each kube-apiserver and kube-controller-manager holds 6 inotify instances (its
# certificate and key file watchers), and a run has up to a dozen of them up at once
# (two workers' session clusters, their twins and v1.36 clusters, a module's own)
# beside Kueue's, containerd's and the kubelet's. The kernel's default per-user limit
# of 128 then refuses the next one as "too many open files": Kueue exited so at
# start-up in the cold run of 28 November. Raise the limit as kind's docs advise for
# several clusters on one machine; never lower it. Without the right to (not root, a
# read-only /proc/sys), say so and go on.
inotify_limit=/proc/sys/fs/inotify/max_user_instances
if [ "$(cat "$inotify_limit")" -lt 512 ]; then
    if { echo 512 >"$inotify_limit"; } 2>/dev/null; then
        echo "fs.inotify.max_user_instances raised to 512 for the test clusters"
    else
        echo "warning: fs.inotify.max_user_instances is $(cat "$inotify_limit");" \
            "with many clusters up, a component may fail with 'too many open files'" >&2
    fi
fi
# What only some tests need (the other releases' control planes, kubectl, helm,
# Prometheus, the dashboard linter, kube-proxy, Kueue, Karpenter, and the real node's
# kubelet, containerd, runc and CNI plugins) builds in the background while the suite
# runs, in the order the files that need them are handed out (tests/cluster/build.py
# BINARIES); a test that needs one of them waits for it under the cache's build lock.
# On a warm cache this finds everything built at once.
build_log="$(mktemp -t kpysched-build.XXXXXX.log)"
(.venv/bin/python -m tests.cluster build && .venv/bin/python -m tests.cluster.realnode build) \
    >"$build_log" 2>&1 &
builder=$!
# ruff, mypy and the layer contract (pyproject [tool.importlinter], docs/architecture.md)
# run beside the tests, which need nothing of theirs (~15 s of a run's start before);
# their output comes after the tests', and any failure of theirs fails the run.
lint_log="$(mktemp -t kpysched-lint.XXXXXX.log)"
(.venv/bin/ruff check . && .venv/bin/mypy && .venv/bin/lint-imports) >"$lint_log" 2>&1 &
linter=$!
status=0
{
    # Two workers, whole files each: e2e tests mostly wait on real components, and each
    # worker gets its own session cluster (and, once it runs a differential file, that
    # cluster's twin), so files never see each other's objects. KPYSCHED_TEST_WORKERS
    # sets another number (docs/testing.md: CI time).
    .venv/bin/python -m pytest -n "${KPYSCHED_TEST_WORKERS:-2}" --dist loadfile \
        -m "not soak" "$@" &&
    # The short reliability soak (tests/soak) alone, so that no other test competes
    # with the schedulers it times; with arguments, only what they select runs.
    if [ "$#" -eq 0 ]; then .venv/bin/python -m pytest -m soak tests/soak; fi
} || status=$?
lint_status=0
wait "$linter" || lint_status=$?
cat "$lint_log"
if [ "$lint_status" -ne 0 ]; then
    echo "ruff, mypy or lint-imports failed (above)" >&2
    status=1
fi
if ! wait "$builder"; then
    echo "background build failed; last lines of $build_log:" >&2
    tail -n 40 "$build_log" >&2
    status=1
fi
exit "$status"
