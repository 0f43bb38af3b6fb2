package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/workloadref"
)

var (
	podsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_statefulset_pods_created_total",
		Help: "Pods created by the Advanced StatefulSet controller.",
	}, []string{"namespace", "statefulset"})
	podsDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_statefulset_pods_deleted_total",
		Help: "Pods deleted by the Advanced StatefulSet controller.",
	}, []string{"namespace", "statefulset"})
	actionFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_statefulset_action_failures_total",
		Help: "Pod actions (create, delete, patch) of the Advanced StatefulSet controller that failed.",
	}, []string{"namespace", "statefulset", "action"})
	replicasGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "lifeline_statefulset_replicas",
		Help: "An Advanced StatefulSet's pods by kind: desired, current, updated, ready, available. updated/desired is the rollout's progress.",
	}, []string{"namespace", "statefulset", "kind"})
	stateDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "lifeline_statefulset_lifecycle_state_duration_seconds",
		Help:    "How long Advanced StatefulSet pods stayed in a lifecycle state before the controller moved them on.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 16),
	}, []string{"state"})
	stalePatches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_statefulset_stale_pod_writes_total",
		Help: "Pod writes refused because what a decision rested on changed since it was planned; the pod is planned again.",
	}, []string{"namespace", "statefulset"})
	expectationsExpired = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_statefulset_expectations_expired_total",
		Help: "Writes the Advanced StatefulSet controller made that its cache did not show within the expectation timeout.",
	}, []string{"namespace", "statefulset"})
)

func init() {
	metrics.Registry.MustRegister(podsCreated, podsDeleted, actionFailures, replicasGauge, stateDuration, stalePatches, expectationsExpired)
}

func recordGauges(set *appsv1beta1.StatefulSet, st *appsv1beta1.StatefulSetStatus) {
	for k, v := range map[string]int32{
		"desired": workloadref.Replicas(set.Spec.Replicas), "current": st.Replicas, "updated": st.UpdatedReplicas,
		"ready": st.ReadyReplicas, "available": st.AvailableReplicas,
	} {
		replicasGauge.WithLabelValues(set.Namespace, set.Name, k).Set(float64(v))
	}
}

func deleteGauges(namespace, name string) {
	replicasGauge.DeletePartialMatch(map[string]string{"namespace": namespace, "statefulset": name})
}
