//go:build tools

// Package kruise records the OpenKruise manager that hack/cluster builds
// (its main package is the module root).
package kruise

import _ "github.com/openkruise/kruise"
