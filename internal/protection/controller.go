package protection

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lifeline-k8s/lifeline/internal/requeue"
)

// Labelling namespaces is a cluster-wide write, limited to labels under
// LabelPrefix by the code (RBAC cannot narrow a patch to some labels).
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;patch

var protected = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "lifeline_protected_namespaces",
	Help: "Namespaces whose fail-closed pod webhooks are in force, by kind of protection (disruptions, placement).",
}, []string{"kind"})

func init() { metrics.Registry.MustRegister(protected) }

// Reconciler keeps each namespace's protection labels in line with the
// objects it holds.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Sources  []Source
	// Exempt are namespaces never labelled: the system namespaces and
	// the manager's own.
	Exempt []string
}

// SetupWithManager watches namespaces (a label changed by hand is put
// back) and every source's objects, which requeue their namespace.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Namespace{}, builder.WithPredicates(labelsChanged)).
		Named("namespace-protection").
		WithOptions(controller.Options{RateLimiter: requeue.RateLimiter()})
	seen := map[string]bool{}
	for _, s := range r.Sources {
		key := fmt.Sprintf("%T", s.Object)
		if seen[key] {
			continue
		}
		seen[key] = true
		b = b.Watches(s.Object, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: obj.GetNamespace()}}}
		}), builder.WithPredicates(mayChangeProtection))
	}
	return b.Complete(r)
}

// Reconcile labels or unlabels one namespace.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, req.NamespacedName, ns); err != nil || ns.DeletionTimestamp != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	holders, err := r.holders(ctx, ns.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	kinds := Kinds(r.Sources)
	changes := Plan(ns.Labels, holders, slices.Contains(r.Exempt, ns.Name), kinds)
	if len(changes) > 0 {
		if err := r.apply(ctx, ns, changes); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, r.count(ctx, kinds)
}

// holders lists the namespace's objects that ask for protection.
func (r *Reconciler) holders(ctx context.Context, namespace string) ([]Holder, error) {
	var out []Holder
	for _, s := range r.Sources {
		list := s.List.DeepCopyObject().(client.ObjectList)
		if err := r.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			obj, ok := item.(client.Object)
			if !ok || !s.holds(obj) {
				continue
			}
			gvk, err := apiutil.GVKForObject(obj, r.Client.Scheme())
			if err != nil {
				return nil, err
			}
			out = append(out, Holder{Kind: s.Kind, Name: gvk.Kind + "/" + obj.GetName()})
		}
	}
	return out, nil
}

// apply patches the labels, conditional on the version read, and says so
// in an event per change.
func (r *Reconciler) apply(ctx context.Context, ns *corev1.Namespace, changes []Change) error {
	patched := ns.DeepCopy()
	if patched.Labels == nil {
		patched.Labels = map[string]string{}
	}
	for _, c := range changes {
		if c.On {
			patched.Labels[c.Kind.Label()] = "true"
		} else {
			delete(patched.Labels, c.Kind.Label())
		}
	}
	if err := r.Client.Patch(ctx, patched, client.MergeFromWithOptions(ns, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	for _, c := range changes {
		if c.On {
			r.Recorder.Eventf(patched, nil, corev1.EventTypeNormal, "ProtectionOn", "Label",
				"%s: Lifeline's %s webhooks now refuse what they cannot judge in this namespace (asked for by %s)", c.Kind.Label(), c.Kind, c.By)
		} else {
			r.Recorder.Eventf(patched, nil, corev1.EventTypeNormal, "ProtectionOff", "Label",
				"%s removed: nothing in this namespace asks for %s protection, so Lifeline's %s webhooks let requests through when they cannot answer", c.Kind.Label(), c.Kind, c.Kind)
		}
	}
	return nil
}

// count sets the gauge from the cached namespaces.
func (r *Reconciler) count(ctx context.Context, kinds []Kind) error {
	list := &corev1.NamespaceList{}
	if err := r.Client.List(ctx, list); err != nil {
		return err
	}
	for _, k := range kinds {
		n := 0
		for i := range list.Items {
			if Protected(list.Items[i].Labels, k) {
				n++
			}
		}
		protected.WithLabelValues(string(k)).Set(float64(n))
	}
	return nil
}

// mayChangeProtection passes a source object's creation and deletion and
// the updates that can change whether it asks for protection (its spec,
// its annotations, its deletion), not its status writes: a CloneSet
// writes its status at every step of a rollout.
var mayChangeProtection = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, n := e.ObjectOld, e.ObjectNew
	return o.GetGeneration() != n.GetGeneration() || !maps.Equal(o.GetAnnotations(), n.GetAnnotations()) ||
		(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil)
}}

// labelsChanged passes a namespace's creation and any change of its
// protection labels.
var labelsChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return !sameProtection(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
}}

func sameProtection(a, b map[string]string) bool {
	for k, v := range a {
		if strings.HasPrefix(k, LabelPrefix) && b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if strings.HasPrefix(k, LabelPrefix) && a[k] != v {
			return false
		}
	}
	return true
}
