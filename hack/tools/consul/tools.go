//go:build tools

// Package consul records the Consul binary that hack/cluster builds: the
// real registry server the bridge's HTTP backend is tested against.
package consul

import _ "github.com/hashicorp/consul"
