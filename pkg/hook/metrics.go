package hook

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	handlerDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "lifeline_hook_handler_duration_seconds",
		Help:    "How long hook handlers took, by operator, moment and result (ok or error).",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
	}, []string{"operator", "moment", "result"})
	handlerFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_hook_handler_failures_total",
		Help: "Hook handler calls that failed, by operator and moment; the hook stays held and the call is retried.",
	}, []string{"operator", "moment"})
	timeouts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_hook_timeouts_total",
		Help: "Pods flagged because their moment was not done within the operator's timeout, by operator and moment.",
	}, []string{"operator", "moment"})
)

func init() {
	metrics.Registry.MustRegister(handlerDuration, handlerFailures, timeouts)
}
