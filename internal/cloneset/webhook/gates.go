package webhook

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

// GateStatusTarget is what the gate mutator admits: pods/status UPDATE,
// the kubelet's reports.
var GateStatusTarget = podadmission.Target{SubResource: "status", Operation: admissionv1.Update}

// GateStatusConditions send the pod status webhook only the reports of a
// CloneSet's or an Advanced StatefulSet's pods that carry the
// InPlaceUpdateReady gate without its condition: about one per pod in its
// life, none of any other pod.
//
// The API server checks GateStatusPods, the webhook's object selector,
// before these: every kubelet's report of every pod in the cluster reaches
// the webhook's rules, and conditions cost the API server a conversion of
// the pod and its old version each time (0.8 ms
// of its CPU per report on this machine, 11-29, whether the webhook is
// called or not); a label selector costs nothing of the sort. A CloneSet's
// and an Advanced StatefulSet's pods carry controller-revision-hash (so do
// OpenKruise's), a Deployment's, a Job's or a bare pod do not.
var GateStatusConditions = []podadmission.MatchCondition{
	{Name: "cloneset-pod", Expression: "has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, (r.kind == 'CloneSet' || r.kind == 'StatefulSet') && r.apiVersion.startsWith('apps.kruise.io/') && has(r.controller) && r.controller)"},
	{Name: "gate-without-condition", Expression: "has(object.spec.readinessGates) && object.spec.readinessGates.exists(g, g.conditionType == 'InPlaceUpdateReady') && " +
		"!(has(object.status.conditions) && object.status.conditions.exists(c, c.type == 'InPlaceUpdateReady'))"},
}

// GateStatusPods is the status webhook's object selector (see
// GateStatusConditions).
var GateStatusPods = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
	{Key: appsv1.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpExists},
}}

var gateOpens = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "lifeline_cloneset_gate_opened_in_status_total",
	Help: "Kubelet status reports of CloneSet pods in which the pod status webhook set InPlaceUpdateReady True, each a controller write saved.",
})

func init() { metrics.Registry.MustRegister(gateOpens) }

// NewGateMutator returns the pod admission feature that sets a new CloneSet
// or Advanced StatefulSet pod's InPlaceUpdateReady condition True in its kubelet's first report,
// instead of a controller write of its own. It fails open: a report it
// does not answer leaves the condition to the controller
// (podlife.WithInitPodReady), one write later.
func NewGateMutator(decoder admission.Decoder) podadmission.Mutator {
	return &gateMutator{decoder: decoder, now: time.Now}
}

type gateMutator struct {
	decoder admission.Decoder
	now     func() time.Time
}

func (m *gateMutator) Mutate(_ context.Context, req admission.Request, raw []byte) ([]byte, error) {
	if isSystemNamespace(req.Namespace) {
		return raw, nil
	}
	pod := &corev1.Pod{}
	if err := m.decoder.DecodeRaw(runtime.RawExtension{Raw: raw}, pod); err != nil {
		return nil, err
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || (ref.Kind != "CloneSet" && ref.Kind != "StatefulSet") || !strings.HasPrefix(ref.APIVersion, appsv1alpha1.GroupVersion.Group+"/") ||
		!podlife.InPlaceGateOpensInStatus(pod) {
		return raw, nil
	}
	podlife.OpenInPlaceGate(pod, m.now())
	gateOpens.Inc()
	return json.Marshal(pod)
}
