// Package hookguard closes the path around a preDelete hook for every
// kind of workload (pkg/workload) whose workloads opt in: a direct delete
// or eviction of a pod its hook would hold is refused and the pod handed
// to its workload as a specified delete.
package hookguard

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	"github.com/lifeline-k8s/lifeline/pkg/lifecycle"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
	"github.com/lifeline-k8s/lifeline/pkg/workload"
)

var guarded = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "lifeline_hook_guard_total",
	Help: "Pod deletes and evictions seen by the hook guard, by operation (delete, evict) and result (redirected: refused, the pod handed to its workload as a specified delete; passed).",
}, []string{"operation", "result"})

func init() { metrics.Registry.MustRegister(guarded) }

// HookGuard closes the path around a preDelete hook for the workloads that
// opt in (GuardHooksAnnotation), of every registered kind: OpenKruise lets a kubectl delete or an
// eviction remove a pod its preDelete hook would hold, so a registry keeps
// the address of a pod that is gone. The guard refuses such a request and
// marks the pod specified-delete instead: the CloneSet then takes it
// through PreparingDelete, the hook and the registry like any scale-in,
// and replaces it. A refused eviction answers 429, as the eviction API
// answers a PodDisruptionBudget, so kubectl drain retries until the pod is
// gone (then the eviction finds nothing to evict, and drain goes on).
type HookGuard struct {
	// Cache reads pods and workloads; Live reads an evicted pod the cache
	// has another UID for; Writer marks pods.
	Cache, Live client.Reader
	Writer      client.Client
	// Exempt are the users whose deletions pass: the manager itself (the
	// workload controllers deleting released pods). The garbage collector
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
			return admission.Errored(http.StatusInternalServerError, fmt.Errorf("handing pod %s to its %s: %w", pod.Name, w.Kind.Name, err))
		}
		g.Recorder.Eventf(pod, w.Object, corev1.EventTypeNormal, "DeletionRedirected", "Guard",
			"%s of pod %s by %s redirected to %s %s: marked %s, it goes through its preDelete hook and is replaced",
			op, pod.Name, req.UserInfo.Username, w.Kind.Name, w.Name, appsv1alpha1.SpecifiedDeleteKey)
	}
	guarded.WithLabelValues(op, "redirected").Inc()
	msg := fmt.Sprintf("pod %s is guarded by %s %s (%s): a direct %s would skip its preDelete hook; the pod is marked %s instead "+
		"and the %s deletes it through the hook and replaces it", pod.Name, w.Kind.Name, w.Name, appsv1alpha1.GuardHooksAnnotation, op,
		appsv1alpha1.SpecifiedDeleteKey, w.Kind.Name)
	return podadmission.RefuseDisruption(req, msg, msg)
}

// Guards decides whether the guard refuses a direct delete or eviction of
// pod, whose controlling workload is w (nil for none), and says why not
// when it lets it through.
func Guards(w *workload.View, pod *corev1.Pod) (bool, string) {
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
func GuardsHooks(w *workload.View) (bool, string) {
	switch {
	case w == nil:
		return false, "not a pod of a workload kind Lifeline serves"
	case w.Deleting:
		return false, "its " + w.Kind.Name + " is being deleted"
	case w.Annotations[appsv1alpha1.GuardHooksAnnotation] != "true":
		return false, "its " + w.Kind.Name + " does not guard its hooks"
	case w.Lifecycle == nil || w.Lifecycle.PreDelete == nil:
		return false, "its " + w.Kind.Name + " has no preDelete hook"
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

// workloadOf reads the pod's controlling workload, of any registered kind,
// from the cache; nil for any other pod.
func (g *HookGuard) workloadOf(ctx context.Context, pod *corev1.Pod) (*workload.View, error) {
	ref := metav1.GetControllerOf(pod)
	k, ok := workload.ForOwner(ref)
	if !ok {
		return nil, nil
	}
	obj := k.New()
	if err := g.Cache.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}, obj); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if obj.GetUID() != ref.UID {
		return nil, nil
	}
	v := k.View(obj)
	return &v, nil
}
