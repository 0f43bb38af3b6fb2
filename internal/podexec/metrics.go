package podexec

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics are the series a workload kind keeps, each labelled by the
// workload's namespace and name (Failures also by the action, Durations
// only by the state left, Counts also by what is counted). A nil field is
// not kept.
type Metrics struct {
	Created, Deleted, Failures, Stale, Expired *prometheus.CounterVec
	Durations                                  *prometheus.HistogramVec
	Counts                                     *prometheus.GaugeVec
	label                                      string
}

// MetricNames name a kind's series: lifeline_<Kind>_pods_created_total and
// the others, labelled <Kind> by the workload's name, helps naming Title.
type MetricNames struct {
	Kind, Title string
	// Counts is the gauge of the workload's pods (or nodes) by what is
	// counted, lifeline_<Kind>_<Counts>; CountsHelp says what it counts.
	Counts, CountsHelp string
}

// NewMetrics makes a kind's series and registers them with the manager's
// registry; each kind calls it once.
func NewMetrics(n MetricNames) Metrics {
	name := func(s string) string { return "lifeline_" + n.Kind + "_" + s }
	byWorkload := []string{"namespace", n.Kind}
	m := Metrics{
		Created: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("pods_created_total"),
			Help: "Pods created by the " + n.Title + " controller."}, byWorkload),
		Deleted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("pods_deleted_total"),
			Help: "Pods deleted by the " + n.Title + " controller."}, byWorkload),
		Failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("action_failures_total"),
			Help: "Pod actions (create, delete, patch) of the " + n.Title + " controller that failed."}, append(byWorkload, "action")),
		Stale: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("stale_pod_writes_total"),
			Help: "Pod writes refused because what a decision rested on changed since it was planned; the pod is planned again."}, byWorkload),
		Expired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("expectations_expired_total"),
			Help: "Writes the " + n.Title + " controller made that its cache did not show within the expectation timeout."}, byWorkload),
		Durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name("lifecycle_state_duration_seconds"),
			Help: "How long " + n.Title + " pods stayed in a lifecycle state before the controller moved them on; for the hooked states " +
				"(PreparingNormal, PreparingUpdate, Updated, PreparingDelete) that is how long the hook operator took.",
			Buckets: prometheus.ExponentialBuckets(0.5, 2, 16), // 0.5s to about 4.5h
		}, []string{"state"}),
		Counts: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name(n.Counts), Help: n.CountsHelp}, append(byWorkload, "kind")),
		label:  n.Kind,
	}
	metrics.Registry.MustRegister(m.Created, m.Deleted, m.Failures, m.Stale, m.Expired, m.Durations, m.Counts)
	return m
}

// SetCounts sets w's counts gauge, one series per thing counted.
func (m Metrics) SetCounts(w client.Object, counts map[string]int32) {
	if m.Counts == nil {
		return
	}
	for kind, v := range counts {
		m.Counts.WithLabelValues(w.GetNamespace(), w.GetName(), kind).Set(float64(v))
	}
}

// Forget drops the gauges of a workload that is gone.
func (m Metrics) Forget(namespace, name string) {
	if m.Counts != nil {
		m.Counts.DeletePartialMatch(prometheus.Labels{"namespace": namespace, m.label: name})
	}
}
