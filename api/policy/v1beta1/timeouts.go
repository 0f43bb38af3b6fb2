package v1beta1

import "time"

// How long an entry of a budget's status counts, as in OpenKruise: the
// status records an admitted disruption until its controller sees the
// outcome, or until the entry expires (the disruption never happened, or
// the controller missed it), whichever comes first.
const (
	// DisruptedPodTimeout is how long an entry of status.disruptedPods (a
	// pod admitted for deletion or eviction) counts while the pod is not
	// seen going.
	DisruptedPodTimeout = 20 * time.Second
	// UnavailablePodTimeout is how long an entry of status.unavailablePods
	// (a pod admitted for an update) counts before the pod's readiness
	// decides again.
	UnavailablePodTimeout = 10 * time.Second
)
