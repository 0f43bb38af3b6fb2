package main

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/lifeline-k8s/lifeline/internal/leasefence"
)

// leaseName is the leader election lease every replica competes for.
const leaseName = "lifeline-manager.lifeline.dev"

// fenceWrites makes the leader election lock through the lease fence
// (leasefence.Fenced), which fences every client made from cfg.
func fenceWrites(cfg *rest.Config, o *options, id string) (resourcelock.Interface, error) {
	lock, _, err := leasefence.Fenced(cfg, o.leaseNamespace(), leaseName, id, o.renewDeadline)
	return lock, err
}
