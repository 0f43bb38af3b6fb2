// Package disruption is where a workload controller asks whether it may
// take a pod out of service now. Every workload's planner consults a
// Check (through podlife's Pace) before it deletes a pod or updates it in
// place; PodUnavailableBudget is the Check that can say no (its tests are
// podlife's and the budget's: this package holds only the question). Checks are pure: they judge from a snapshot
// the controller read, so planning stays free of I/O.
package disruption

import corev1 "k8s.io/api/core/v1"

// Kind is how a pod would be disrupted.
type Kind string

const (
	// Delete deletes the pod (or holds it in PreparingDelete first).
	Delete Kind = "Delete"
	// InPlaceUpdate updates the pod in place (or holds it in
	// PreparingUpdate first), which takes it out of service meanwhile.
	InPlaceUpdate Kind = "InPlaceUpdate"
)

// Check says whether pod may be disrupted by kind now. When it may not,
// reason says why in words a user can act on (which budget, its numbers).
// Where no Check is given (nil), every disruption is allowed.
type Check interface {
	Allow(pod *corev1.Pod, kind Kind) (ok bool, reason string)
}
