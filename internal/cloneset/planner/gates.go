package planner

import (
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

// UpdatesInPlace reports whether the CloneSet's strategy may update pods in
// place, in which case its new pods get the InPlaceUpdateReady readiness
// gate, which holds a pod NotReady while its containers change. OpenKruise
// gives every CloneSet pod the gate, costing each a status write before it
// can be Ready; a ReCreate CloneSet never needs it.
func UpdatesInPlace(cs *appsv1alpha1.CloneSet) bool {
	t := cs.Spec.UpdateStrategy.Type
	return t == appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType || t == appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
}

// MarksPodNotReady reports whether a hook of the CloneSet may make its pods
// NotReady, in which case its pods get the KruisePodReady readiness gate
// (see podlife.MarksPodNotReady).
func MarksPodNotReady(cs *appsv1alpha1.CloneSet) bool {
	return podlife.MarksPodNotReady(cs.Spec.Lifecycle)
}

// everyStep adds to a step's actions what every step does, whatever its
// phase: the readiness-gate conditions the CloneSet's pods lack (see
// podlife.Life.WithInitPodReady), releasing the pods its selector no
// longer matches, and letting go of the claims disablePVCReuse keeps from
// new pods.
func everyStep(s Snapshot, actions []podlife.Action) []podlife.Action {
	actions = life(s).WithInitPodReady(s.Pods, actions)
	for _, pod := range s.Unselected {
		actions = append(actions, podlife.ReleasePod{Pod: pod, OwnerUID: s.CloneSet.UID, Reason: "it no longer matches the selector"})
	}
	return append(actions, unreusedClaims(s)...)
}
