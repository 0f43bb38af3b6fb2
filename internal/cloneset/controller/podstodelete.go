package controller

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// prunePodsToDelete removes from scaleStrategy.podsToDelete the names of
// pods that no longer exist.
func (r *Reconciler) prunePodsToDelete(ctx context.Context, cs *appsv1alpha1.CloneSet, all []*corev1.Pod) error {
	if len(cs.Spec.ScaleStrategy.PodsToDelete) == 0 {
		return nil
	}
	exists := map[string]bool{}
	for _, pod := range all {
		if pod.DeletionTimestamp == nil {
			exists[pod.Name] = true
		}
	}
	var keep []string
	for _, name := range cs.Spec.ScaleStrategy.PodsToDelete {
		if exists[name] {
			keep = append(keep, name)
		}
	}
	if len(keep) == len(cs.Spec.ScaleStrategy.PodsToDelete) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": cs.ResourceVersion},
		"spec":     map[string]any{"scaleStrategy": map[string]any{"podsToDelete": keep}},
	})
	if err != nil {
		return err
	}
	err = r.Patch(ctx, cs.DeepCopy(), client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsConflict(err) {
		return nil // a newer version will be reconciled and pruned
	}
	return err
}
