//go:build tools

// Package tools pins containerd 2.x for the real test node: the daemon (with its
// CRI plugin), the runc shim it starts per pod, and `ctr` to import the locally
// built images. A module of its own so containerd's dependency graph is exactly
// the one its release was tested with. The build tag keeps this file out of every
// build; it exists so `go mod tidy` records that graph in go.sum.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
