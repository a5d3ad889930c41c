//go:build tools

// Package tools pins Prometheus (server and promtool), which the harness runs to
// scrape kpysched and to check and unit-test the chart's alerting rules. It has a
// module of its own so Prometheus's dependency graph never moves the versions the
// Kubernetes binaries are built with.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
