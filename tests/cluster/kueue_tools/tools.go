//go:build tools

// Package tools pins Kueue's controller manager, which kpysched's e2e tests run
// beside it (tests/cluster/kueue.py). A module of its own, so Kueue's dependency
// graph never moves the versions the pinned Kubernetes binaries are built with.
package tools

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
