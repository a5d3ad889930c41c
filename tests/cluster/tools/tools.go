//go:build tools

// Package tools pins the upstream binaries that kpysched's test harness runs:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler (the yardstick),
// kube-proxy, kubectl, helm, and the real node's kubelet (tests/cluster/realnode).
// The kubelet is here rather than in a module of its own so that it builds with
// the control plane's dependency versions and reuses its compiled packages. The
// build tag keeps this file out of every build; it exists so `go mod tidy`
// records the exact dependency graph of these programs in go.sum.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "helm.sh/helm/v3/cmd/helm"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
