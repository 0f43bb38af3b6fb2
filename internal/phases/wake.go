package phases

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/podbudget/budget"
	"github.com/lifeline-k8s/lifeline/internal/workloadref"
)

// WakeCovered maps a PodUnavailableBudget to the workloads of kind gk it
// can hold back: the one its targetRef names, or those controlling a pod
// its selector matches (a held pod exists, so its owner is found through
// it). Waking every workload of the namespace instead put 50 CloneSets
// in the queue at each of 20 budgets' status writes in the soak, where one
// or two were waiting. HeldRetry stays the backstop for a wake missed.
func WakeCovered(c client.Reader, gk schema.GroupKind) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		b, ok := obj.(*policyv1beta1.PodUnavailableBudget)
		if !ok {
			return nil
		}
		if t := b.Spec.TargetReference; t != nil {
			if (workloadref.Ref{APIVersion: t.APIVersion, Kind: t.Kind, Name: t.Name}).Is(gk, t.Name) {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: t.Name}}}
			}
			return nil
		}
		return ownersOfSelected(ctx, c, b.Namespace, b.Spec.Selector, gk)
	})
}

// ownersOfSelected is each workload of kind gk controlling a pod of
// namespace that selector picks (budget.Selects), once.
func ownersOfSelected(ctx context.Context, c client.Reader, namespace string, selector *metav1.LabelSelector, gk schema.GroupKind) []reconcile.Request {
	sel := budget.Selects(selector)
	if sel == labels.Nothing() {
		return nil
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	seen := map[types.NamespacedName]bool{}
	for i := range pods.Items {
		ref := metav1.GetControllerOf(&pods.Items[i])
		if ref != nil && workloadref.Owner(*ref).Is(gk, ref.Name) {
			seen[types.NamespacedName{Namespace: namespace, Name: ref.Name}] = true
		}
	}
	out := make([]reconcile.Request, 0, len(seen))
	for key := range seen {
		out = append(out, reconcile.Request{NamespacedName: key})
	}
	return out
}

// RoomGained passes a budget's change only when it may let a held pod go:
// created or deleted, its spec or annotations changed (what it guards and
// how), or its status gained room (more disruptions allowed, fewer
// records). The writes that spend room (each admission's record) and the
// recounts that change nothing a held pod waits on pass nothing.
func RoomGained() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok1 := e.ObjectOld.(*policyv1beta1.PodUnavailableBudget)
		cur, ok2 := e.ObjectNew.(*policyv1beta1.PodUnavailableBudget)
		if !ok1 || !ok2 {
			return true
		}
		was, is := old.Status, cur.Status
		return old.Generation != cur.Generation || !maps.Equal(old.Annotations, cur.Annotations) ||
			is.UnavailableAllowed > was.UnavailableAllowed ||
			len(is.DisruptedPods)+len(is.UnavailablePods) < len(was.DisruptedPods)+len(was.UnavailablePods)
	}}
}
