package controller

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// allSets maps a node event to every set: any of them may have to start
// or stop a pod there.
func (r *Reconciler) allSets(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &appsv1beta1.DaemonSetList{}
	if err := r.List(ctx, list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// nodeChanges passes node creations and deletions, and the updates that
// may change where a set runs: labels, taints, the name a pod may pin, and
// which conditions are True (a kubelet's heartbeat alone changes nothing),
// as the native DaemonSet filters them.
func nodeChanges() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			a, okA := e.ObjectOld.(*corev1.Node)
			b, okB := e.ObjectNew.(*corev1.Node)
			if !okA || !okB {
				return true
			}
			return !maps.Equal(a.Labels, b.Labels) || !apiequality.Semantic.DeepEqual(a.Spec.Taints, b.Spec.Taints) ||
				a.Spec.Unschedulable != b.Spec.Unschedulable || !slices.Equal(trueConditions(a), trueConditions(b))
		},
	}
}

func trueConditions(node *corev1.Node) []corev1.NodeConditionType {
	var out []corev1.NodeConditionType
	for _, c := range node.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			out = append(out, c.Type)
		}
	}
	slices.Sort(out)
	return out
}
