package controller

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// writeStatus writes the status if it changed.
func (r *Reconciler) writeStatus(ctx context.Context, cs *appsv1alpha1.CloneSet, status appsv1alpha1.CloneSetStatus) error {
	if apiequality.Semantic.DeepEqual(cs.Status, status) {
		return nil
	}
	updated := cs.DeepCopy()
	updated.Status = status
	return r.Status().Update(ctx, updated)
}
