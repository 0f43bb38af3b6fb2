package controller

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// writeStatus writes the status if it changed, conditional on the version
// read, and returns the CloneSet as stored (cs itself when nothing
// changed), so that a later write in the same reconcile is conditional on
// this one.
func (r *Reconciler) writeStatus(ctx context.Context, cs *appsv1alpha1.CloneSet, status appsv1alpha1.CloneSetStatus) (*appsv1alpha1.CloneSet, error) {
	if apiequality.Semantic.DeepEqual(cs.Status, status) {
		return cs, nil
	}
	updated := cs.DeepCopy()
	updated.Status = status
	if err := r.Status().Update(ctx, updated); err != nil {
		return cs, err
	}
	return updated, nil
}
