package controller

import (
	"context"

	"github.com/lifeline-k8s/lifeline/internal/ownerindex"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

func (r *Reconciler) ownedPVCs(ctx context.Context, cs *appsv1alpha1.CloneSet) ([]*corev1.PersistentVolumeClaim, error) {
	list := &corev1.PersistentVolumeClaimList{}
	if err := r.List(ctx, list, client.InNamespace(cs.Namespace), ownerindex.Owned(string(cs.UID))); err != nil {
		return nil, err
	}
	var pvcs []*corev1.PersistentVolumeClaim
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			pvcs = append(pvcs, &list.Items[i])
		}
	}
	return pvcs, nil
}
