package controller

import (
	"context"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podexec"
)

// writeStatus writes the status if it changed (podexec.WriteStatus).
func (r *Reconciler) writeStatus(ctx context.Context, cs *appsv1alpha1.CloneSet, status appsv1alpha1.CloneSetStatus) (*appsv1alpha1.CloneSet, error) {
	return podexec.WriteStatus(ctx, r.Client, nil, cs, status, func(c *appsv1alpha1.CloneSet) *appsv1alpha1.CloneSetStatus { return &c.Status })
}
