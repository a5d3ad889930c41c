//go:build tools

// Package tools pins runc, the OCI runtime containerd's shim starts each
// container with. A module of its own so its dependency graph is exactly the
// release's. The build tag keeps this file out of every build; it exists so
// `go mod tidy` records that graph in go.sum.
package tools

import (
	_ "github.com/opencontainers/runc"
)
