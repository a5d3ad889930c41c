//go:build tools

// Package tools pins the CNI plugins the real test node's pod network uses:
// bridge (a Linux bridge and a veth per pod), host-local (IP addresses from a
// private range) and loopback (each pod's lo). The build tag keeps this file out
// of every build; it exists so `go mod tidy` records their dependency graph.
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
)
