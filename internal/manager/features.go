package manager

import (
	"k8s.io/apimachinery/pkg/runtime"

	statefulsetcontroller "github.com/lifeline-k8s/lifeline/internal/statefulset/controller"
)

// Features are Lifeline's features in the order the manager sets them up,
// which is also the order their pod admission handlers run in: the budget
// first, since a disruption it refuses must not be redirected (by the hook
// guard into PreparingDelete). Each has a file of its own; workloads.go is
// what every kind of workload shares.
func Features() []*Feature {
	// The expectation timeout and the hook-wait warning are flags every
	// workload shares; the Workloads feature binds them.
	shared := &WorkloadOptions{}
	sts := &statefulsetcontroller.Options{}
	return []*Feature{PodUnavailableBudget(), Workloads(shared), CloneSet(shared), StatefulSet(shared, sts), DaemonSet(shared), PersistentPodState(sts)}
}

// schemes adds the types of every version, as one AddToScheme.
func schemes(adds ...func(*runtime.Scheme) error) func(*runtime.Scheme) error {
	b := runtime.NewSchemeBuilder(adds...)
	return b.AddToScheme
}
