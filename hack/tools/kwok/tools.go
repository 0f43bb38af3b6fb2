//go:build tools

// Package kwok records the kwok binary that hack/cluster builds.
package kwok

import _ "sigs.k8s.io/kwok/cmd/kwok"
