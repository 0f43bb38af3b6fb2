package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/pps/state"
	"github.com/lifeline-k8s/lifeline/internal/pps/workloads"
	"github.com/lifeline-k8s/lifeline/internal/requeue"
)

var (
	nativeStatefulSet   = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	advancedStatefulSet = appsv1beta1.GroupVersion.WithKind("StatefulSet")
)

// Generator creates, updates and deletes the PersistentPodState a
// workload's kruise.io/*-persistent-* annotations ask for: named like the
// workload, owned by it (so the garbage collector removes it with the
// workload). It serves native and Advanced StatefulSets, and the
// StatefulSet-like kinds whitelisted in Custom, each watched from when the
// whitelist first lists it and the cluster serves it (OpenKruise looks
// only once, at start). It deletes only a PersistentPodState the workload
// owns (OpenKruise deletes any of that name).
type Generator struct {
	client.Client
	Recorder events.EventRecorder
	// Custom lists the whitelisted kinds; Mapper tells whether the
	// cluster serves one, and in which version.
	Custom *workloads.Whitelist
	Mapper meta.RESTMapper

	controller controller.Controller
	cache      cache.Cache
	mu         sync.Mutex
	watched    map[schema.GroupKind]bool
}

// SetupWithManager registers the generator, and the loop that watches
// the whitelisted kinds.
func (g *Generator) SetupWithManager(mgr ctrl.Manager) error {
	c, err := controller.New("persistentpodstate-generator", mgr, controller.Options{Reconciler: g, RateLimiter: requeue.RateLimiter()})
	if err != nil {
		return err
	}
	g.controller, g.cache, g.watched = c, mgr.GetCache(), map[schema.GroupKind]bool{}
	for gvk, obj := range map[schema.GroupVersionKind]client.Object{nativeStatefulSet: &appsv1.StatefulSet{}, advancedStatefulSet: &appsv1beta1.StatefulSet{}} {
		if err := g.watch(gvk, obj); err != nil {
			return err
		}
	}
	// A generated PersistentPodState changed or deleted by hand is put
	// back: its owner is the request.
	err = c.Watch(source.Kind(mgr.GetCache(), client.Object(&appsv1beta1.PersistentPodState{}), handler.EnqueueRequestsFromMapFunc(g.ownerRequest)))
	if err != nil {
		return err
	}
	if g.Custom == nil {
		return nil
	}
	return mgr.Add(manager.RunnableFunc(g.watchWhitelisted))
}

// watch enqueues the synthetic request of each workload of kind gvk on its
// creation and on a change of its annotations.
func (g *Generator) watch(gvk schema.GroupVersionKind, obj client.Object) error {
	toRequest := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{generateRequest(gvk, o.GetNamespace(), o.GetName())}
	})
	return g.controller.Watch(source.Kind(g.cache, obj, toRequest, annotationsChanged))
}

// watchWhitelisted adds a metadata-only watch for each whitelisted kind the
// cluster serves, as the whitelist lists them, until ctx ends.
func (g *Generator) watchWhitelisted(ctx context.Context) error {
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		kinds, err := g.Custom.Kinds(ctx)
		if err != nil {
			log.FromContext(ctx).Error(err, "reading the PersistentPodState workload whitelist")
		}
		for _, gk := range kinds {
			g.watchKind(ctx, gk)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (g *Generator) watchKind(ctx context.Context, gk schema.GroupKind) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.watched[gk] || workloads.IsStatefulSet(gk) {
		return
	}
	mapping, err := g.Mapper.RESTMapping(gk)
	if err != nil {
		return // not served (yet): looked at again next time
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	if err := g.watch(mapping.GroupVersionKind, obj); err != nil {
		log.FromContext(ctx).Error(err, "watching a whitelisted kind", "kind", gk)
		return
	}
	g.watched[gk] = true
	log.FromContext(ctx).Info("generating PersistentPodStates from the annotations of a whitelisted kind", "kind", mapping.GroupVersionKind)
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

// generateRequest is OpenKruise's synthetic request of a workload:
// generate#<apiVersion>#<Kind>#<name>, in its namespace.
func generateRequest(gvk schema.GroupVersionKind, namespace, name string) reconcile.Request {
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace,
		Name: strings.Join([]string{"generate", apiVersion, kind, name}, "#")}}
}

// parseGenerateRequest reads a synthetic request back.
func parseGenerateRequest(req reconcile.Request) (schema.GroupVersionKind, types.NamespacedName, error) {
	parts := strings.Split(req.Name, "#")
	if len(parts) != 4 || parts[0] != "generate" {
		return schema.GroupVersionKind{}, types.NamespacedName{}, fmt.Errorf("malformed generator request %q", req.Name)
	}
	return schema.FromAPIVersionAndKind(parts[1], parts[2]), types.NamespacedName{Namespace: req.Namespace, Name: parts[3]}, nil
}

// ownerRequest is the synthetic request of a PersistentPodState's
// controlling workload, if it is of a kind the generator serves.
func (g *Generator) ownerRequest(_ context.Context, obj client.Object) []reconcile.Request {
	ref := metav1.GetControllerOf(obj)
	if ref == nil {
		return nil
	}
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	if !g.serves(gvk.GroupKind()) {
		return nil
	}
	return []reconcile.Request{generateRequest(gvk, obj.GetNamespace(), ref.Name)}
}

// serves reports a kind the generator watches.
func (g *Generator) serves(gk schema.GroupKind) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return workloads.IsStatefulSet(gk) || g.watched[gk]
}

// read gets the workload: typed for the StatefulSets, whose informers the
// manager has anyway; its metadata for a whitelisted kind.
func (g *Generator) read(ctx context.Context, gvk schema.GroupVersionKind, key types.NamespacedName) (client.Object, error) {
	var obj client.Object
	switch gvk.GroupKind() {
	case nativeStatefulSet.GroupKind():
		obj, gvk = &appsv1.StatefulSet{}, nativeStatefulSet
	case advancedStatefulSet.GroupKind():
		obj, gvk = &appsv1beta1.StatefulSet{}, advancedStatefulSet
	default:
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(gvk)
		obj = meta
	}
	if err := g.Get(ctx, key, obj); err != nil {
		return nil, err
	}
	// The cache's objects carry no kind; the owner reference and the
	// events need it.
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

// Reconcile makes the generated PersistentPodState match the annotations.
func (g *Generator) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	gvk, key, err := parseGenerateRequest(req)
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	if !g.serves(gvk.GroupKind()) {
		// Reading it would start an informer for a kind nobody asked for.
		return reconcile.Result{}, nil
	}
	w, err := g.read(ctx, gvk, key)
	if err != nil || w.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	gvk = w.GetObjectKind().GroupVersionKind()
	target := appsv1alpha1.TargetReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: w.GetName()}
	spec, wanted, complete := state.Generated(w.GetAnnotations(), target)
	existing := &appsv1alpha1.PersistentPodState{}
	err = g.Get(ctx, key, existing)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	found := err == nil
	owned := found && metav1.IsControlledBy(existing, w)
	switch {
	case !complete:
		return reconcile.Result{}, nil
	case !wanted:
		if owned {
			return reconcile.Result{}, g.remove(ctx, w, existing)
		}
		return reconcile.Result{}, nil
	case !found:
		return reconcile.Result{}, g.create(ctx, w, gvk, spec)
	case owned && !apiequality.Semantic.DeepEqual(existing.Spec, spec):
		// The annotations own the spec (OpenKruise overwrites it whole).
		spec.PersistentPodStateRetentionPolicy = existing.Spec.PersistentPodStateRetentionPolicy
		if !apiequality.Semantic.DeepEqual(existing.Spec, spec) {
			existing.Spec = spec
			if err := g.Update(ctx, existing); err != nil {
				return reconcile.Result{}, err
			}
			g.Recorder.Eventf(w, existing, "Normal", "PersistentPodStateUpdated", "Generate", "PersistentPodState %s follows the annotations", existing.Name)
		}
	}
	return reconcile.Result{}, nil
}

func (g *Generator) create(ctx context.Context, w client.Object, gvk schema.GroupVersionKind, spec appsv1alpha1.PersistentPodStateSpec) error {
	owner := metav1.NewControllerRef(w, gvk)
	// OpenKruise's generated reference has no blockOwnerDeletion.
	owner.BlockOwnerDeletion = nil
	pps := &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: w.GetNamespace(), Name: w.GetName(),
		OwnerReferences: []metav1.OwnerReference{*owner}}, Spec: spec}
	if err := g.Create(ctx, pps); err != nil {
		return client.IgnoreAlreadyExists(err)
	}
	g.Recorder.Eventf(w, pps, "Normal", "PersistentPodStateCreated", "Generate", "PersistentPodState %s generated from the annotations", pps.Name)
	return nil
}

func (g *Generator) remove(ctx context.Context, w client.Object, existing *appsv1alpha1.PersistentPodState) error {
	if err := g.Delete(ctx, existing); client.IgnoreNotFound(err) != nil {
		return err
	}
	g.Recorder.Eventf(w, existing, "Normal", "PersistentPodStateDeleted", "Generate", "auto-generated PersistentPodState %s deleted", existing.Name)
	return nil
}
