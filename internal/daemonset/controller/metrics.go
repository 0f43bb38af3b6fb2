package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

var (
	podsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_daemonset_pods_created_total",
		Help: "Pods created by the Advanced DaemonSet controller.",
	}, []string{"namespace", "daemonset"})
	podsDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_daemonset_pods_deleted_total",
		Help: "Pods deleted by the Advanced DaemonSet controller.",
	}, []string{"namespace", "daemonset"})
	actionFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_daemonset_action_failures_total",
		Help: "Pod actions (create, delete, patch) of the Advanced DaemonSet controller that failed.",
	}, []string{"namespace", "daemonset", "action"})
	nodesGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "lifeline_daemonset_nodes",
		Help: "An Advanced DaemonSet's nodes by kind: desired, current, updated, ready, available, misscheduled. updated/desired is the rollout's progress.",
	}, []string{"namespace", "daemonset", "kind"})
	stateDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "lifeline_daemonset_lifecycle_state_duration_seconds",
		Help:    "How long Advanced DaemonSet pods stayed in a lifecycle state before the controller moved them on.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 16),
	}, []string{"state"})
	stalePatches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_daemonset_stale_pod_writes_total",
		Help: "Pod writes refused because what a decision rested on changed since it was planned; the pod is planned again.",
	}, []string{"namespace", "daemonset"})
	expectationsExpired = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_daemonset_expectations_expired_total",
		Help: "Writes the Advanced DaemonSet controller made that its cache did not show within the expectation timeout.",
	}, []string{"namespace", "daemonset"})
)

func init() {
	metrics.Registry.MustRegister(podsCreated, podsDeleted, actionFailures, nodesGauge, stateDuration, stalePatches, expectationsExpired)
}

func recordGauges(set *appsv1beta1.DaemonSet, st *appsv1beta1.DaemonSetStatus) {
	for k, v := range map[string]int32{
		"desired": st.DesiredNumberScheduled, "current": st.CurrentNumberScheduled, "updated": st.UpdatedNumberScheduled,
		"ready": st.NumberReady, "available": st.NumberAvailable, "misscheduled": st.NumberMisscheduled,
	} {
		nodesGauge.WithLabelValues(set.Namespace, set.Name, k).Set(float64(v))
	}
}

func deleteGauges(namespace, name string) {
	nodesGauge.DeletePartialMatch(map[string]string{"namespace": namespace, "daemonset": name})
}
