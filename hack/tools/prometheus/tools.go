//go:build tools

// Package prometheus records the Prometheus server that hack/cluster
// builds, for make dashboard.
package prometheus

import _ "github.com/prometheus/prometheus/cmd/prometheus"
