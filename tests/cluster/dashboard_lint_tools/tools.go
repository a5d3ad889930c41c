//go:build tools

// Package tools pins Grafana's dashboard linter, which checks the chart's dashboard.
// The module proxy lists no version of it (it has no release tags) but serves this
// pseudo-version; the checksum database does not know it, so go.sum (committed) is
// what verifies it, and adding or bumping it needs GONOSUMDB=github.com/grafana/dashboard-linter.
package tools

import (
	_ "github.com/grafana/dashboard-linter"
)
