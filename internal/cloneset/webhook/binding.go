package webhook

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/cloneset/planner"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
)

// The binding mutator runs in the pod mutating webhook (internal/
// podadmission) on every bind in the cluster, so that webhook fails open
// (failurePolicy Ignore, two seconds): a bind it does not answer simply
// leaves the pod in PreparingNormal, and the CloneSet controller moves it
// to Normal once it sees the pod scheduled. System namespaces are excluded
// by the configuration's namespaceSelector and again here.

// BindingTarget is what the binding mutator admits: pods/binding CREATE.
var BindingTarget = podadmission.Target{SubResource: "binding", Operation: admissionv1.Create}

// NewBindingMutator returns the pod admission feature that makes a CloneSet
// pod Normal in its bind. cache is the manager's cache. created, when not
// nil, are the pods the CloneSet controller created that the cache may not
// show yet, and leading tells whether that controller runs in this
// replica. live reads around the cache what neither shows within
// wait (CacheWait by default); arrivals, when not nil, wakes that wait as
// the cache gets the pod.
func NewBindingMutator(decoder admission.Decoder, cache client.Reader, created CreatedPods, leading func() bool, live client.Reader, arrivals *Arrivals, wait time.Duration) podadmission.Mutator {
	return &bindingDefaulter{decoder: decoder, cache: cache, created: created, leading: leading, live: live,
		now: time.Now, cacheWait: wait, arrivals: arrivals}
}

// CreatedPods are the pods a controller of this manager created, as their
// creates answered, until the cache shows them (podexec.Expectations). The
// scheduler binds a pod moments after its creation: under load, a third of
// the binds came before the manager's watch had delivered the pod (11-25).
// The create's answer serves such a bind at once (after the answer itself,
// if the bind overtook it). It is as safe as the cache: the bind is
// conditioned on the answer's resourceVersion, so it applies only to the
// pod as created.
type CreatedPods interface {
	Created(ctx context.Context, key client.ObjectKey, wait time.Duration) (*corev1.Pod, bool)
}

// CacheWait is how long a bind waits for the answer of the pod's create
// in flight, and on a standby replica, which created nothing, for the
// manager's cache to show a pod it does not show yet before reading it
// from the API server: waiting for the watch costs less than a read, which
// would queue behind every other request the API server is serving, and
// costs the API server nothing.
const CacheWait = 250 * time.Millisecond

var bindings = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "lifeline_cloneset_binding_state_total",
	Help: "Binds seen by the pod binding webhook, by result: normal (the bind made a CloneSet pod Normal), skipped (not a CloneSet pod waiting to be scheduled), unknown (the pod or CloneSet could not be read; the controller makes the pod Normal after the bind).",
}, []string{"result"})

var bindingReads = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "lifeline_cloneset_binding_reads_total",
	Help: "Reads of the pod binding webhook, by kind (Pod, CloneSet) and source: cache; created (the create's answer the CloneSet controller kept, for a pod the cache does not show yet); not-created (neither shows the pod and the controller runs in this replica: the bind is left to it); cache-after-wait (on a standby replica, the cache showed the pod within the wait); live (it did not: read from the API server).",
}, []string{"kind", "source"})

func init() { metrics.Registry.MustRegister(bindings, bindingReads) }

// bindingDefaulter adds the Normal state label to the bind of a CloneSet
// pod that waits in PreparingNormal only to be scheduled. It reads pods and
// CloneSets from the manager's cache, and around it only for a pod the
// cache does not show yet (a bind that follows its creation closely).
type bindingDefaulter struct {
	decoder admission.Decoder
	cache   client.Reader
	created CreatedPods
	leading func() bool
	live    client.Reader
	now     func() time.Time
	// cacheWait: see CacheWait. Pods only, woken by arrivals.
	cacheWait time.Duration
	arrivals  *Arrivals
}

// getCloneSet reads a CloneSet from the cache: the controller that made
// the pod reconciles it, so the cache has it.
func (d *bindingDefaulter) getCloneSet(ctx context.Context, key client.ObjectKey, cs *appsv1alpha1.CloneSet) error {
	err := d.cache.Get(ctx, key, cs)
	bindingReads.WithLabelValues("CloneSet", "cache").Inc()
	return err
}

// getPod reads the pod from the cache, then from what the controller
// created. Where the controller leads, a pod it did not create is left
// alone (NotFound): another workload's, or one the controller makes Normal
// once it sees it scheduled. Elsewhere (a standby) it waits up to
// cacheWait for the cache, and last reads the API server.
func (d *bindingDefaulter) getPod(ctx context.Context, key client.ObjectKey, pod *corev1.Pod) error {
	err := d.cache.Get(ctx, key, pod)
	source := "cache"
	defer func() { bindingReads.WithLabelValues("Pod", source).Inc() }()
	if !apierrors.IsNotFound(err) {
		return err
	}
	if d.created != nil {
		if created, ok := d.created.Created(ctx, key, d.cacheWait); ok {
			created.DeepCopyInto(pod)
			source = "created"
			return nil
		}
		if d.leading != nil && d.leading() {
			source = "not-created"
			return err
		}
	}
	if d.arrivals != nil && d.cacheWait > 0 {
		source = "cache-after-wait"
		d.arrivals.Await(ctx, key, d.cacheWait, func() bool {
			err = d.cache.Get(ctx, key, pod)
			return !apierrors.IsNotFound(err)
		})
	}
	if apierrors.IsNotFound(err) && d.live != nil {
		source = "live"
		err = d.live.Get(ctx, key, pod)
	}
	return err
}

func (d *bindingDefaulter) Mutate(ctx context.Context, req admission.Request, raw []byte) ([]byte, error) {
	if isSystemNamespace(req.Namespace) {
		return raw, nil
	}
	binding := &corev1.Binding{}
	if err := d.decoder.DecodeRaw(runtime.RawExtension{Raw: raw}, binding); err != nil {
		return nil, podadmission.BadObject(err)
	}
	result, mutated := d.decide(ctx, req, binding)
	bindings.WithLabelValues(result).Inc()
	if mutated == nil {
		return raw, nil
	}
	return json.Marshal(mutated)
}

// decide returns the result for the metric and the binding to send, or nil
// to leave the bind as it is.
func (d *bindingDefaulter) decide(ctx context.Context, req admission.Request, binding *corev1.Binding) (string, *corev1.Binding) {
	pod := &corev1.Pod{}
	if err := d.getPod(ctx, client.ObjectKey{Namespace: req.Namespace, Name: req.Name}, pod); err != nil {
		return "unknown", nil
	}
	if (binding.UID != "" && binding.UID != pod.UID) || (binding.ResourceVersion != "" && binding.ResourceVersion != pod.ResourceVersion) {
		return "unknown", nil // the cache shows another pod, or an older one
	}
	// Any version of the group: pods made by OpenKruise v1.9, whose
	// controller stores v1beta1, name apps.kruise.io/v1beta1.
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "CloneSet" || !strings.HasPrefix(ref.APIVersion, appsv1alpha1.GroupVersion.Group+"/") {
		return "skipped", nil
	}
	cs := &appsv1alpha1.CloneSet{}
	if err := d.getCloneSet(ctx, client.ObjectKey{Namespace: req.Namespace, Name: ref.Name}, cs); err != nil {
		return "unknown", nil
	}
	state, ok := planner.BindingState(cs, pod)
	if !ok {
		return "skipped", nil
	}
	mutated := binding.DeepCopy()
	if mutated.Labels == nil {
		mutated.Labels = map[string]string{}
	}
	if mutated.Annotations == nil {
		mutated.Annotations = map[string]string{}
	}
	mutated.Labels[pub.LifecycleStateKey] = string(state)
	mutated.Annotations[pub.LifecycleTimestampKey] = d.now().Format(time.RFC3339)
	// The bind applies only to the pod as the cache showed it: a state
	// the controller wrote since (PreparingDelete, Updating) makes the
	// bind fail with a conflict, and the scheduler tries again, rather
	// than the label overwrite it.
	mutated.ResourceVersion = pod.ResourceVersion
	log.FromContext(ctx).V(1).Info("bind makes pod Normal", "pod", req.Name, "cloneset", cs.Name)
	return "normal", mutated
}

func isSystemNamespace(ns string) bool {
	for _, s := range podadmission.SystemNamespaces {
		if ns == s {
			return true
		}
	}
	return false
}
