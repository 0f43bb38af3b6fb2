package controller

import (
	"context"
	"fmt"

	"github.com/lifeline-k8s/lifeline/internal/ownerindex"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/cloneset/planner"
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

// releaseUnreusedPVCs applies disablePVCReuse before planning, so no new pod
// picks up an old instance's claims: a claim of a terminating pod is handed
// to that pod, to go with it, and a claim of no pod at all is deleted. It
// returns the PVCs left to the CloneSet.
func (r *Reconciler) releaseUnreusedPVCs(ctx context.Context, cs *appsv1alpha1.CloneSet, pvcs []*corev1.PersistentVolumeClaim, all []*corev1.Pod) ([]*corev1.PersistentVolumeClaim, error) {
	release := planner.UnreusedPVCs(cs, pvcs, all)
	if len(release) == 0 {
		return pvcs, nil
	}
	var kept []*corev1.PersistentVolumeClaim
	for _, pvc := range pvcs {
		pod, released := release[pvc]
		switch {
		case !released:
			kept = append(kept, pvc)
		case pod != nil:
			handed := pvc.DeepCopy()
			handed.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}
			if err := r.Patch(ctx, handed, client.MergeFrom(pvc)); client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("handing pvc %s to pod %s: %w", pvc.Name, pod.Name, err)
			}
		default:
			if err := r.Delete(ctx, pvc); client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("deleting pvc %s: %w", pvc.Name, err)
			}
		}
	}
	return kept, nil
}
