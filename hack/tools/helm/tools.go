//go:build tools

// Package helm records the helm binary that hack/cluster builds, to lint,
// render and test charts/lifeline.
package helm

import _ "helm.sh/helm/v4/cmd/helm"
