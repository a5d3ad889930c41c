//go:build tools

// Package tools pins release 1.37's control plane for kpysched's test harness:
// kube-apiserver, kube-controller-manager and kube-scheduler v1.37.2 (the yardstick
// on a 1.37 cluster). Everything else a cluster runs (etcd, kubectl, helm, KWOK, the
// real node) is shared with release 1.36 and pinned in ../tools. etcd is imported
// only because v1.37.2 requires etcd v3.7 libraries and `go mod tidy` keeps the pin
// whole with it; the harness runs the shared etcd v3.6, which v1.37 supports. The
// build tag keeps this file out of every build.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
