package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	"github.com/lifeline-k8s/lifeline/internal/pps/state"
	"github.com/lifeline-k8s/lifeline/internal/pps/workloads"
)

var (
	injections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_pps_injections_total",
		Help: "Pods created with the placement their PersistentPodState recorded, by PersistentPodState (namespace/name).",
	}, []string{"pps"})
	injectLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "lifeline_pps_injection_duration_seconds",
		Help:    "How long deciding a created pod's placement took in the pod webhook.",
		Buckets: prometheus.ExponentialBucketsRange(0.00002, 1, 24),
	})
)

func init() { metrics.Registry.MustRegister(injections, injectLatency) }

// CreateTarget is what the injector admits: pod CREATE.
var CreateTarget = podadmission.Target{Operation: "CREATE"}

// Injector steers a pod being created back to where its predecessor of
// the same name ran: when the pod's workload has a PersistentPodState
// with a record for the pod's name, the required topology becomes node
// selector entries and each preferred term a weighted preferred node
// affinity term, and the pod is annotated with the PersistentPodState's
// name. A pod without a record is left as it is.
type Injector struct {
	States   client.Reader
	Custom   *workloads.Whitelist
	Recorder events.EventRecorder
}

// Mutate implements podadmission.Mutator.
func (in *Injector) Mutate(ctx context.Context, req admission.Request, raw []byte) ([]byte, error) {
	start := time.Now()
	defer func() { injectLatency.Observe(time.Since(start).Seconds()) }()
	pod := &corev1.Pod{}
	if err := json.Unmarshal(raw, pod); err != nil {
		return nil, podadmission.BadObject(err)
	}
	owner := metav1.GetControllerOf(pod)
	if owner == nil {
		return raw, nil
	}
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	if err != nil {
		return raw, nil
	}
	gk := gv.WithKind(owner.Kind).GroupKind()
	if !workloads.IsStatefulSet(gk) {
		custom, err := in.Custom.Kinds(ctx)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(custom, gk) {
			return raw, nil
		}
	}
	// The name is the StatefulSet's: the API server has not generated one.
	name := pod.Name
	namespace := pod.Namespace
	if namespace == "" {
		namespace = req.Namespace
	}
	pps, err := in.stateFor(ctx, namespace, gk, owner.Name)
	if err != nil || pps == nil {
		return raw, err
	}
	recorded, ok := pps.Status.PodStates[name]
	if !ok {
		return raw, nil
	}
	placement, ok := state.PlacementFor(pps.Spec, recorded)
	if !ok {
		return raw, nil
	}
	placement.Apply(pod)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[appsv1alpha1.InjectedPersistentPodStateKey] = pps.Name
	injections.WithLabelValues(pps.Namespace + "/" + pps.Name).Inc()
	in.Recorder.Eventf(pps, nil, corev1.EventTypeNormal, "PlacementInjected", "Inject", "pod %s steered back: %s", name, describe(placement))
	return json.Marshal(pod)
}

// stateFor is the first PersistentPodState of namespace, by name, that is
// not being deleted and targets the workload.
func (in *Injector) stateFor(ctx context.Context, namespace string, gk schema.GroupKind, name string) (*appsv1alpha1.PersistentPodState, error) {
	list := &appsv1alpha1.PersistentPodStateList{}
	if err := in.States.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b appsv1alpha1.PersistentPodState) int { return strings.Compare(a.Name, b.Name) })
	for i := range list.Items {
		pps := &list.Items[i]
		if pps.DeletionTimestamp == nil && workloads.Target(pps.Spec.TargetReference).Is(gk, name) {
			return pps, nil
		}
	}
	return nil, nil
}

func describe(p state.Placement) string {
	var parts []string
	for _, k := range sortedKeys(p.NodeSelector) {
		parts = append(parts, fmt.Sprintf("requires %s=%s", k, p.NodeSelector[k]))
	}
	for _, t := range p.Preferred {
		for _, m := range t.Preference.MatchExpressions {
			parts = append(parts, fmt.Sprintf("prefers %s=%s (weight %d)", m.Key, strings.Join(m.Values, ","), t.Weight))
		}
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
