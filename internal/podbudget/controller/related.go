package controller

import (
	"context"
	"encoding/json"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podbudget/budget"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=patch

// annotateRelated writes the related-pub annotations (budget.RelatedAnnotations)
// on the budget's pods that lack them or name a budget that is gone: one
// patch per pod, once. The pods are the cache's own objects and are not
// changed.
func (r *Reconciler) annotateRelated(ctx context.Context, pub *policyv1alpha1.PodUnavailableBudget, pods []*corev1.Pod) error {
	// The namespace's budgets are listed only when a pod names another
	// one: most reconciles find every pod annotated already.
	var live map[string]bool
	var listErr error
	exists := func(name string) bool {
		if live == nil && listErr == nil {
			list := &policyv1alpha1.PodUnavailableBudgetList{}
			if listErr = r.List(ctx, list, client.InNamespace(pub.Namespace)); listErr == nil {
				live = map[string]bool{}
				for _, b := range list.Items {
					live[b.Name] = b.DeletionTimestamp == nil
				}
			}
		}
		// Unknown counts as existing: a name is never replaced on a guess.
		return listErr != nil || live[name]
	}
	var errs []error
	for _, pod := range pods {
		add := budget.RelatedAnnotations(pub.Name, pod, exists)
		if add == nil {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": add}})
		if err != nil {
			return err
		}
		target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
		if err := r.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, listErr)...)
}
