//go:build tools

// Package tools pins KWOK, which simulates nodes for kpysched's test harness.
// It has a module of its own (not ../tools) so KWOK's dependency graph never
// moves the versions that the pinned Kubernetes binaries are built with.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
