package bridge

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	registryRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_bridge_registry_requests_total",
		Help: "Requests of the bridge to its service registry, by operation (register, unregister, list, remove, restore) and result (ok, error).",
	}, []string{"op", "result"})
	entriesGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "lifeline_bridge_entries",
		Help: "Registry entries the bridge owns, as of its last reconcile.",
	}, []string{"bridge"})
	reconciled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lifeline_bridge_reconciled_total",
		Help: "Entries the reconcile removed (their pod is gone) or restored (a pod in service had none), by bridge and action.",
	}, []string{"bridge", "action"})
)

func init() {
	metrics.Registry.MustRegister(registryRequests, entriesGauge, reconciled)
}

// observe counts a registry request and passes its error on.
func observe(op string, err error) error {
	result := "ok"
	if err != nil {
		result = "error"
	}
	registryRequests.WithLabelValues(op, result).Inc()
	return err
}
