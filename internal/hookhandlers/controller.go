package hookhandlers

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

// The ConfigMap is created once and written by name; create cannot be
// narrowed by name.
// +kubebuilder:rbac:groups="",namespace=lifeline-system,resources=configmaps,verbs=create
// +kubebuilder:rbac:groups="",namespace=lifeline-system,resources=configmaps,resourceNames=lifeline-hook-handlers,verbs=get;update

// resync puts back a ConfigMap edited or deleted by hand: the manager does
// not watch ConfigMaps (that would cache every one in the cluster). While
// it is missing, the policy cannot narrow hook operators' labels and
// finalizers (its binding lets requests through without parameters, or
// every pod update in the cluster would be refused).
const resync = time.Minute

// Reconciler keeps the ConfigMap in line with the workloads' hooks.
type Reconciler struct {
	// Client lists the workloads (from the cache); Live reads and writes
	// the ConfigMap.
	Client    client.Client
	Live      client.Client
	Namespace string
	Sources   []Source
}

// SetupWithManager recomputes the ConfigMap whenever a workload's hooks
// may have changed: created, deleted, or its spec changed. Every change
// queues the one key, so a burst of changes (a rollout of many workloads)
// coalesces into one recomputation and at most one write of the one
// ConfigMap; keys per namespace would write it once per namespace.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	key := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.Namespace, Name: ConfigMapName}}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{key} })
	b := ctrl.NewControllerManagedBy(mgr).Named("hook-handlers")
	for _, s := range r.Sources {
		b = b.Watches(s.Object, one, builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	}
	return b.Complete(r)
}

// Reconcile writes the ConfigMap when its data differs from the hooks'.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	byNamespace, err := r.lifecycles(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	want := Data(byNamespace)
	cm := &corev1.ConfigMap{}
	err = r.Live.Get(ctx, req.NamespacedName, cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name,
			Labels: map[string]string{"app.kubernetes.io/name": "lifeline", "app.kubernetes.io/component": "hook-handlers"}}, Data: want}
		return reconcile.Result{RequeueAfter: resync}, r.Live.Create(ctx, cm)
	case err != nil:
		return reconcile.Result{}, err
	case maps.Equal(cm.Data, want):
		return reconcile.Result{RequeueAfter: resync}, nil
	}
	cm.Data = want
	return reconcile.Result{RequeueAfter: resync}, r.Live.Update(ctx, cm)
}

// lifecycles lists every source's workloads' hooks, by namespace.
func (r *Reconciler) lifecycles(ctx context.Context) (map[string][]*pub.Lifecycle, error) {
	out := map[string][]*pub.Lifecycle{}
	for _, s := range r.Sources {
		list := s.List.DeepCopyObject().(client.ObjectList)
		// Read only, so the cache's own objects: no copy of every workload
		// per recomputation.
		if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing %T: %w", list, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			// A workload being deleted still counts: its pods' hooks are
			// released on their way out.
			obj, ok := item.(client.Object)
			if !ok {
				continue
			}
			if l := s.Lifecycle(obj); l != nil {
				out[obj.GetNamespace()] = append(out[obj.GetNamespace()], l)
			}
		}
	}
	return out, nil
}
