//go:build tools

// Package tools pins the kubelet of the real test node at the same Kubernetes
// release as the rest of the harness. It is a module of its own because the
// kubelet pulls in dependencies (cAdvisor, CRI client, cgroup managers) that the
// control-plane module does not need. The build tag keeps this file out of every
// build; it exists so `go mod tidy` records the kubelet's dependency graph.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kubelet"
)
