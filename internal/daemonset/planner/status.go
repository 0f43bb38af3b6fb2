package planner

import (
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// Status is the set's status as OpenKruise computes it: per node that
// should run a pod, desired; with a pod, current, and the oldest pod
// decides ready, available and updated; nodes that should not run one but
// do are misscheduled. collisionCount and the conditions are the
// caller's.
func Status(s Snapshot) appsv1beta1.DaemonSetStatus {
	v := newView(s)
	st := appsv1beta1.DaemonSetStatus{ObservedGeneration: s.Set.Generation, UpdateRevision: s.UpdateHash}
	for _, sl := range v.slots {
		if !sl.place.ShouldRun {
			if len(sl.pods) > 0 {
				st.NumberMisscheduled++
			}
			continue
		}
		st.DesiredNumberScheduled++
		if len(sl.pods) == 0 {
			continue
		}
		st.CurrentNumberScheduled++
		pod := sl.pods[0]
		if podfacts.HasReadyCondition(pod) {
			st.NumberReady++
			if podfacts.IsReady(pod, v.minReady, s.Now) {
				st.NumberAvailable++
			}
		}
		if v.updated(pod) {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = max(st.DesiredNumberScheduled-st.NumberAvailable, 0)
	return st
}
