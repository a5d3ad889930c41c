#!/usr/bin/env bash
# Install everything kpysched and its tests need on a fresh machine:
# a virtualenv with the package and dev tools, and the Go-built upstream binaries
# (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, helm and
# KWOK) in ~/.cache/kpysched (built once): the control plane of each Kubernetes
# release the harness runs, v1.36.4 and v1.37.2 (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
# Exact versions, each file checked against its hashes, from constraints.txt
# (scripts/update-constraints.sh re-resolves them): pip itself, the build backend,
# kpysched's dependencies and the dev tools. pip refuses --require-hashes for a local
# directory, so kpysched (and the tests' plugin package) come after, with --no-deps
# (everything they need is installed already) and --no-build-isolation (the locked
# setuptools builds them; an isolated build would fetch one unchecked).
.venv/bin/python -m pip install --quiet --require-hashes -r constraints.txt
.venv/bin/python -m pip install --quiet --no-deps --no-build-isolation -e '.[dev]'
if [ -d tests/plugin_package ]; then
    .venv/bin/python -m pip install --quiet --no-deps --no-build-isolation -e tests/plugin_package
fi
# Nothing required is missing or at another version than the lock's.
.venv/bin/python -m pip check
# KPYSCHED_SETUP_CORE_ONLY=1 (scripts/test.sh): only what a cluster of the selected
# release (KPYSCHED_TEST_RELEASE, else 1.37) needs to start, and its kube-scheduler
# (tests/cluster/build.py CORE); the caller builds the rest (control planes of other releases,
# kubectl, helm...) in the background. Without it, everything.
if [ -n "${KPYSCHED_SETUP_CORE_ONLY:-}" ]; then
    .venv/bin/python -m tests.cluster build --core
else
    .venv/bin/python -m tests.cluster build
fi
# The real node (`up --with-node`, tests/e2e/test_real_node.py): kubelet, containerd,
# runc and the CNI plugins, built from Go modules into the same cache. runc links
# libseccomp so pods' seccomp profiles work; its headers come from Debian. kube-proxy
# (tests/cluster/pod_network.py, for the in-cluster e2e) needs the iptables commands,
# which a minimal Debian lacks.
debian_packages=()
[ -f /usr/include/seccomp.h ] || debian_packages+=(libseccomp-dev)
command -v iptables >/dev/null || [ -x /usr/sbin/iptables ] || debian_packages+=(iptables)
if [ "${#debian_packages[@]}" -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${debian_packages[@]}" >/dev/null
fi
if [ -z "${KPYSCHED_SETUP_CORE_ONLY:-}" ]; then
    .venv/bin/python -m tests.cluster.realnode build
fi
