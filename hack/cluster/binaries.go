package cluster

import (
	"context"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
)

// binary is the path of a binary by name: one Binaries built, else an
// on-demand one, built now if missing (Binary finds it in the cache after).
func (c *Cluster) binary(ctx context.Context, name string) (string, error) {
	if p, ok := c.Binaries[name]; ok {
		return p, nil
	}
	return binaries.Binary(ctx, name, c.progress)
}
