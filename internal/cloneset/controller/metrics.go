package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/lifeline-k8s/lifeline/internal/workloadref"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

var (
	podsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_cloneset_pods_created_total",
		Help: "Pods created by the CloneSet controller.",
	}, []string{"namespace", "cloneset"})
	podsDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_cloneset_pods_deleted_total",
		Help: "Pods deleted by the CloneSet controller.",
	}, []string{"namespace", "cloneset"})
	actionFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_cloneset_action_failures_total",
		Help: "Pod actions (create, delete, patch) of the CloneSet controller that failed.",
	}, []string{"namespace", "cloneset", "action"})
	replicasGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "lifeline_cloneset_replicas",
		Help: "A CloneSet's pods by kind: desired, current, updated, ready, available, expected_updated. updated/expected_updated is the rollout's progress.",
	}, []string{"namespace", "cloneset", "kind"})
	stateDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "lifeline_cloneset_lifecycle_state_duration_seconds",
		Help:    "How long CloneSet pods stayed in a lifecycle state before the controller moved them on; for the hooked states (PreparingNormal, PreparingUpdate, Updated, PreparingDelete) that is how long the hook operator took.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 16), // 0.5s to about 4.5h
	}, []string{"state"})
	stalePatches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_cloneset_stale_pod_writes_total",
		Help: "Pod writes refused because the labels or finalizers a decision rested on changed since it was planned; the pod is planned again.",
	}, []string{"namespace", "cloneset"})
	expectationsExpired = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_cloneset_expectations_expired_total",
		Help: "Writes the CloneSet controller made that its cache did not show within the expectation timeout.",
	}, []string{"namespace", "cloneset"})
)

func init() {
	metrics.Registry.MustRegister(podsCreated, podsDeleted, actionFailures, replicasGauge, stateDuration, stalePatches, expectationsExpired)
}

func recordGauges(cs *appsv1alpha1.CloneSet, st *appsv1alpha1.CloneSetStatus) {
	desired := workloadref.Replicas(cs.Spec.Replicas)
	for kind, v := range map[string]int32{
		"desired": desired, "current": st.Replicas, "updated": st.UpdatedReplicas, "ready": st.ReadyReplicas,
		"available": st.AvailableReplicas, "expected_updated": st.ExpectedUpdatedReplicas,
	} {
		replicasGauge.WithLabelValues(cs.Namespace, cs.Name, kind).Set(float64(v))
	}
}

func deleteGauges(namespace, name string) {
	replicasGauge.DeletePartialMatch(map[string]string{"namespace": namespace, "cloneset": name})
}
