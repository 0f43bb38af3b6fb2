package controller

import (
	"context"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/pps/state"
	"github.com/lifeline-k8s/lifeline/internal/requeue"
)

// Generator creates, updates and deletes the PersistentPodState a
// StatefulSet's kruise.io/*-persistent-* annotations ask for: named like
// the StatefulSet, owned by it (so the garbage collector removes it with
// the StatefulSet). It deletes only a PersistentPodState the StatefulSet
// owns (OpenKruise deletes any of that name).
type Generator struct {
	client.Client
	Recorder events.EventRecorder
}

// SetupWithManager registers the generator.
func (g *Generator) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&appsv1.StatefulSet{}, builder.WithPredicates(annotationsChanged)).
		Owns(&appsv1beta1.PersistentPodState{}).
		Named("persistentpodstate-generator").
		WithOptions(controller.Options{RateLimiter: requeue.RateLimiter()}).
		Complete(g)
}

// annotationsChanged passes creations and a change of any of the four
// annotations (OpenKruise ignores persistent-pod-annotations alone).
var annotationsChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	for _, k := range []string{appsv1alpha1.AnnotationAutoGeneratePersistentPodState, appsv1alpha1.AnnotationRequiredPersistentTopology,
		appsv1alpha1.AnnotationPreferredPersistentTopology, appsv1alpha1.AnnotationPersistentPodAnnotations} {
		if e.ObjectOld.GetAnnotations()[k] != e.ObjectNew.GetAnnotations()[k] {
			return true
		}
	}
	return false
}, DeleteFunc: func(event.DeleteEvent) bool { return false }}

// Reconcile makes the generated PersistentPodState match the annotations.
func (g *Generator) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	sts := &appsv1.StatefulSet{}
	if err := g.Get(ctx, req.NamespacedName, sts); err != nil || sts.DeletionTimestamp != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	target := appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name}
	spec, wanted, complete := state.Generated(sts.Annotations, target)
	existing := &appsv1alpha1.PersistentPodState{}
	err := g.Get(ctx, req.NamespacedName, existing)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	found := err == nil
	owned := found && metav1.IsControlledBy(existing, sts)
	switch {
	case !complete:
		return reconcile.Result{}, nil
	case !wanted:
		if owned {
			if err := g.Delete(ctx, existing); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, err
			}
			g.Recorder.Eventf(sts, existing, "Normal", "PersistentPodStateDeleted", "Generate", "auto-generated PersistentPodState %s deleted", existing.Name)
		}
		return reconcile.Result{}, nil
	case !found:
		pps := &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: sts.Namespace, Name: sts.Name}, Spec: spec}
		if err := ctrl.SetControllerReference(sts, pps, g.Scheme()); err != nil {
			return reconcile.Result{}, err
		}
		// OpenKruise's generated reference has no blockOwnerDeletion.
		pps.OwnerReferences[0].BlockOwnerDeletion = nil
		if err := g.Create(ctx, pps); client.IgnoreAlreadyExists(err) != nil {
			return reconcile.Result{}, err
		}
		g.Recorder.Eventf(sts, pps, "Normal", "PersistentPodStateCreated", "Generate", "PersistentPodState %s generated from the annotations", pps.Name)
	case owned && !apiequality.Semantic.DeepEqual(existing.Spec, spec):
		// The annotations own the spec (OpenKruise overwrites it whole).
		spec.PersistentPodStateRetentionPolicy = existing.Spec.PersistentPodStateRetentionPolicy
		if !apiequality.Semantic.DeepEqual(existing.Spec, spec) {
			existing.Spec = spec
			if err := g.Update(ctx, existing); err != nil {
				return reconcile.Result{}, err
			}
			g.Recorder.Eventf(sts, existing, "Normal", "PersistentPodStateUpdated", "Generate", "PersistentPodState %s follows the annotations", existing.Name)
		}
	}
	return reconcile.Result{}, nil
}
