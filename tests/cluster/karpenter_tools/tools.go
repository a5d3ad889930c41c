//go:build tools

// Package tools pins Karpenter's KWOK provider (sigs.k8s.io/karpenter/kwok), the
// node autoscaler kpysched's e2e tests run beside it (tests/cluster/karpenter.py).
// A module of its own, so Karpenter's dependency graph never moves the versions the
// pinned Kubernetes binaries are built with.
package tools

import (
	_ "sigs.k8s.io/karpenter/kwok"
)
