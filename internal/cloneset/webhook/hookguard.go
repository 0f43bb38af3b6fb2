package webhook

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	"github.com/lifeline-k8s/lifeline/pkg/lifecycle"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

var guarded = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "lifeline_cloneset_hook_guard_total",
	Help: "Pod deletes and evictions seen by the hook guard, by operation (delete, evict) and result (redirected: refused, the pod handed to its CloneSet or Advanced StatefulSet as a specified delete; passed).",
}, []string{"operation", "result"})

func init() { metrics.Registry.MustRegister(guarded) }

// HookGuard closes the path around a preDelete hook for CloneSets and
// Advanced StatefulSets that opt in (GuardHooksAnnotation): OpenKruise lets a kubectl delete or an
// eviction remove a pod its preDelete hook would hold, so a registry keeps
// the address of a pod that is gone. The guard refuses such a request and
// marks the pod specified-delete instead: the CloneSet then takes it
// through PreparingDelete, the hook and the registry like any scale-in,
// and replaces it. A refused eviction answers 429, as the eviction API
// answers a PodDisruptionBudget, so kubectl drain retries until the pod is
// gone (then the eviction finds nothing to evict, and drain goes on).
type HookGuard struct {
	// Cache reads pods and CloneSets; Live reads an evicted pod the cache
	// has another UID for; Writer marks pods.
	Cache, Live client.Reader
	Writer      client.Client
	// Exempt are the users whose deletions pass: the manager itself (the
	// CloneSet controller deleting released pods). The garbage collector
	// needs no exemption: the pods it deletes belong to a CloneSet that is
	// gone or being deleted, which Guards lets through.
	Exempt   map[string]bool
	Recorder events.EventRecorder
}

// Validate refuses a direct delete or eviction of a guarded pod.
func (g *HookGuard) Validate(ctx context.Context, req admission.Request) admission.Response {
	op := "delete"
	if podadmission.IsEviction(req) {
		op = "evict"
	}
	if g.Exempt[req.UserInfo.Username] {
		guarded.WithLabelValues(op, "passed").Inc()
		return admission.Allowed("")
	}
	pod, err := podadmission.DisruptedPod(ctx, g.Cache, g.Live, req)
	switch {
	case err != nil:
		return admission.Errored(http.StatusInternalServerError, err)
	case pod == nil:
		return admission.Allowed("")
	}
	w, err := g.workloadOf(ctx, pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	guard, why := Guards(w, pod)
	if !guard {
		guarded.WithLabelValues(op, "passed").Inc()
		return admission.Allowed(why)
	}
	if !ptr.Deref(req.DryRun, false) {
		if err := g.mark(ctx, pod); err != nil {
			return admission.Errored(http.StatusInternalServerError, fmt.Errorf("handing pod %s to its %s: %w", pod.Name, w.Kind, err))
		}
		g.Recorder.Eventf(pod, w.Object, corev1.EventTypeNormal, "DeletionRedirected", "Guard",
			"%s of pod %s by %s redirected to %s %s: marked %s, it goes through its preDelete hook and is replaced",
			op, pod.Name, req.UserInfo.Username, w.Kind, w.Object.GetName(), appsv1alpha1.SpecifiedDeleteKey)
	}
	guarded.WithLabelValues(op, "redirected").Inc()
	msg := fmt.Sprintf("pod %s is guarded by %s %s (%s): a direct %s would skip its preDelete hook; the pod is marked %s instead "+
		"and the %s deletes it through the hook and replaces it", pod.Name, w.Kind, w.Object.GetName(), appsv1alpha1.GuardHooksAnnotation, op,
		appsv1alpha1.SpecifiedDeleteKey, w.Kind)
	return podadmission.RefuseDisruption(req, msg, msg)
}

// Guarded is a pod's workload as the hook guard needs it: a CloneSet, an
// Advanced StatefulSet or an Advanced DaemonSet, the workloads that
// replace a pod marked specified-delete through its preDelete hook.
type Guarded struct {
	Kind      string
	Object    client.Object
	Lifecycle *pub.Lifecycle
}

// GuardedCloneSet is cs for the guard; nil for nil.
func GuardedCloneSet(cs *appsv1alpha1.CloneSet) *Guarded {
	if cs == nil {
		return nil
	}
	return &Guarded{Kind: "CloneSet", Object: cs, Lifecycle: cs.Spec.Lifecycle}
}

// GuardedStatefulSet is an Advanced StatefulSet for the guard; nil for nil.
func GuardedStatefulSet(set *appsv1beta1.StatefulSet) *Guarded {
	if set == nil {
		return nil
	}
	return &Guarded{Kind: "StatefulSet", Object: set, Lifecycle: set.Spec.Lifecycle}
}

// GuardedDaemonSet is an Advanced DaemonSet for the guard; nil for nil.
func GuardedDaemonSet(set *appsv1beta1.DaemonSet) *Guarded {
	if set == nil {
		return nil
	}
	return &Guarded{Kind: "DaemonSet", Object: set, Lifecycle: set.Spec.Lifecycle}
}

// Guards decides whether the guard refuses a direct delete or eviction of
// pod, whose controlling workload is w (nil for none), and says why not
// when it lets it through.
func Guards(w *Guarded, pod *corev1.Pod) (bool, string) {
	if guards, why := GuardsHooks(w); !guards {
		return false, why
	}
	switch {
	case pod.DeletionTimestamp != nil:
		return false, "already being deleted"
	case podfacts.State(pod) == pub.LifecycleStatePreparingDelete && !lifecycle.IsHooked(w.Lifecycle.PreDelete, pod):
		return false, "its preDelete hook already released it"
	}
	return true, ""
}

// GuardsHooks decides whether the guard protects a workload's pods at all
// (w nil: the pod has none it serves), and says why not; a workload it
// protects makes its namespace ask for fail-closed disruption webhooks.
func GuardsHooks(w *Guarded) (bool, string) {
	switch {
	case w == nil:
		return false, "not a CloneSet, Advanced StatefulSet or Advanced DaemonSet pod"
	case w.Object.GetDeletionTimestamp() != nil:
		return false, "its " + w.Kind + " is being deleted"
	case w.Object.GetAnnotations()[appsv1alpha1.GuardHooksAnnotation] != "true":
		return false, "its " + w.Kind + " does not guard its hooks"
	case w.Lifecycle == nil || w.Lifecycle.PreDelete == nil:
		return false, "its " + w.Kind + " has no preDelete hook"
	}
	return true, ""
}

// mark labels the pod specified-delete, once.
func (g *HookGuard) mark(ctx context.Context, pod *corev1.Pod) error {
	if _, ok := pod.Labels[appsv1alpha1.SpecifiedDeleteKey]; ok {
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, appsv1alpha1.SpecifiedDeleteKey)
	return g.Writer.Patch(ctx, pod.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))
}

// workloadOf reads the pod's controlling CloneSet, Advanced StatefulSet
// or Advanced DaemonSet from the cache; nil for any other pod.
func (g *HookGuard) workloadOf(ctx context.Context, pod *corev1.Pod) (*Guarded, error) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return nil, nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != appsv1alpha1.GroupVersion.Group {
		return nil, nil
	}
	key := types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}
	var obj client.Object
	switch ref.Kind {
	case "CloneSet":
		obj = &appsv1alpha1.CloneSet{}
	case "StatefulSet":
		obj = &appsv1beta1.StatefulSet{}
	case "DaemonSet":
		obj = &appsv1beta1.DaemonSet{}
	default:
		return nil, nil
	}
	if err := g.Cache.Get(ctx, key, obj); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if obj.GetUID() != ref.UID {
		return nil, nil
	}
	switch w := obj.(type) {
	case *appsv1alpha1.CloneSet:
		return GuardedCloneSet(w), nil
	case *appsv1beta1.DaemonSet:
		return GuardedDaemonSet(w), nil
	}
	return GuardedStatefulSet(obj.(*appsv1beta1.StatefulSet)), nil
}
