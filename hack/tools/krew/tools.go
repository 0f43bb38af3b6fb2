//go:build tools

// Package krew records the krew binary that hack/cluster builds, to
// install kubectl-lifeline from its krew manifest as a krew user would.
package krew

import _ "sigs.k8s.io/krew/cmd/krew"
